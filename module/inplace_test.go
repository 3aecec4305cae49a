package module_test

import (
	"testing"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/module"
)

// TestInPlaceCompiled: a residual block's end whose add updates the
// residual in place (fusion's markInPlace), compiled for two threads and
// run at row counts 0, 1, 7 and 100, gives the unfused plan's outputs;
// the memory plan places the residual and not the result that shares it.
func TestInPlaceCompiled(t *testing.T) {
	g, err := fusion.ParseJSON([]byte(`{"name": "res", "inputs": [
    {"name": "A", "dtype": "float32", "shape": ["N", 24]}, {"name": "B", "dtype": "float32", "shape": [24, 40]},
    {"name": "A2", "dtype": "float32", "shape": ["N", 24]}, {"name": "B2", "dtype": "float32", "shape": [24, 40]},
    {"name": "Bias", "dtype": "float32", "shape": [40]}, {"name": "B3", "dtype": "float32", "shape": [40, 5]}],
  "nodes": [
    {"op": "matmul", "inputs": ["A2", "B2"], "output": "R"},
    {"op": "matmul", "inputs": ["A", "B"], "output": "T1"},
    {"op": "add", "inputs": ["T1", "Bias"], "output": "T2"},
    {"op": "add", "inputs": ["T2", "R"], "output": "T3"},
    {"op": "relu", "inputs": ["T3"], "output": "Y"},
    {"op": "matmul", "inputs": ["Y", "B3"], "output": "Z"}],
  "outputs": ["Z"]}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := module.Compile(g, module.Options{Cache: goldenCache(t), Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	inPlace := false
	for _, b := range m.Plan().Buffers {
		inPlace = inPlace || b.Tensor.Name == "Y" && b.AliasOf != nil && b.AliasOf.Name == "R"
	}
	if !inPlace {
		t.Fatalf("Y does not update R in place:\n%s", m.Plan())
	}
	apart, err := fusion.Compile(g, fusion.Options{NoFuse: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int64{0, 1, 7, 100} {
		sizes := map[string]int64{"N": n}
		ins, raw := inputsAt(t, g, sizes, uint64(i))
		want, err := apart.Interpret(sizes, raw)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // again: the first call's update must not leak into the second
			outs, err := poisonedOutputs(m, ins)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Run(ins, outs); err != nil {
				t.Fatalf("N=%d: %v", n, err)
			}
			if e := check.MaxRelErr(outs["Z"].Data, want["Z"]); !(e <= 1e-5) {
				t.Errorf("N=%d: Z differs from the unfused plan's by %g", n, e)
			}
		}
	}
}
