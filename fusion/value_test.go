package fusion

import (
	"math"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

// TestValueError: the edges of what each type holds.
func TestValueError(t *testing.T) {
	for _, c := range []struct {
		t  ast.DType
		v  float64
		ok bool
	}{
		{ast.Float16, 65504, true},
		{ast.Float16, 65519, true}, // rounds to 65504
		{ast.Float16, 65520, false},
		{ast.Float16, -1e300, false},
		{ast.BFloat16, 3.3e38, true},
		{ast.BFloat16, 3.4e38, false},
		{ast.Float32, math.MaxFloat32, true},
		{ast.Float32, 1e39, false},
		{ast.Float32, math.Inf(-1), true}, // an infinity given as such
		{ast.Float32, math.NaN(), true},
		{ast.Float64, math.MaxFloat64, true},
		{ast.Int32, math.MaxInt32, true},
		{ast.Int32, math.MaxInt32 + 1, false},
		{ast.Int32, 0.5, false},
		{ast.Int32, math.Inf(1), false},
		{ast.Int64, 1 << 53, true},
		{ast.Int64, 1<<53 + 2, false},
		{ast.Bool, 1, true},
		{ast.Bool, 2, false},
	} {
		if msg := valueError(c.t, c.v); (msg == "") != c.ok {
			t.Errorf("valueError(%s, %v) = %q, want ok %v", c.t, c.v, msg, c.ok)
		}
	}
}

// TestInferChecksConstants: a graph built in Go, whose constants no
// reader checked, is refused by Infer (and so by Compile) when a constant
// holds a value its type does not.
func TestInferChecksConstants(t *testing.T) {
	x := &Tensor{Name: "X", DType: ast.Float32, Shape: Shape{Const(2)}}
	c := &Tensor{Name: "C", DType: ast.Float32, Shape: Shape{Const(2)}, Data: []float64{1, 1e300}}
	n := &Node{Op: "add", Inputs: []*Tensor{x, c}}
	n.Output = &Tensor{Name: "Y", Producer: n}
	g := &Graph{Name: "g", Inputs: []*Tensor{x}, Constants: []*Tensor{c}, Nodes: []*Node{n}, Outputs: []*Tensor{n.Output}}
	want := "fusion: C: constant C: data[1]: 1e+300 is out of the float32 range (it would round to infinity)"
	if err := Infer(g); err == nil || err.Error() != want {
		t.Errorf("Infer: %v\nwant %s", err, want)
	}
	if _, err := Compile(g, Options{}); err == nil || err.Error() != want {
		t.Errorf("Compile: %v\nwant %s", err, want)
	}
	c.Data[1] = math.Inf(1) // written as such, infinity is a value
	if err := Infer(g); err != nil {
		t.Errorf("Infer with +inf: %v", err)
	}
}

// TestGatherInt64Indices: an int64 index stays int64 in the kernel, so
// that 2^32 is out of range (the interpreter's error) and is not read as
// index 0.
func TestGatherInt64Indices(t *testing.T) {
	g, err := ParseJSON([]byte(`{"name": "g", "inputs": [{"name": "E", "dtype": "float32", "shape": [3, 2]},
		{"name": "I", "dtype": "int64", "shape": [2]}],
		"nodes": [{"op": "gather", "inputs": ["E", "I"], "output": "Y"}], "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(g, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := []float32{1, 2, 3, 4, 5, 6}
	out, err := p.Interpret(nil, map[string]any{"E": e, "I": []int64{-1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := out["Y"].([]float32); got[0] != 5 || got[3] != 4 {
		t.Errorf("Y = %v, want rows 2 and 1 of E", got)
	}
	_, err = p.Interpret(nil, map[string]any{"E": e, "I": []int64{1 << 32, 0}})
	if err == nil || !strings.Contains(err.Error(), "4294967296") {
		t.Errorf("index 2^32: %v, want an error naming it", err)
	}
}
