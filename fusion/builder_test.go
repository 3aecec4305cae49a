package fusion_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// Build a graph in Go: each node's shape is known as soon as it is added.
func ExampleBuilder() {
	b := fusion.NewBuilder("mlp")
	x, _ := b.Input("X", ast.Float32, fusion.Sym("S"), fusion.Const(4))
	w, _ := b.Constant("W", ast.Float32, []int64{4, 2}, []float64{1, 0, 0, 1, 1, 0, 0, 1})
	y, _ := b.Node("Y", "matmul", fusion.Attrs{}, x, w)
	z, _ := b.Node("Z", "relu", fusion.Attrs{}, y)
	fmt.Println(b.Shape(y))
	g, err := b.Graph(z)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := p.Interpret(map[string]int64{"S": 1}, map[string]any{"X": []float32{1, -2, 3, 4}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out["Z"])
	// Output:
	// [S, 2]
	// [4 2]
}

// TestBuilderMatchesJSON builds the same graph both ways and compares the
// JSON each writes.
func TestBuilderMatchesJSON(t *testing.T) {
	src := `{"name": "g",
	  "inputs": [{"name": "A", "dtype": "float32", "shape": ["S0", 8]}, {"name": "B", "dtype": "float32", "shape": ["S1", 8]}],
	  "constants": [{"name": "c", "dtype": "float32", "shape": [8], "data": [1,2,3,4,5,6,7,8]}],
	  "nodes": [{"op": "add", "inputs": ["A", "B"], "output": "C"},
	            {"op": "mul", "inputs": ["C", "c"], "output": "D"},
	            {"op": "reshape", "inputs": ["D"], "output": "E", "attrs": {"shape": ["2*S0", 4]}},
	            {"op": "reduce_sum", "inputs": ["E"], "output": "F", "attrs": {"axes": [1]}}],
	  "outputs": ["F"]}`
	want, err := fusion.ParseJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b := fusion.NewBuilder("g")
	a := must(b.Input("A", ast.Float32, fusion.Sym("S0"), fusion.Const(8)))
	bb := must(b.Input("B", ast.Float32, fusion.Sym("S1"), fusion.Const(8)))
	c := must(b.Constant("c", ast.Float32, []int64{8}, []float64{1, 2, 3, 4, 5, 6, 7, 8}))
	cc := must(b.Node("C", "add", fusion.Attrs{}, a, bb))
	if got := b.Shape(bb).String(); got != "[S0, 8]" {
		t.Errorf("B's shape after the add is %s, want [S0, 8]", got)
	}
	d := must(b.Node("D", "mul", fusion.Attrs{}, cc, c))
	two, _ := fusion.Const(2).Mul(fusion.Sym("S0"))
	e := must(b.Node("E", "reshape", fusion.Attrs{Shape: []fusion.JSONDim{{Dim: two}, {Dim: fusion.Const(4)}}}, d))
	f := must(b.Node("F", "reduce_sum", fusion.Attrs{Axes: []int{1}}, e))
	got, err := b.Graph(f)
	if err != nil {
		t.Fatal(err)
	}
	var wj, gj bytes.Buffer
	if err := fusion.WriteJSON(&wj, want); err != nil {
		t.Fatal(err)
	}
	if err := fusion.WriteJSON(&gj, got); err != nil {
		t.Fatal(err)
	}
	if wj.String() != gj.String() {
		t.Errorf("built graph:\n%s\nparsed graph:\n%s", gj.String(), wj.String())
	}
}

func must(t *fusion.Tensor, err error) *fusion.Tensor {
	if err != nil {
		panic(err)
	}
	return t
}

// TestBuilderErrors: each mistake is an error of the call that makes it.
func TestBuilderErrors(t *testing.T) {
	b := fusion.NewBuilder("g")
	x := must(b.Input("X", ast.Float32, fusion.Sym("S"), fusion.Const(3)))
	st, _ := fusion.Sym("S").Mul(fusion.Sym("T"))
	two := must(b.Constant("k3", ast.Float32, []int64{2}, []float64{1, 2}))
	other := fusion.NewBuilder("h")
	y := must(other.Input("Y", ast.Float32, fusion.Const(3)))
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"bad name", second(b.Input("1x", ast.Float32)), "not a valid tensor name"},
		{"twice", second(b.Input("X", ast.Float32)), "defined twice"},
		{"symbol as tensor", second(b.Input("S", ast.Float32)), "both a tensor and a symbol"},
		{"polynomial input dim", second(b.Input("Q", ast.Float32, st)), "an integer or one symbol"},
		{"negative dim", second(b.Input("N", ast.Float32, fusion.Const(-1))), "out of range"},
		{"constant size", second(b.Constant("k", ast.Float32, []int64{2}, []float64{1})), "needs 2 values, has 1"},
		{"constant value", second(b.Constant("k2", ast.Int32, []int64{1}, []float64{0.5})), "constant k2"},
		{"unknown op", second(b.Node("", "frobnicate", fusion.Attrs{}, x)), `unknown operator "frobnicate"`},
		{"foreign input", second(b.Node("", "relu", fusion.Attrs{}, y)), "not a tensor of this graph"},
		{"nil input", second(b.Node("", "relu", fusion.Attrs{}, nil)), "not a tensor of this graph"},
		{"arity", second(b.Node("", "add", fusion.Attrs{}, x)), "add takes 2 inputs, got 1"},
		{"attribute", second(b.Node("", "relu", fusion.Attrs{Axes: []int{0}}, x)), `relu takes no attribute "axes"`},
		{"shape mismatch", second(b.Node("", "add", fusion.Attrs{}, x, two)), "shape mismatch: X [S, 3] and k3 [2]"},
		{"refused equalities undone", second(b.Node("", "matmul", fusion.Attrs{}, x, x, x)), "matmul takes 2 inputs"},
		{"unknown symbol", second(b.Node("", "reshape", fusion.Attrs{Shape: []fusion.JSONDim{{Dim: fusion.Sym("T")}}}, x)), "symbol T is not defined"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) || !errors.Is(c.err, fusion.ErrGraph) {
			t.Errorf("%s: got %v, want a graph error containing %q", c.name, c.err, c.want)
		}
	}
	if _, err := b.Graph(); err == nil {
		t.Error("a graph without outputs was accepted")
	}
	if _, err := b.Graph(x); err == nil || !strings.Contains(err.Error(), "not computed by a node") {
		t.Errorf("an input as output: %v", err)
	}
	r := must(b.Node("", "relu", fusion.Attrs{}, x))
	if r.Name != "t1" || b.Shape(r).String() != "[S, 3]" {
		t.Errorf("fresh node %s %s", r.Name, b.Shape(r))
	}
	if _, err := b.Graph(r, r); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("an output twice: %v", err)
	}
}

