package fusion

import (
	"math"

	"github.com/loom-go/loom/ast"

	"reflect"
	"slices"
	"strings"
	"testing"
)

// parse reads a small graph for a pass test.
func parse(t *testing.T, src string) *Graph {
	t.Helper()
	g, err := ParseJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// runPass runs one pass, then Infer, and returns the printed graph.
func runPass(t *testing.T, g *Graph, p func(*Graph) (bool, error)) (string, bool) {
	t.Helper()
	changed, err := p(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := Infer(g); err != nil {
		t.Fatalf("after the pass: %v\n%s", err, g)
	}
	return g.String(), changed
}

func ops_(g *Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, n.Output.Name+"="+n.Op)
	}
	return out
}

func TestMustPrecede(t *testing.T) {
	pos := map[string]int{}
	for i, p := range pipeline {
		pos[p.name] = i
	}
	for _, pair := range mustPrecede {
		a, okA := pos[pair[0]]
		b, okB := pos[pair[1]]
		if !okA || !okB || a >= b {
			t.Errorf("pass %s must run before %s", pair[0], pair[1])
		}
	}
}

func TestDecompose(t *testing.T) {
	g := parse(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [2, 8]}],
		"nodes": [{"op": "softmax", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`)
	_, changed := runPass(t, g, decompose)
	want := []string{"Y_max=reduce_max", "Y_sub=sub", "Y_exp=exp", "Y_sum=reduce_sum", "Y=div"}
	if !changed || !slices.Equal(ops_(g), want) {
		t.Errorf("decompose: got %v, want %v", ops_(g), want)
	}
	for _, n := range g.Nodes {
		if ops[n.Op].kind == Composite {
			t.Errorf("composite %s left", n.Op)
		}
	}
}

// TestUnstride: a strided convolution with a 1x1 window becomes a slice
// of its pixels and a convolution of stride 1; one with a wider window,
// padding, or a stride of 1 stays.
func TestUnstride(t *testing.T) {
	for _, c := range []struct {
		x, w, attrs string
		want        []string
	}{
		{"[1, 8, 14, 14]", "[4, 8, 1, 1]", `"strides": [2, 2]`, []string{"Y_pixels=slice", "Y=conv2d"}},
		{"[1, 8, 14, 14]", "[4, 8, 3, 3]", `"strides": [2, 2]`, []string{"Y=conv2d"}},
		{"[1, 8, 14, 14]", "[4, 8, 1, 1]", `"strides": [2, 2], "pads": [1, 1, 1, 1]`, []string{"Y=conv2d"}},
		{"[1, 8, 14, 14]", "[4, 8, 1, 1]", `"strides": [1, 1]`, []string{"Y=conv2d"}},
	} {
		g := parse(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": `+c.x+`},
			{"name": "W", "dtype": "float32", "shape": `+c.w+`}],
			"nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "Y", "attrs": {`+c.attrs+`}}], "outputs": ["Y"]}`)
		before := g.Tensor("Y").Shape.String()
		runPass(t, g, unstride)
		if !slices.Equal(ops_(g), c.want) {
			t.Errorf("%s * %s {%s}: got %v, want %v", c.x, c.w, c.attrs, ops_(g), c.want)
		}
		if after := g.Tensor("Y").Shape.String(); after != before {
			t.Errorf("%s * %s {%s}: the output's shape went from %s to %s", c.x, c.w, c.attrs, before, after)
		}
	}
}

