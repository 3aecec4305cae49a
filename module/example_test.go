package module_test

import (
	"fmt"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

// A graph of two operators with a symbolic row count, compiled into one
// module and run on three rows: the row count comes from X's shape.
func Example() {
	g, err := fusion.ParseJSON([]byte(`{"name": "scaled_add",
  "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 4]}, {"name": "B", "dtype": "float32", "shape": [4]}],
  "nodes": [{"op": "add", "inputs": ["X", "B"], "output": "S"},
            {"op": "relu", "inputs": ["S"], "output": "Y"}],
  "outputs": ["Y"]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := module.Compile(g, module.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close() // a program that runs for long closes what it no longer calls
	in := map[string]module.Tensor{
		"X": {Shape: []int64{3, 4}, Data: []float32{1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12}},
		"B": {Shape: []int64{4}, Data: []float32{1, 1, 1, 1}},
	}
	out, err := m.NewOutputs(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.Run(in, out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out["Y"].Shape, out["Y"].Data)
	// Wrong shapes are refused before anything runs.
	in["B"] = module.Tensor{Shape: []int64{5}, Data: make([]float32, 5)}
	fmt.Println(m.Run(in, out))
	// Output:
	// [3 4] [2 0 4 0 6 0 8 0 10 0 12 0]
	// module: input B: dimension 0 is 5; the graph's is 4
}
