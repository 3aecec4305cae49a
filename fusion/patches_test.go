package fusion_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

// TestPatchesAsMatmul: a convolution whose window tiles its input
// (stride equal to the window, no padding) becomes a transpose of the
// input into patches and a matrix product, in NHWC: from an NCHW input
// (patches in the order (c, kh, kw)) and from one a convolution left in
// NHWC ((kh, kw, c)), with constant weights and weights given per call,
// windows 2x2, 4x2 and 8x8, batch 2 and a symbolic batch, weights two
// convolutions share, and a bias and SiLU after it. Not rewritten: an
// image the window does not tile (7 rows by 2). Against the graph as written, one kernel per
// operator, interpreted; compiled at two threads with the outputs NaN
// before the call, against the plan's interpreter. The patches from NCHW
// are computed at their six dimensions, no division in their indices,
// and read as rows through a view (mergingView).
func TestPatchesAsMatmul(t *testing.T) {
	g := parseGraph(t, `{"name": "patches",
		"inputs": [{"name": "X", "dtype": "float32", "shape": [2, 3, 8, 16]},
			{"name": "V", "dtype": "float32", "shape": [4, 3, 4, 2]},
			{"name": "S", "dtype": "float32", "shape": ["N", 3, 8, 8]},
			{"name": "O", "dtype": "float32", "shape": [1, 3, 7, 8]}],
		"constants": [{"name": "W", "dtype": "float32", "shape": [5, 3, 2, 2], "data": `+ramp(60)+`},
			{"name": "B", "dtype": "float32", "shape": [5, 1, 1], "data": `+ramp(5)+`},
			{"name": "D", "dtype": "float32", "shape": [3, 1, 3, 3], "data": `+ramp(27)+`},
			{"name": "P", "dtype": "float32", "shape": [6, 3, 8, 8], "data": `+ramp(1152)+`}],
		"nodes": [
			{"op": "conv2d", "inputs": ["X", "W"], "output": "a", "attrs": {"strides": [2, 2]}},
			{"op": "add", "inputs": ["a", "B"], "output": "b"},
			{"op": "silu", "inputs": ["b"], "output": "A"},
			{"op": "conv2d", "inputs": ["X", "V"], "output": "C", "attrs": {"strides": [4, 2]}},
			{"op": "conv2d", "inputs": ["X", "D"], "output": "d", "attrs": {"groups": 3, "pads": [1, 1, 1, 1]}},
			{"op": "conv2d", "inputs": ["d", "W"], "output": "E", "attrs": {"strides": [2, 2]}},
			{"op": "conv2d", "inputs": ["X", "P"], "output": "F", "attrs": {"strides": [8, 8]}},
			{"op": "conv2d", "inputs": ["S", "W"], "output": "G", "attrs": {"strides": [2, 2]}},
			{"op": "conv2d", "inputs": ["O", "W"], "output": "H", "attrs": {"strides": [2, 2]}},
			{"op": "conv2d", "inputs": ["S", "V"], "output": "I", "attrs": {"strides": [4, 2]}}],
		"outputs": ["A", "C", "E", "F", "G", "H", "I"]}`)
	var dump strings.Builder
	p, err := fusion.Compile(g, fusion.Options{Layout: fusion.LayoutChannelsLast, Dump: []string{"dce"}, DumpTo: &dump})
	if err != nil {
		t.Fatal(err)
	}
	text := dump.String()
	if n := strings.Count(text, "= matmul("); n != 6 {
		t.Errorf("%d matrix products, want 6 (all but H):\n%s", n, text)
	}
	for _, perm := range []string{"[0, 2, 4, 1, 3, 5]", "[0, 2, 1, 3]"} { // from NCHW, from NHWC
		if !strings.Contains(text, "perm: "+perm) {
			t.Errorf("no patches transposed by %s:\n%s", perm, text)
		}
	}
	for _, k := range p.Kernels {
		if slices.Contains(k.Outputs, "F_patches_6d") && (strings.Contains(k.Func.String(), "floordiv") || strings.Contains(k.Func.String(), "floormod")) {
			t.Errorf("the patches of F are computed through a division:\n%s", k.Func)
		}
		if slices.Contains(k.Outputs, "F_patches") && k.Alias == "" {
			t.Errorf("the rows of F's patches are no view:\n%s", p)
		}
	}
	ref, err := fusion.Compile(g, fusion.Options{NoFuse: true, Layout: fusion.LayoutChannelsFirst})
	if err != nil {
		t.Fatal(err)
	}
	m, err := module.Compile(g, module.Options{Threads: 2, NoCache: true, Layout: fusion.LayoutChannelsLast})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 3))
	for _, n := range []int64{0, 1, 2} {
		sizes := map[string]int64{"N": n}
		compare(t, g, p, ref, sizes)
		compiledAgrees(t, g, p, m, sizes, r, 1e-5)
	}
}