func second(_ *fusion.Tensor, err error) error { return err }

// TestIota: each element's index along an axis, at a size given at run
// time, in the dtype asked.
func TestIota(t *testing.T) {
	b := fusion.NewBuilder("g")
	x := must(b.Input("X", ast.Float32, fusion.Sym("S"), fusion.Const(3)))
	one := 1
	cols := must(b.Node("C", "iota", fusion.Attrs{Axis: &one, DType: "float32"}, x))
	rows := must(b.Node("R", "iota", fusion.Attrs{}, x))
	y := must(b.Node("Y", "add", fusion.Attrs{}, cols, x))
	g, err := b.Graph(y, rows)
	if err != nil {
		t.Fatal(err)
	}
	if rows.DType != ast.Int64 {
		t.Errorf("iota's default dtype is %s, want int64", rows.DType)
	}
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Interpret(map[string]int64{"S": 2}, map[string]any{"X": []float32{10, 10, 10, 20, 20, 20}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(out["Y"], out["R"]); got != "[10 11 12 20 21 22] [0 0 0 1 1 1]" {
		t.Errorf("got %s", got)
	}
	b2 := fusion.NewBuilder("h")
	x2 := must(b2.Input("X", ast.Float32, fusion.Const(3)))
	two := 2
	for _, bad := range []fusion.Attrs{{DType: "bool"}, {Axis: &two}} {
		if _, err := b2.Node("", "iota", bad, x2); err == nil {
			t.Errorf("iota with %v was accepted", bad)
		}
	}
}
