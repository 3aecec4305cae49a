package fusion_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
)

// TestRowsFuseEpilogues: a transformer's MLP as an importer writes it
// (the activations' rows through a product, reshaped back, a bias and
// GELU's five element-wise steps, reshaped to rows for the next product)
// runs its bias and GELU as the first product's epilogue and the second
// product's bias as the second's; the residual addition, of a tensor of
// the whole shape and a graph output, stays as it was: three kernels, the
// last one element-wise. A reshape that splits the last axis, and an
// operand broadcast along another axis, keep the nodes where they are.
// The plans compute what the graph does at 0, 1 and 5 tokens.
func TestRowsFuseEpilogues(t *testing.T) {
	g := parseGraph(t, `{"name": "mlp",
		"inputs": [{"name": "X", "dtype": "float32", "shape": [1, "T", 8]}],
		"constants": [
			{"name": "W1", "dtype": "float32", "shape": [8, 12], "data": `+ramp(96)+`},
			{"name": "B1", "dtype": "float32", "shape": [12], "data": `+ramp(12)+`},
			{"name": "W2", "dtype": "float32", "shape": [12, 8], "data": `+ramp(96)+`},
			{"name": "B2", "dtype": "float32", "shape": [1, 1, 8], "data": `+ramp(8)+`},
			{"name": "sqrt2", "dtype": "float32", "shape": [], "data": [1.4142135]},
			{"name": "one", "dtype": "float32", "shape": [], "data": [1]},
			{"name": "half", "dtype": "float32", "shape": [], "data": [0.5]}],
		"nodes": [
			{"op": "reshape", "inputs": ["X"], "output": "x", "attrs": {"shape": ["T", 8]}},
			{"op": "matmul", "inputs": ["x", "W1"], "output": "m1"},
			{"op": "reshape", "inputs": ["m1"], "output": "h", "attrs": {"shape": [1, "T", 12]}},
			{"op": "add", "inputs": ["h", "B1"], "output": "a"},
			{"op": "div", "inputs": ["a", "sqrt2"], "output": "d"},
			{"op": "erf", "inputs": ["d"], "output": "e"},
			{"op": "add", "inputs": ["e", "one"], "output": "f"},
			{"op": "mul", "inputs": ["a", "f"], "output": "p"},
			{"op": "mul", "inputs": ["p", "half"], "output": "q"},
			{"op": "reshape", "inputs": ["q"], "output": "r", "attrs": {"shape": ["T", 12]}},
			{"op": "matmul", "inputs": ["r", "W2"], "output": "m2"},
			{"op": "reshape", "inputs": ["m2"], "output": "o", "attrs": {"shape": [1, "T", 8]}},
			{"op": "add", "inputs": ["o", "B2"], "output": "ob"},
			{"op": "add", "inputs": ["ob", "X"], "output": "Y"}],
		"outputs": ["Y"]}`)
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Kernels) != 3 || !strings.Contains(p.String(), "(anchor): x m1 a_rows d_rows e_rows f_rows p_rows q_rows\n") ||
		!strings.Contains(p.String(), "(anchor): m2 ob_rows\n") {
		t.Errorf("want each product with its epilogue, then the residual:\n%s", p)
	}
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{0, 1, 5} {
		compare(t, g, p, ref, map[string]int64{"T": n})
	}

	// The last axis split ([T, 12] as [1, T, 3, 4]) and a bias that varies
	// along the tokens: nothing moves, and the results still agree.
	h := parseGraph(t, `{"name": "split",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["T", 8]}, {"name": "Z", "dtype": "float32", "shape": [1, "T", 1]}],
		"constants": [{"name": "W", "dtype": "float32", "shape": [8, 12], "data": `+ramp(96)+`},
			{"name": "B", "dtype": "float32", "shape": [3, 4], "data": `+ramp(12)+`}],
		"nodes": [
			{"op": "matmul", "inputs": ["X", "W"], "output": "m"},
			{"op": "reshape", "inputs": ["m"], "output": "s", "attrs": {"shape": [1, "T", 3, 4]}},
			{"op": "add", "inputs": ["s", "B"], "output": "a"},
			{"op": "reshape", "inputs": ["m"], "output": "u", "attrs": {"shape": [1, "T", 12]}},
			{"op": "mul", "inputs": ["u", "Z"], "output": "b"}],
		"outputs": ["a", "b"]}`)
	ph, err := fusion.Compile(h, fusion.Options{Dump: []string{"rows"}, DumpTo: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ph.String(), "_rows") {
		t.Errorf("a node moved to the rows:\n%s", ph)
	}
	refH, err := fusion.Compile(h, fusion.Options{NoFuse: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{0, 1, 5} {
		compare(t, h, ph, refH, map[string]int64{"T": n})
	}
}

// TestRowsTransposedResidual: a 1x1 convolution in NHWC with a bias and a
// residual that are graph inputs in NCHW (the suite's residual cases).
// The residual's transpose to NHWC moves the innermost axis: it is a
// kernel of its own, reading only the input (a layout conversion), and
// the addition and ReLU run on the product's rows as its epilogue, where
// they read the converted residual as rows, with the addition's operands
// in either order; the bias, whose transpose moves only axes of one
// element, is read by the epilogue itself. The plans compute what the
// unfused plan in NCHW does at 0, 1 and 2 images.
func TestRowsTransposedResidual(t *testing.T) {
	for _, operands := range []string{`"b", "R"`, `"R", "b"`} {
		g := parseGraph(t, `{"name": "residual",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 16, 5, 3]},
			{"name": "W", "dtype": "float32", "shape": [32, 16, 1, 1]},
			{"name": "B", "dtype": "float32", "shape": [32, 1, 1]},
			{"name": "R", "dtype": "float32", "shape": ["N", 32, 5, 3]}],
		"nodes": [
			{"op": "conv2d", "inputs": ["X", "W"], "output": "c"},
			{"op": "add", "inputs": ["c", "B"], "output": "b"},
			{"op": "add", "inputs": [`+operands+`], "output": "r"},
			{"op": "relu", "inputs": ["r"], "output": "y"}],
		"outputs": ["y"]}`)
		p, err := fusion.Compile(g, fusion.Options{Layout: fusion.LayoutChannelsLast})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, PlainWeights: true, Layout: fusion.LayoutChannelsFirst})
		if err != nil {
			t.Fatal(err)
		}
		var anchor, residual *fusion.Kernel
		for _, k := range p.Kernels {
			switch {
			case strings.Join(k.Inputs, " ") == "R":
				residual = k
			case slices.ContainsFunc(k.Nodes, func(n string) bool { return strings.HasSuffix(n, "_mm") }):
				anchor = k
			}
		}
		if residual == nil || anchor == nil {
			t.Fatalf("add(%s): want a kernel that converts R alone and the product's kernel:\n%s", operands, p)
		}
		for _, name := range residual.Nodes {
			if n := p.Graph.Tensor(name).Producer; n.Op != "reshape" && !fusion.IsLayoutConversion(n) {
				t.Errorf("add(%s): R's kernel computes %s (%s), want layout conversions and views only", operands, name, n.Op)
			}
		}
		if !slices.Contains(anchor.Inputs, "B") || len(anchor.Outputs) != 1 || !slices.Contains(residual.Outputs, anchor.Outputs[0]) && !slices.Contains(anchor.Inputs, residual.Outputs[0]) {
			t.Errorf("add(%s): the product's kernel reads %v and writes %v, want B read in its epilogue and the converted residual (%v) read there:\n%s", operands, anchor.Inputs, anchor.Outputs, residual.Outputs, p)
		}
		if n := strings.Count(anchor.Func.String(), "max("); n == 0 {
			t.Errorf("add(%s): the product's kernel does not apply the ReLU:\n%s", operands, anchor.Func)
		}
		for _, n := range []int64{0, 1, 2} {
			compare(t, g, p, ref, map[string]int64{"N": n})
		}
	}
}
