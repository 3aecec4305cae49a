package fusion_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

// TestGroupedConvBorders: depthwise convolutions in NHWC read their
// input's border through tests, which the code generator drops in the
// interior (package partition's Borders); wider windows and groups of
// several channels read a padded copy. Compiled at two threads,
// outputs poisoned with NaN, against the plan's interpreter: windows of
// 2x2 to 7x7, strides 1, 2 and 4, uneven pads, a dilation, 12 channels
// (a vector and a half) in groups of 1 and 2, with their epilogues (bias
// and clip, SiLU, a residual), at stride 1 over symbolic image sizes
// from 1x1 (all border) to 17x15, strided (which needs constant sizes)
// with 16 channels at 11x9.
func TestGroupedConvBorders(t *testing.T) {
	for _, c := range []struct {
		name, x, ch string
		strided     bool // strides need constant image sizes
	}{
		{"symbolic", `["N", 12, "H", "W"]`, "12", false},
		{"11x9", `["N", 16, 11, 9]`, "16", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, half := c.ch, "6"
			if ch == "16" {
				half = "8"
			}
			weights := func(name, shape string) string {
				return `{"name": "` + name + `", "dtype": "float32", "shape": ` + shape + `, "data": ` + ramp(elemsOf(shape)) + `}, `
			}
			var nodes, outputs string
			if c.strided {
				nodes = `{"op": "conv2d", "inputs": ["X", "W5"], "output": "b0", "attrs": {"groups": ` + ch + `, "strides": [2, 2], "pads": [2, 1, 2, 2]}},
				{"op": "silu", "inputs": ["b0"], "output": "Bo"},
				{"op": "conv2d", "inputs": ["X", "G3"], "output": "C", "attrs": {"groups": ` + half + `, "dilations": [2, 2], "pads": [2, 2, 1, 3]}},
				{"op": "conv2d", "inputs": ["X", "W4"], "output": "F", "attrs": {"groups": ` + ch + `, "strides": [4, 3], "pads": [0, 1, 3, 3]}}`
				outputs = `"Bo", "C", "F"`
			} else {
				nodes = `{"op": "conv2d", "inputs": ["X", "W3"], "output": "a0", "attrs": {"groups": ` + ch + `, "pads": [1, 1, 1, 1]}},
				{"op": "add", "inputs": ["a0", "B"], "output": "a1"},
				{"op": "max", "inputs": ["a1", "zero"], "output": "a2"},
				{"op": "min", "inputs": ["a2", "six"], "output": "A"},
				{"op": "conv2d", "inputs": ["X", "W7"], "output": "d0", "attrs": {"groups": ` + ch + `, "pads": [3, 2, 3, 4]}},
				{"op": "add", "inputs": ["d0", "X"], "output": "D"}`
				outputs = `"A", "D"`
			}
			g := parseGraph(t, `{"name": "dw",
				"inputs": [{"name": "X", "dtype": "float32", "shape": `+c.x+`}],
				"constants": [`+weights("W3", "["+ch+", 1, 3, 3]")+weights("W5", "["+ch+", 1, 5, 5]")+
				weights("G3", "["+ch+", 2, 3, 3]")+weights("W7", "["+ch+", 1, 7, 7]")+
				weights("W4", "["+ch+", 1, 4, 4]")+weights("B", "["+ch+", 1, 1]")+`
					{"name": "zero", "dtype": "float32", "shape": [], "data": [0]}, {"name": "six", "dtype": "float32", "shape": [], "data": [6]}],
				"nodes": [`+nodes+`],
				"outputs": [`+outputs+`]}`)
			p, err := fusion.Compile(g, fusion.Options{Layout: fusion.LayoutChannelsLast})
			if err != nil {
				t.Fatal(err)
			}
			m, err := module.Compile(g, module.Options{Threads: 2, NoCache: true, Layout: fusion.LayoutChannelsLast})
			if err != nil {
				t.Fatal(err)
			}
			sizes := []map[string]int64{{"N": 1}, {"N": 2}}
			if !c.strided {
				sizes = []map[string]int64{{"N": 1, "H": 1, "W": 1}, {"N": 1, "H": 2, "W": 3}, {"N": 2, "H": 9, "W": 8}, {"N": 1, "H": 17, "W": 15}}
			}
			r := rand.New(rand.NewPCG(4, 7))
			for _, sz := range sizes {
				compiledAgrees(t, g, p, m, sz, r, 1e-4)
			}
		})
	}
}

// TestDepthwiseBorderTestsOrCopy: in NHWC a depthwise convolution with a
// window of up to 5x5 reads its border through tests; one with a wider
// window, or a grouped one with several channels per group, reads a
// padded copy of its input (see inlinePadding: the border's share of the
// output, or the channels of work per read, makes the copy cheaper).
func TestDepthwiseBorderTestsOrCopy(t *testing.T) {
	for _, c := range []struct {
		name, weights string
		groups, k     int
		copy          bool
	}{
		{"depthwise 3x3", "[16, 1, 3, 3]", 16, 3, false},
		{"depthwise 5x5", "[16, 1, 5, 5]", 16, 5, false},
		{"depthwise 5x3", "[16, 1, 5, 3]", 16, 5, false},
		{"depthwise 7x7", "[16, 1, 7, 7]", 16, 7, true},
		{"depthwise 3x7", "[16, 1, 3, 7]", 16, 7, true},
		{"two channels per group 3x3", "[16, 2, 3, 3]", 8, 3, true},
		{"dense 3x3", "[16, 16, 3, 3]", 1, 3, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.k / 2
			g := parseGraph(t, `{"name": "dw",
				"inputs": [{"name": "X", "dtype": "float32", "shape": [1, 16, 20, 20]}],
				"constants": [{"name": "W", "dtype": "float32", "shape": `+c.weights+`, "data": `+ramp(elemsOf(c.weights))+`}],
				"nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "Y", "attrs": {"groups": `+strconv.Itoa(c.groups)+`, "pads": [`+strings.Repeat(strconv.Itoa(p)+", ", 3)+strconv.Itoa(p)+`]}}],
				"outputs": ["Y"]}`)
			plan, err := fusion.Compile(g, fusion.Options{Layout: fusion.LayoutChannelsLast})
			if err != nil {
				t.Fatal(err)
			}
			var conv *fusion.Kernel
			for _, k := range plan.Kernels {
				if k.Kind == fusion.Anchor {
					conv = k
				}
			}
			if conv == nil {
				t.Fatalf("no convolution kernel:\n%s", plan)
			}
			text := conv.Func.String()
			if copied := strings.Contains(text, "_pad: float32"); copied != c.copy {
				t.Errorf("padded copy %v, want %v:\n%s", copied, c.copy, text)
			}
		})
	}
}