func TestFold(t *testing.T) {
	g := parse(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "int32", "shape": [3]}],
		"constants": [{"name": "a", "dtype": "int32", "shape": [3], "data": [1, 2, 3]},
		              {"name": "b", "dtype": "int32", "shape": [], "data": [10]}],
		"nodes": [{"op": "mul", "inputs": ["a", "b"], "output": "ab"},
		          {"op": "add", "inputs": ["X", "ab"], "output": "Y"}], "outputs": ["Y"]}`)
	_, changed := runPass(t, g, fold)
	ab := g.Tensor("ab")
	if !changed || ab == nil || !slices.Equal(ab.Data, []float64{10, 20, 30}) || ab.Producer != nil {
		t.Fatalf("fold: ab = %+v\n%s", ab, g)
	}
	if !slices.Equal(ops_(g), []string{"Y=add"}) {
		t.Errorf("fold left %v", ops_(g))
	}
}

func TestSimplifyRules(t *testing.T) {
	// Each rule fires on its own graph; the result is the expected op list.
	cases := []struct {
		rule  string
		nodes string
		want  []string
	}{
		{"mul-one", `{"op": "mul", "inputs": ["X", "one"], "output": "a"}, {"op": "exp", "inputs": ["a"], "output": "Y"}`, []string{"Y=exp"}},
		{"sub-zero", `{"op": "sub", "inputs": ["X", "zero"], "output": "a"}, {"op": "exp", "inputs": ["a"], "output": "Y"}`, []string{"Y=exp"}},
		{"div-one", `{"op": "div", "inputs": ["X", "one"], "output": "a"}, {"op": "exp", "inputs": ["a"], "output": "Y"}`, []string{"Y=exp"}},
		{"add-zero is not exact on floats", `{"op": "add", "inputs": ["X", "zero"], "output": "a"}, {"op": "exp", "inputs": ["a"], "output": "Y"}`, []string{"a=add", "Y=exp"}},
		{"add-minus-zero", `{"op": "add", "inputs": ["X", "mzero"], "output": "a"}, {"op": "exp", "inputs": ["a"], "output": "Y"}`, []string{"Y=exp"}},
		{"neg-neg", `{"op": "neg", "inputs": ["X"], "output": "a"}, {"op": "neg", "inputs": ["a"], "output": "b"}, {"op": "exp", "inputs": ["b"], "output": "Y"}`, []string{"Y=exp"}},
		{"reshape-reshape", `{"op": "reshape", "inputs": ["X"], "output": "a", "attrs": {"shape": [2, 2, 6]}}, {"op": "reshape", "inputs": ["a"], "output": "Y", "attrs": {"shape": [24]}}`, []string{"Y=reshape"}},
		{"reshape-same", `{"op": "reshape", "inputs": ["X"], "output": "a", "attrs": {"shape": [4, 6]}}, {"op": "exp", "inputs": ["a"], "output": "Y"}`, []string{"Y=exp"}},
		{"transpose-transpose", `{"op": "transpose", "inputs": ["X"], "output": "a"}, {"op": "transpose", "inputs": ["a"], "output": "b"}, {"op": "exp", "inputs": ["b"], "output": "Y"}`, []string{"Y=exp"}},
		{"cast-same", `{"op": "cast", "inputs": ["X"], "output": "a", "attrs": {"dtype": "float32"}}, {"op": "exp", "inputs": ["a"], "output": "Y"}`, []string{"Y=exp"}},
		{"output keeps its name", `{"op": "mul", "inputs": ["X", "one"], "output": "Y"}`, []string{"Y=identity"}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			g := parse(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [4, 6]}],
				"constants": [{"name": "one", "dtype": "float32", "shape": [], "data": [1]},
				              {"name": "zero", "dtype": "float32", "shape": [], "data": [0]},
				              {"name": "mzero", "dtype": "float32", "shape": [1], "data": [-0.0]}],
				"nodes": [`+c.nodes+`], "outputs": ["Y"]}`)
			if _, err := simplify(g); err != nil {
				t.Fatal(err)
			}
			if _, err := dce(g); err != nil {
				t.Fatal(err)
			}
			if err := Infer(g); err != nil {
				t.Fatal(err)
			}
			if got := ops_(g); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v\n%s", got, c.want, g)
			}
		})
	}
}

func TestMulZeroInt(t *testing.T) {
	g := parse(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "int32", "shape": [4]}],
		"constants": [{"name": "zero", "dtype": "int32", "shape": [], "data": [0]}],
		"nodes": [{"op": "mul", "inputs": ["X", "zero"], "output": "Y"}], "outputs": ["Y"]}`)
	if _, err := simplify(g); err != nil {
		t.Fatal(err)
	}
	if got := ops_(g); !slices.Equal(got, []string{"Y=broadcast_to"}) || g.Nodes[0].Inputs[0].Name != "zero" {
		t.Errorf("got %v\n%s", got, g)
	}
	// Not on floats: NaN * 0 is NaN.
	g = parse(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [4]}],
		"constants": [{"name": "zero", "dtype": "float32", "shape": [], "data": [0]}],
		"nodes": [{"op": "mul", "inputs": ["X", "zero"], "output": "Y"}], "outputs": ["Y"]}`)
	if _, err := simplify(g); err != nil {
		t.Fatal(err)
	}
	if got := ops_(g); !slices.Equal(got, []string{"Y=mul"}) {
		t.Errorf("float x*0 simplified: %v", got)
	}
}

