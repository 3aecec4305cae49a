package fusion_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

// TestConcatSlices: a concat with a buffer is one block per input, each
// writing its slice of the output, and what the kernel computes of its
// inputs goes straight into its slice. YOLO's SPPF (three 5x5 max pools
// in a chain and the concat of the input and the three, NHWC) copies
// each part with no test of which input an element comes from; beside
// it, a concat of an element-wise value (computed in its slice), of a
// value read twice (computed in its slice and read there, by another
// concat too), of one input twice and of a part that is empty at some
// sizes (also where an element-wise reader would have inlined the concat:
// a part of symbolic size gives it a buffer). The plans compute what
// the unfused ones do at 0, 1 and 2 images.
func TestConcatSlices(t *testing.T) {
	g := parseGraph(t, `{"name": "sppf",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 9, 7, 20]},
			{"name": "E", "dtype": "float32", "shape": ["N", "M", 3]}, {"name": "F", "dtype": "float32", "shape": ["N", 5, 3]}],
		"nodes": [
			{"op": "max_pool2d", "inputs": ["X"], "output": "Y1", "attrs": {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2], "layout": "NHWC"}},
			{"op": "max_pool2d", "inputs": ["Y1"], "output": "Y2", "attrs": {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2], "layout": "NHWC"}},
			{"op": "max_pool2d", "inputs": ["Y2"], "output": "Y3", "attrs": {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2], "layout": "NHWC"}},
			{"op": "concat", "inputs": ["X", "Y1", "Y2", "Y3"], "output": "Z", "attrs": {"axis": 3}},
			{"op": "tanh", "inputs": ["F"], "output": "T"},
			{"op": "relu", "inputs": ["F"], "output": "R"},
			{"op": "exp", "inputs": ["R"], "output": "R2"},
			{"op": "concat", "inputs": ["T", "E", "R", "E", "R2"], "output": "C", "attrs": {"axis": 1}},
			{"op": "concat", "inputs": ["R", "F"], "output": "D", "attrs": {"axis": 2}},
			{"op": "concat", "inputs": ["E", "E"], "output": "EE", "attrs": {"axis": 1}},
			{"op": "neg", "inputs": ["EE"], "output": "NEE"}],
		"outputs": ["Z", "C", "D", "NEE"]}`)
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kernel := func(nodes string) string {
		for _, k := range p.Kernels {
			if strings.Join(k.Nodes, " ") == nodes {
				return k.Func.String()
			}
		}
		t.Fatalf("no kernel computes %s:\n%s", nodes, p)
		return ""
	}
	z := kernel("Z")
	for _, want := range []string{
		"Z[vi_Z_part0, vj_Z_part0, vk_Z_part0, vl_Z_part0] = X[vi_Z_part0, vj_Z_part0, vk_Z_part0, vl_Z_part0]",
		"Z[vi_Z_part3, vj_Z_part3, vk_Z_part3, vl_Z_part3 + 60] = Y3[vi_Z_part3, vj_Z_part3, vk_Z_part3, vl_Z_part3]",
	} {
		if !strings.Contains(z, want) {
			t.Errorf("the concat kernel has no %q:\n%s", want, z)
		}
	}
	if strings.Contains(z, "select(") {
		t.Errorf("the concat kernel tests which input an element comes from:\n%s", z)
	}
	c := kernel("T R R2 C D")
	for _, want := range []string{
		"C[vi_R, M + vj_R + 5, vk_R] = max(F[vi_R, vj_R, vk_R], 0.0f)",                        // R in its slice
		"C[vi_C_part0, vj_C_part0, vk_C_part0] = tanh(F[vi_C_part0, vj_C_part0, vk_C_part0])", // T computed in its part
		"= exp(C[vi_C_part4, M + vj_C_part4 + 5, vk_C_part4])",                                // R read in C
	} {
		if !strings.Contains(c, want) {
			t.Errorf("the kernel of C has no %q:\n%s", want, c)
		}
	}
	if !strings.Contains(c, "D[vi_D_part0, vj_D_part0, vk_D_part0] = C[vi_D_part0, M + vj_D_part0 + 5, vk_D_part0]") {
		t.Errorf("D does not copy R from C:\n%s", c)
	}
	if strings.Contains(c, "alloc") || strings.Contains(c, "C_part2") {
		t.Errorf("the kernel of C keeps a part apart:\n%s", c)
	}
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{0, 1, 2} {
		for _, m := range []int64{0, 3} {
			compare(t, g, p, ref, map[string]int64{"N": n, "M": m})
		}
	}
}

