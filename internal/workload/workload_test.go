package workload

import (
	"testing"

	"github.com/loom-go/loom/ast"
)

func TestArgs(t *testing.T) {
	c := Matmul(3, 4, 5)
	a, b := c.Args(9), c.Args(9)
	for _, name := range []string{"A", "B"} {
		x, y := a[name].([]float32), b[name].([]float32)
		for i := range x {
			if x[i] != y[i] || x[i] < -1 || x[i] >= 1 {
				t.Fatalf("%s[%d]: %v and %v; want equal values in [-1, 1) from equal seeds", name, i, x[i], y[i])
			}
		}
	}
	for _, v := range a["C"].([]float32) {
		if v != 0 {
			t.Fatal("the output is not zeroed")
		}
	}
	cl := Clone(a)
	cl["A"].([]float32)[0] = 42
	if a["A"].([]float32)[0] == 42 {
		t.Error("Clone shares data with its argument")
	}
}

func TestCorpusIsWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, c := range All() {
		if names[c.Name] {
			t.Errorf("duplicate workload %s", c.Name)
		}
		names[c.Name] = true
		if err := ast.Verify(c.Func); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		for _, s := range c.Func.Sizes {
			if _, ok := c.Sizes[s.Name]; !ok {
				t.Errorf("%s: no value for size %s", c.Name, s.Name)
			}
		}
	}
}
