package workload

import (
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
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
		if v == v {
			t.Fatal("the output is not poisoned (NaN): an element left unwritten would not show")
		}
	}
	cl := check.Clone(a)
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

// TestSymbolicDimensions: the matrix multiplies, softmax and RMSNorm with
// dimensions made symbolic compute, at sizes other than those they were
// built at (1, and not multiples of anything), what their references and
// the constant-size functions do; a dimension the workload lacks is an
// error naming those it has.
func TestSymbolicDimensions(t *testing.T) {
	type build func(a, b, c int, sym ...string) (Case, error)
	mm := func(f func(m, n, k int, sym ...string) (Case, error)) build { return f }
	rows := func(f func(r, d int, sym ...string) (Case, error)) build {
		return func(a, b, _ int, sym ...string) (Case, error) { return f(a, b, sym...) }
	}
	for _, c := range []struct {
		name string
		new  build
		sym  [][]string
		dims []string
	}{
		{"matmul", mm(NewMatmul), [][]string{{"M"}, {"N"}, {"K"}, {"M", "N", "K"}}, []string{"M", "N", "K"}},
		{"matmul_bias_relu", mm(NewMatmulBiasReLU), [][]string{{"M"}, {"K"}, {"M", "N", "K"}}, []string{"M", "N", "K"}},
		{"softmax", rows(NewSoftmax), [][]string{{"R"}, {"D"}}, []string{"R", "D"}}, // not both: see below
		{"rmsnorm", rows(NewRMSNorm), [][]string{{"R"}, {"D"}, {"R", "D"}}, []string{"R", "D"}},
	} {
		for _, sym := range c.sym {
			sc, err := c.new(8, 16, 12, sym...)
			if err != nil {
				t.Fatalf("%s %v: %v", c.name, sym, err)
			}
			if len(sc.Func.Sizes) != len(sym) || len(sc.Sizes) != len(sym) {
				t.Fatalf("%s %v: sizes %v, values %v", c.name, sym, sc.Func.Sizes, sc.Sizes)
			}
			for _, v := range []int{0, 1, 7, 13} {
				vals := map[string]int{"M": 8, "N": 16, "K": 12, "R": 8, "D": 16}
				sizes := map[string]int64{}
				for _, s := range sym {
					vals[s] = v
					sizes[s] = int64(v)
				}
				if v == 0 && (slices.Contains(sym, "K") || slices.Contains(sym, "D")) {
					// A reduction over nothing: its init runs at the
					// first reduction step, which never comes, and the
					// interpreter leaves the result undefined (NaN).
					continue
				}
				at := sc
				at.Sizes = sizes
				want := at.Args(3)
				if err := ast.Interpret(at.Func, sizes, want); err != nil {
					t.Fatalf("%s %v at %v: %v", c.name, sym, sizes, err)
				}
				got := at.Args(3)
				at.Ref(got)
				for name, w := range want {
					if e := check.MaxRelErr(got[name], w); e != 0 {
						t.Errorf("%s %v at %v: the reference's %s differs from the interpreter's by %g", c.name, sym, sizes, name, e)
					}
				}
				var plain Case
				if v == 0 {
					continue // no constant-size function of an empty dimension
				}
				if len(c.dims) == 3 {
					plain, err = c.new(vals["M"], vals["N"], vals["K"])
				} else {
					plain, err = c.new(vals["R"], vals["D"], 0)
				}
				if err != nil {
					t.Fatal(err)
				}
				fixed := plain.Args(3)
				if err := ast.Interpret(plain.Func, nil, fixed); err != nil {
					t.Fatal(err)
				}
				for name, w := range want {
					if e := check.MaxRelErr(fixed[name], w); e != 0 {
						t.Errorf("%s %v at %v: %s differs from the constant-size function's by %g", c.name, sym, sizes, name, e)
					}
				}
			}
		}
		if len(c.dims) == 3 {
			// The order symbolic names come in does not change the
			// function (records are keyed by its hash).
			mk, _ := c.new(8, 16, 12, "M", "K")
			km, _ := c.new(8, 16, 12, "K", "M")
			if ast.Hash(mk.Func) != ast.Hash(km.Func) {
				t.Errorf("%s: symbolic M, K and K, M build different functions", c.name)
			}
		}
		_, err := c.new(8, 16, 12, "Q")
		if err == nil || !strings.Contains(err.Error(), "no dimension Q") || !strings.Contains(err.Error(), strings.Join(c.dims, ", ")) {
			t.Errorf("%s with a symbolic Q: %v", c.name, err)
		}
	}
	if _, err := NewSoftmax(4, 8, "R", "D"); err == nil || !strings.Contains(err.Error(), "R and D cannot both be symbolic") {
		t.Errorf("softmax with R and D symbolic: %v", err)
	}
}