// TestSeparableMaxPool: max pools of 5x5 and larger windows at stride 1
// along the rows, in either layout, are a max along the rows and then one
// along the columns; interpreted and compiled, they give refPool's
// answers bit for bit, NaNs and infinities among the inputs included. In
// NHWC, where every window holds an input element (clampsBorder), the
// border reads clamp their index: no padded copy, rows of the input only
// (3x3 pools too, padded by as much as the graph allows); in NCHW the
// reads along the height clamp theirs; a dilated pool keeps the lowest
// value in its border.
func TestSeparableMaxPool(t *testing.T) {
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 5))
	for i, tc := range []struct {
		k, strides, pads, dil []int
		in                    []int
	}{
		{[]int{5, 5}, []int{1, 1}, []int{2, 2, 2, 2}, []int{1, 1}, []int{2, 3, 9, 7}},
		{[]int{7, 4}, []int{1, 2}, []int{3, 0, 1, 2}, []int{1, 1}, []int{1, 2, 11, 10}},
		{[]int{5, 5}, []int{1, 3}, []int{0, 1, 4, 2}, []int{2, 1}, []int{1, 4, 13, 12}},
		{[]int{9, 9}, []int{1, 1}, []int{4, 4, 4, 4}, []int{1, 1}, []int{1, 1, 1, 1}},
		{[]int{3, 3}, []int{1, 2}, []int{2, 1, 2, 2}, []int{1, 1}, []int{1, 2, 4, 5}},
		{[]int{3, 2}, []int{2, 1}, []int{1, 1, 1, 1}, []int{1, 2}, []int{1, 3, 6, 5}},
		{[]int{3, 3}, []int{2, 2}, []int{1, 1, 1, 1}, []int{1, 1}, []int{1, 3, 7, 8}},
	} {
		x := tensor{shape: tc.in}
		for range elems(tc.in) {
			v := r.NormFloat64()
			switch r.IntN(40) {
			case 0:
				v = math.NaN()
			case 1:
				v = math.Inf(-1)
			case 2:
				v = math.Copysign(0, -1)
			}
			x.data = append(x.data, v)
		}
		attrs := map[string]any{"kernel_shape": tc.k, "strides": tc.strides, "pads": tc.pads, "dilations": tc.dil}
		want := refPool(x, true, tc.k, tc.strides, tc.pads, tc.dil, false)
		for _, nhwc := range []bool{false, true} {
			in, w := x, want
			if nhwc {
				attrs["layout"] = "NHWC"
				in, w = permute(x, toLast), permute(want, toLast)
			}
			interpreted, compiled := runOp(t, cache, "max_pool2d", attrs, []tensor{in})
			for name, got := range map[string][]float64{"interpreted": interpreted, "compiled": compiled} {
				for j := range w.data {
					if got[j] != w.data[j] && !(math.IsNaN(got[j]) && math.IsNaN(w.data[j])) || math.Signbit(got[j]) != math.Signbit(w.data[j]) && !math.IsNaN(w.data[j]) {
						t.Errorf("case %d (NHWC %v) %s: element %d is %g, want %g", i, nhwc, name, j, got[j], w.data[j])
						break
					}
				}
			}
		}
	}
	// The rows come first: the plan's kernel computes P_rows, over the
	// input's rows, from a copy padded along the width alone (NCHW).
	g := parseGraph(t, `{"name": "p", "inputs": [{"name": "X", "dtype": "float32", "shape": [1, 4, 9, 9]}],
		"nodes": [{"op": "max_pool2d", "inputs": ["X"], "output": "P", "attrs": {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]}}],
		"outputs": ["P"]}`)
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(p); !strings.Contains(s, "alloc P_rows: float32[1, 4, 9, 9]") || !strings.Contains(s, "alloc P_pad: float32[1, 4, 9, 13]") {
		t.Errorf("no rows for the 5x5 pool:\n%s", s)
	}
	g = parseGraph(t, `{"name": "p", "inputs": [{"name": "X", "dtype": "float32", "shape": [1, 9, 9, 4]}],
		"nodes": [{"op": "max_pool2d", "inputs": ["X"], "output": "P", "attrs": {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2], "layout": "NHWC"}}],
		"outputs": ["P"]}`)
	if p, err = fusion.Compile(g, fusion.Options{}); err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(p); !strings.Contains(s, "alloc P_rows: float32[1, 9, 9, 4]") || strings.Contains(s, "_pad") || strings.Contains(s, "select(") {
		t.Errorf("the NHWC pool does not clamp its border reads over the input's rows:\n%s", s)
	}
}

