package fusion_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
)

// TestConcatLast: a batch norm and activations after a concat (DenseNet's
// layers) run on each input before it is joined: the graph's result is
// the concat of the three inputs' results. Per-channel
// constants are sliced for each input (as [C, 1, 1] against NCHW, the
// layout as written, and as [1, 1, 1, C] once in NHWC); a scalar stays
// whole. Checked against the same graph with the concat an output too
// (which keeps it where it is), at batch sizes 0, 1 and 2.
func TestConcatLast(t *testing.T) {
	src := func(outputs string) string {
		return `{"name": "dense",
		"inputs": [{"name": "A", "dtype": "float32", "shape": ["N", 2, 3, 3]}, {"name": "B", "dtype": "float32", "shape": ["N", 3, 3, 3]}],
		"constants": [
			{"name": "W", "dtype": "float32", "shape": [1, 2, 3, 3], "data": ` + ramp(18) + `},
			{"name": "U", "dtype": "float32", "shape": [2, 2, 1, 1], "data": ` + ramp(4) + `},
			{"name": "V", "dtype": "float32", "shape": [3, 3, 1, 1], "data": ` + ramp(9) + `},
			{"name": "S", "dtype": "float32", "shape": [6, 1, 1], "data": [0.5, -1, 2, 0.25, 3, -0.5]},
			{"name": "T", "dtype": "float32", "shape": [1, 6, 1, 1], "data": [1, 2, 3, 4, 5, 6]},
			{"name": "two", "dtype": "float32", "shape": [], "data": [2]}],
		"nodes": [
			{"op": "conv2d", "inputs": ["A", "W"], "output": "a", "attrs": {"pads": [1, 1, 1, 1]}},
			{"op": "conv2d", "inputs": ["A", "U"], "output": "u"},
			{"op": "conv2d", "inputs": ["B", "V"], "output": "v"},
			{"op": "concat", "inputs": ["u", "v", "a"], "output": "Z", "attrs": {"axis": 1}},
			{"op": "mul", "inputs": ["Z", "S"], "output": "m"},
			{"op": "add", "inputs": ["T", "m"], "output": "s"},
			{"op": "relu", "inputs": ["s"], "output": "r"},
			{"op": "mul", "inputs": ["r", "two"], "output": "Y"}],
		"outputs": [` + outputs + `]}`
	}
	for _, layout := range []string{fusion.LayoutChannelsFirst, fusion.LayoutChannelsLast} {
		g := parseGraph(t, src(`"Y"`))
		var dump strings.Builder
		p, err := fusion.Compile(g, fusion.Options{Layout: layout, Dump: []string{"dce"}, DumpTo: &dump})
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^  Y\w*: .* = concat\(Y\w*_part, Y\w*_part1, Y\w*_part2\)`).MatchString(dump.String()) {
			t.Errorf("%s: the work after the concat is not on its inputs:\n%s", layout, dump.String())
		}
		kept := parseGraph(t, src(`"Y", "Z"`))
		ref, err := fusion.Compile(kept, fusion.Options{Layout: layout, NoFuse: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int64{0, 1, 2} {
			got, want := interpretBoth(t, g, p, ref, map[string]int64{"N": n})
			if e := check.MaxRelErr(got["Y"], want["Y"]); e > 1e-6 {
				t.Errorf("%s, N=%d: Y differs from the graph that keeps the concat (max rel err %g)", layout, n, e)
			}
		}
	}
}