func TestCSEAndDCE(t *testing.T) {
	g := parse(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [4]}],
		"constants": [{"name": "c1", "dtype": "float32", "shape": [2], "data": [1, 2]},
		              {"name": "c2", "dtype": "float32", "shape": [2], "data": [1, 2]}],
		"nodes": [{"op": "exp", "inputs": ["X"], "output": "a"},
		          {"op": "exp", "inputs": ["X"], "output": "b"},
		          {"op": "add", "inputs": ["a", "b"], "output": "Y"},
		          {"op": "concat", "inputs": ["c1", "c2"], "output": "Z"},
		          {"op": "log", "inputs": ["X"], "output": "dead"}], "outputs": ["Y", "Z"]}`)
	if _, changed := runPass(t, g, cse); !changed {
		t.Fatal("cse changed nothing")
	}
	y, z := g.Tensor("Y").Producer, g.Tensor("Z").Producer
	if y.Inputs[0] != y.Inputs[1] || z.Inputs[0] != z.Inputs[1] {
		t.Errorf("cse did not merge duplicates:\n%s", g)
	}
	if _, changed := runPass(t, g, dce); !changed {
		t.Fatal("dce changed nothing")
	}
	if got := ops_(g); !slices.Equal(got, []string{"a=exp", "Y=add", "Z=concat"}) || len(g.Constants) != 1 {
		t.Errorf("dce left %v and %d constants", got, len(g.Constants))
	}
	if len(g.Inputs) != 1 {
		t.Error("dce removed a graph input")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	src := `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["S1", "S2", 8]}],
		"nodes": [{"op": "reshape", "inputs": ["X"], "output": "R", "attrs": {"shape": ["S1*S2", 8]}},
		          {"op": "reduce_max", "inputs": ["R"], "output": "Y", "attrs": {"axes": [-1], "keepdims": true}},
		          {"op": "slice", "inputs": ["R"], "output": "Z", "attrs": {"axes": [1], "starts": [1], "ends": [-1], "steps": [2]}}],
		"outputs": ["Y", "Z"]}`
	g := parse(t, src)
	var b strings.Builder
	if err := WriteJSON(&b, g); err != nil {
		t.Fatal(err)
	}
	h, err := ParseJSON([]byte(b.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if g.String() != h.String() {
		t.Errorf("round trip changed the graph:\n%s\n%s", g, h)
	}
	if got := g.Tensor("Z").Shape.String(); got != "[S1*S2, 3]" {
		t.Errorf("slice shape %s, want [S1*S2, 3]", got)
	}
}

func TestSymbolUnification(t *testing.T) {
	g := parse(t, `{"name": "g", "inputs": [{"name": "A", "dtype": "float32", "shape": ["S0", 768]},
		{"name": "B", "dtype": "float32", "shape": ["S1", 768]}],
		"nodes": [{"op": "add", "inputs": ["A", "B"], "output": "Y"}], "outputs": ["Y"]}`)
	if got := g.Tensor("B").Shape.String(); got != "[S0, 768]" {
		t.Errorf("B's shape is %s, want [S0, 768] (S1 == S0)", got)
	}
	if s := g.Symbols(); !slices.Equal(s, []string{"S0"}) {
		t.Errorf("symbols %v, want [S0]", s)
	}
}

// TestAttrsStringCoversEveryField: Attrs.String is what CSE and the
// module cache compare nodes by, so every attribute must show in it: two
// nodes that differ in any one of them (gelu's approximate, a pad's value,
// a pool's count_include_pad, groups, kernel_shape) are different nodes.
func TestAttrsStringCoversEveryField(t *testing.T) {
	v := reflect.ValueOf(&Attrs{}).Elem()
	for i := 0; i < v.NumField(); i++ {
		var a Attrs
		f := reflect.ValueOf(&a).Elem().Field(i)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("tanh")
		case reflect.Int64:
			f.SetInt(16)
		default:
			t.Fatalf("field %s of kind %s: extend this test", v.Type().Field(i).Name, f.Kind())
		}
		if a.String() == "" {
			t.Errorf("Attrs.String does not show field %s", v.Type().Field(i).Name)
		}
	}
}

// TestCSEKeepsDifferentAttrs: the two forms of gelu on the same input
// stay two nodes.
func TestCSEKeepsDifferentAttrs(t *testing.T) {
	g := parse(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": [4]}],
		"nodes": [{"op": "gelu", "inputs": ["X"], "output": "a"},
		          {"op": "gelu", "inputs": ["X"], "output": "b", "attrs": {"approximate": "tanh"}},
		          {"op": "sub", "inputs": ["a", "b"], "output": "Y"}], "outputs": ["Y"]}`)
	runPass(t, g, cse)
	if y := g.Tensor("Y").Producer; y.Inputs[0] == y.Inputs[1] {
		t.Errorf("cse merged gelu and its tanh form:\n%s", g)
	}
}