// TestSeparableMaxPoolSymbolic: separable max pools over images of
// symbolic size, compiled to native code, give the interpreter's answers
// at sizes down to a 1x1 image, every output element written (the
// outputs are NaN before the call).
func TestSeparableMaxPoolSymbolic(t *testing.T) {
	g := parseGraph(t, `{"name": "p",
		"inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 3, "H", "W"]}, {"name": "L", "dtype": "float32", "shape": ["N", "H", "W", 5]}],
		"nodes": [
			{"op": "max_pool2d", "inputs": ["X"], "output": "Y", "attrs": {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]}},
			{"op": "max_pool2d", "inputs": ["L"], "output": "V", "attrs": {"kernel_shape": [5, 6], "pads": [2, 3, 2, 2], "layout": "NHWC"}}],
		"outputs": ["Y", "V"]}`)
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := module.Compile(g, module.Options{Threads: 2, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	for _, s := range [][3]int64{{1, 1, 1}, {2, 9, 6}, {1, 2, 7}} {
		compiledAgrees(t, g, p, m, map[string]int64{"N": s[0], "H": s[1], "W": s[2]}, r, 0)
	}
}

// compiledAgrees runs module m, compiled from g, at sizes on random inputs
// with its outputs NaN before the call, and checks every output element
// against plan p's interpreter: equal, or within tol relative to
// 1 + |want| (a sum computed in another order).
func compiledAgrees(t *testing.T, g *fusion.Graph, p *fusion.Plan, m *module.Module, sizes map[string]int64, r *rand.Rand, tol float64) {
	t.Helper()
	ins, tensors := map[string]any{}, map[string]module.Tensor{}
	for _, x := range g.Inputs {
		d, err := fusion.NewData(x, sizes)
		if err != nil {
			t.Fatal(err)
		}
		fill(r, d)
		ins[x.Name] = d
		var shape []int64
		for _, dim := range x.Shape {
			v, _ := dim.Eval(sizes)
			shape = append(shape, v)
		}
		tensors[x.Name] = module.Tensor{Shape: shape, Data: d}
	}
	want, err := p.Interpret(sizes, ins)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := m.NewOutputs(tensors)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		for i := range o.Data.([]float32) {
			o.Data.([]float32)[i] = float32(math.NaN())
		}
	}
	if err := m.Run(tensors, outs); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		got := outs[name].Data.([]float32)
		for i, v := range w.([]float32) {
			if d := math.Abs(float64(got[i] - v)); !(d <= tol*(1+math.Abs(float64(v)))) {
				t.Errorf("sizes %v: %s[%d] = %v, want %v", sizes, name, i, got[i], v)
				break
			}
		}
	}
}
