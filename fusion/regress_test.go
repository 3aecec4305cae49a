package fusion

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestBadGraphsRefused: graphs found by review that must be refused with
// an error, quickly.
func TestBadGraphsRefused(t *testing.T) {
	var inputs, terms []string
	for k := 0; k < 40; k++ {
		inputs = append(inputs, fmt.Sprintf(`{"name": "X%d", "dtype": "float32", "shape": ["a%d"]}`, k, k))
		terms = append(terms, fmt.Sprintf("a%d", k))
	}
	p := `"` + strings.Join(terms, "+") + `"`
	huge := `{"name": "g", "inputs": [` + strings.Join(inputs, ",") + `],
		"nodes": [{"op": "reshape", "inputs": ["X0"], "output": "Y", "attrs": {"shape": [` + strings.Repeat(p+",", 5) + p + `]}}], "outputs": ["Y"]}`
	for _, c := range []struct{ name, src, want string }{
		{"exponential dimension", huge, "more than 64 terms"},
		{"negative size", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["S"]}, {"name": "W", "dtype": "float32", "shape": [3]}, {"name": "B", "dtype": "float32", "shape": [0]}],
			"nodes": [{"op": "concat", "inputs": ["X", "W"], "output": "C"}, {"op": "add", "inputs": ["C", "B"], "output": "Y"}], "outputs": ["Y"]}`, "no solution with non-negative sizes"},
		{"empty axes", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [3]}],
			"nodes": [{"op": "reduce_mean", "inputs": ["X"], "output": "Y", "attrs": {"axes": []}}], "outputs": ["Y"]}`, "axes is empty"},
		{"scalar reduce", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": []}],
			"nodes": [{"op": "reduce_sum", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`, "no axis to reduce"},
		{"scalar softmax", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": []}],
			"nodes": [{"op": "softmax", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`, "rank 1 or more"},
		{"unknown layout", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [1, 4, 5, 5]}, {"name": "W", "dtype": "float32", "shape": [4, 4, 3, 3]}],
			"nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "Y", "attrs": {"layout": "CHWN"}}], "outputs": ["Y"]}`, `layout is "NCHW" or "NHWC", got "CHWN"`},
		{"layout of another rank", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [1, 4, 5]}, {"name": "W", "dtype": "float32", "shape": [4, 4, 3]}],
			"nodes": [{"op": "conv1d", "inputs": ["X", "W"], "output": "Y", "attrs": {"layout": "NHWC"}}], "outputs": ["Y"]}`, `layout is "NCW" or "NWC"`},
		{"NHWC weights", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [1, 5, 5, 4]}, {"name": "W", "dtype": "float32", "shape": [4, 4, 3, 3]}],
			"nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "Y", "attrs": {"layout": "NHWC"}}], "outputs": ["Y"]}`, "conv2d (NHWC) with groups = 1 needs input channels = weight channels * groups"},
		{"panels of a matrix", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [2, 4]}, {"name": "W", "dtype": "float32", "shape": [4, 16]}],
			"nodes": [{"op": "matmul", "inputs": ["X", "W"], "output": "Y", "attrs": {"panel": 16}}], "outputs": ["Y"]}`, "matmul with panel 16 needs its second operand as [..., N/16, K, 16], got [4, 16]"},
		{"panels of another width", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [2, 4]}, {"name": "W", "dtype": "float32", "shape": [2, 4, 8]}],
			"nodes": [{"op": "matmul", "inputs": ["X", "W"], "output": "Y", "attrs": {"panel": 16}}], "outputs": ["Y"]}`, "got [2, 4, 8]"},
		{"negative panel", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [2, 4]}, {"name": "W", "dtype": "float32", "shape": [2, 4, 8]}],
			"nodes": [{"op": "matmul", "inputs": ["X", "W"], "output": "Y", "attrs": {"panel": -8}}], "outputs": ["Y"]}`, "panel -8: want a width from 1 to 65536"},
		{"panel on a convolution with its channels first", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [1, 4, 5, 5]}, {"name": "W", "dtype": "float32", "shape": [4, 4, 3, 3]}],
			"nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "Y", "attrs": {"panel": 16}}], "outputs": ["Y"]}`, `a conv2d in panels needs its channels last`},
		{"panel on a pooling", `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [1, 4, 5, 5]}],
			"nodes": [{"op": "max_pool2d", "inputs": ["X"], "output": "Y", "attrs": {"kernel_shape": [2, 2], "panel": 16}}], "outputs": ["Y"]}`, `max_pool2d takes no attribute "panel"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseJSON([]byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestEdgeGraphsWork: valid edge cases that must compile and run.
func TestEdgeGraphsWork(t *testing.T) {
	// An all-empty concat.
	g, err := ParseJSON([]byte(`{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [0]}],
		"nodes": [{"op": "concat", "inputs": ["X", "X"], "output": "Y"}], "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Interpret(nil, map[string]any{"X": []float32{}}); err != nil {
		t.Fatal(err)
	}
	// A slice with a huge step takes one element.
	g, err = ParseJSON([]byte(`{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [5]}],
		"nodes": [{"op": "slice", "inputs": ["X"], "output": "Y", "attrs": {"starts": [1], "ends": [5], "steps": [9223372036854775807]}}], "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := g.Tensor("Y").Shape.String(); s != "[1]" {
		t.Errorf("slice shape %s, want [1]", s)
	}
	// An int64 product beyond 2^53 is not folded into an inexact float64.
	g, err = ParseJSON([]byte(`{"name": "g", "inputs": [{"name": "X", "dtype": "int64", "shape": [1]}],
		"constants": [{"name": "a", "dtype": "int64", "shape": [], "data": [1073741825]}],
		"nodes": [{"op": "mul", "inputs": ["a", "a"], "output": "c"}, {"op": "add", "inputs": ["X", "c"], "output": "Y"}], "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err = Compile(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Interpret(nil, map[string]any{"X": []int64{0}})
	if err != nil {
		t.Fatal(err)
	}
	if got := out["Y"].([]int64)[0]; got != 1073741825*1073741825 {
		t.Errorf("Y = %d, want %d", got, int64(1073741825*1073741825))
	}
	// Negative sizes are refused by Memory as by Interpret.
	g, err = ParseJSON([]byte(`{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", "S"]}],
		"nodes": [{"op": "matmul", "inputs": ["X", "X"], "output": "M"}, {"op": "matmul", "inputs": ["M", "X"], "output": "Y"}], "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = Compile(g, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Memory(map[string]int64{"S": -3}); err == nil {
		t.Error("Memory accepted a negative size")
	}
}

// TestCompileConcurrently: Compile works on a copy (run with -race).
func TestCompileConcurrently(t *testing.T) {
	g, err := ParseJSON([]byte(`{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["A", "B"]}],
		"nodes": [{"op": "reshape", "inputs": ["X"], "output": "Y", "attrs": {"shape": ["A*B"]}}], "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	before := g.String()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Compile(g, Options{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if g.String() != before {
		t.Error("Compile changed its input graph")
	}
}
