package fusion_test

import (
	"fmt"
	"strings"

	"github.com/loom-go/loom/fusion"
)

// Compile a softmax graph from JSON: the composite decomposes into a max,
// an exp, a sum and a divide, which fuse into one kernel.
func ExampleCompile() {
	g, err := fusion.ParseJSON([]byte(`{
		"name": "softmax",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 128]}],
		"nodes": [{"op": "softmax", "inputs": ["X"], "output": "Y"}],
		"outputs": ["Y"]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range p.Kernels {
		fmt.Printf("%s (%s): %s\n", k.Name, k.Kind, strings.Join(k.Nodes, " "))
	}
	out, err := p.Interpret(map[string]int64{"S": 1}, map[string]any{"X": make([]float32, 128)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out["Y"].([]float32)[0] * 128)
	// Output:
	// softmax_0 (reduce): Y_max Y_sub Y_exp Y_sum Y
	// 1
}

// A shape mismatch names the node and both shapes.
func ExampleParseJSON_error() {
	_, err := fusion.ParseJSON([]byte(`{
		"name": "g",
		"inputs": [{"name": "A", "dtype": "float32", "shape": ["S", 768]},
		           {"name": "B", "dtype": "float32", "shape": ["S", 512]}],
		"nodes": [{"op": "add", "inputs": ["A", "B"], "output": "C"}],
		"outputs": ["C"]
	}`))
	fmt.Println(err)
	// Output:
	// fusion: nodes[0].inputs (C = add): shape mismatch: A [S, 768] and B [S, 512] (768 != 512)
}
