package fusion_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
)

// TestPackWeights: the constant weight matrices of matrix products large
// enough (K x N at least 65536, N a multiple of 16) are stored in panels
// of 16 columns, one shared by three products (one of them batched)
// packed once; a batched
// weight, a small one, one of 520 columns, a weight that is an input and
// Options.PlainWeights are left alone. The plan computes what the graph
// does, at 0, 1 and 3 rows, and a panel given in the graph's JSON
// reads as the pass writes it.
func TestPackWeights(t *testing.T) {
	g := parseGraph(t, `{"name": "mlp",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["M", 256]}, {"name": "V", "dtype": "float32", "shape": [256, 256]},
			{"name": "Z", "dtype": "float32", "shape": [2, "M", 256]}],
		"constants": [
			{"name": "W", "dtype": "float32", "shape": [256, 256], "data": `+ramp(256*256)+`},
			{"name": "Bias", "dtype": "float32", "shape": [256], "data": `+ramp(256)+`},
			{"name": "Odd", "dtype": "float32", "shape": [256, 260], "data": `+ramp(256*260)+`},
			{"name": "Small", "dtype": "float32", "shape": [256, 16], "data": `+ramp(256*16)+`}],
		"nodes": [
			{"op": "matmul", "inputs": ["X", "W"], "output": "a"},
			{"op": "add", "inputs": ["a", "Bias"], "output": "b"},
			{"op": "gelu", "inputs": ["b"], "output": "c"},
			{"op": "matmul", "inputs": ["c", "W"], "output": "d"},
			{"op": "matmul", "inputs": ["d", "Odd"], "output": "e"},
			{"op": "matmul", "inputs": ["d", "Small"], "output": "f"},
			{"op": "matmul", "inputs": ["d", "V"], "output": "h"},
			{"op": "matmul", "inputs": ["Z", "W"], "output": "z"}],
		"outputs": ["e", "f", "h", "z"]}`)
	packed, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range packed.Graph.Nodes {
		if x.Op == "matmul" && x.Attrs.Panel == 16 {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d products read packed weights, want the three of W (one batched):\n%s", n, packed)
	}
	panels := 0
	for _, c := range packed.Graph.Constants {
		if strings.HasSuffix(c.Name, "_panels") {
			panels++
			if got := c.Shape.String(); got != "[16, 256, 16]" {
				t.Errorf("%s has shape %s, want [16, 256, 16]", c.Name, got)
			}
		}
	}
	if panels != 1 {
		t.Errorf("%d packed constants, want W's alone", panels)
	}
	plain, err := fusion.Compile(g, fusion.Options{PlainWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "_panels") {
		t.Errorf("PlainWeights packed a weight:\n%s", plain)
	}
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, PlainWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []int64{0, 1, 3} {
		compare(t, g, packed, ref, map[string]int64{"M": m})
	}
	// The same product written with its weights in panels by hand.
	hand := parseGraph(t, `{"name": "hand",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["M", 3]}, {"name": "P", "dtype": "float32", "shape": [2, 3, 4]}],
		"nodes": [{"op": "matmul", "inputs": ["X", "P"], "output": "Y", "attrs": {"panel": 4}}],
		"outputs": ["Y"]}`)
	if got := hand.Outputs[0].Shape.String(); got != "[M, 8]" {
		t.Errorf("a product with panels of 4 gives %s, want [M, 8]", got)
	}
	p, err := fusion.Compile(hand, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Interpret(map[string]int64{"M": 1}, map[string]any{"X": []float32{1, 2, 3}, "P": []float32{
		1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, // panel 0: columns 0-3, rows k = 0, 1, 2
		2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 2, 3, 0, 2, 0, 0, 15}
	if got := out["Y"].([]float32); !slices.Equal(got, want) {
		t.Errorf("a product with panels of 4: got %v, want %v", got, want)
	}
}