// TestFoldMovesLargeConstants: a reshape or transpose of a constant of
// any size is folded (a model's weights), and gives what the kernel would.
func TestFoldMovesLargeConstants(t *testing.T) {
	n := 300 * 400 // more than foldLimit
	data := make([]float64, n)
	for i := range data {
		data[i] = float64(i % 977)
	}
	b := NewBuilder("g")
	x, _ := b.Input("X", ast.Float32, Const(2), Const(300))
	w, _ := b.Constant("W", ast.Float32, []int64{300, 400}, data)
	wt, _ := b.Node("WT", "transpose", Attrs{Perm: []int{1, 0}}, w)
	wr, _ := b.Node("WR", "reshape", Attrs{Shape: []JSONDim{{Dim: Const(400)}, {Dim: Const(300)}}}, wt)
	back, _ := b.Node("WT2", "transpose", Attrs{Perm: []int{1, 0}}, wr)
	y, err := b.Node("Y", "matmul", Attrs{}, x, back)
	if err != nil {
		t.Fatal(err)
	}
	g, err := b.Graph(y)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fold(g); err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != 1 || g.Nodes[0].Op != "matmul" {
		t.Fatalf("after fold: %d nodes", len(g.Nodes))
	}
	for i := range data {
		if back.Data[i] != data[i] {
			t.Fatalf("the transpose of the transpose differs at %d", i)
		}
	}
	if wt.Data[1] != data[400] || wt.Data[300] != data[1] {
		t.Errorf("WT[0][1] = %v, want W[1][0] = %v", wt.Data[1], data[400])
	}
}

// TestFoldAffineIntoConv: a convolution with constant weights followed by
// a batch normalization (and a bias) folds into the convolution's weights
// and one add; its results match the unfolded graph's (the same graph
// with the weights as an input) to rounding.
func TestFoldAffineIntoConv(t *testing.T) {
	build := func(weightsConst bool) (*Graph, error) {
		b := NewBuilder("g")
		x, _ := b.Input("X", ast.Float32, Sym("N"), Const(2), Const(5), Const(5))
		wdata := []float64{1, -2, 0.5, 3, 0.25, -1, 2, 1.5, -0.75, 1, 0, 2, -3, 1, 1, -1, 0.5, 2, 1, -2, 0.5, 3, 0.25, -1, 2, 1.5, -0.75, 1, 0, 2, -3, 1, 1, -1, 0.5, 2}
		var w *Tensor
		if weightsConst {
			w, _ = b.Constant("W", ast.Float32, []int64{2, 2, 3, 3}, wdata)
		} else {
			w, _ = b.Input("W", ast.Float32, Const(2), Const(2), Const(3), Const(3))
		}
		cb, _ := b.Constant("cb", ast.Float32, []int64{2, 1, 1}, []float64{0.5, -1})
		s, _ := b.Constant("s", ast.Float32, []int64{2}, []float64{1.5, 0.5})
		sh, _ := b.Constant("sh", ast.Float32, []int64{2}, []float64{-0.25, 2})
		m, _ := b.Constant("m", ast.Float32, []int64{2}, []float64{0.1, -0.2})
		v, _ := b.Constant("v", ast.Float32, []int64{2}, []float64{2, 0.5})
		eps := 1e-5
		c, _ := b.Node("C", "conv2d", Attrs{Pads: []int64{1, 1, 1, 1}}, x, w)
		cbias, _ := b.Node("CB", "add", Attrs{}, c, cb)
		y, err := b.Node("Y", "batch_norm", Attrs{Epsilon: &eps}, cbias, s, sh, m, v)
		if err != nil {
			return nil, err
		}
		return b.Graph(y)
	}
	folded, err := build(true)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := build(false)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := Compile(folded, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range pf.Graph.Nodes {
		if n.Op == "mul" || n.Op == "sub" {
			t.Errorf("a %s is left after folding: %s", n.Op, n.Name())
		}
	}
	pp, err := Compile(plain, Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 2*2*5*5)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	sizes := map[string]int64{"N": 2}
	got, err := pf.Interpret(sizes, map[string]any{"X": x})
	if err != nil {
		t.Fatal(err)
	}
	w := ast.DataOf(ast.Float32, folded.Tensor("W").Data)
	want, err := pp.Interpret(sizes, map[string]any{"X": x, "W": w})
	if err != nil {
		t.Fatal(err)
	}
	g, e := got["Y"].([]float32), want["Y"].([]float32)
	for i := range e {
		if math.Abs(float64(g[i]-e[i])) > 1e-5*(1+math.Abs(float64(e[i]))) {
			t.Errorf("Y[%d] = %v, unfolded %v", i, g[i], e[i])
		}
	}
}
