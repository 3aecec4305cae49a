package fusion_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
)

// TestDeadTaps: the taps of a convolution with constant weights that read
// only padding at every output are dropped (an atrous convolution dilated
// past its image is a 1x1 one), and the result is what the same
// convolution computes with its weights given per call (which the pass
// leaves alone), at every layout: rows only, columns only, strides, uneven
// padding, and dilations where every tap reads the image (unchanged).
func TestDeadTaps(t *testing.T) {
	for _, c := range []struct {
		name, x, w, attrs string
		taps              string // the kept weights' shape, "" when none is dropped
	}{
		{"atrous 36", "[2, 6, 6]", "[3, 2, 3, 3]", `{"pads": [36, 36, 36, 36], "dilations": [36, 36]}`, "[3, 2, 1, 1]"},
		{"atrous 4 on 6", "[2, 6, 6]", "[3, 2, 3, 3]", `{"pads": [4, 4, 4, 4], "dilations": [4, 4]}`, ""},
		{"rows only", "[2, 3, 9]", "[3, 2, 3, 3]", `{"pads": [5, 1, 5, 1], "dilations": [5, 1]}`, "[3, 2, 1, 3]"},
		{"strided", "[2, 7, 7]", "[2, 2, 3, 5]", `{"pads": [9, 2, 9, 2], "dilations": [9, 1], "strides": [2, 2]}`, "[2, 2, 1, 5]"},
		{"uneven", "[1, 5, 1]", "[2, 1, 3, 1]", `{"pads": [2, 0, 10, 0], "dilations": [6, 1]}`, "[2, 1, 2, 1]"},
		{"plain", "[2, 5, 5]", "[2, 2, 3, 3]", `{"pads": [1, 1, 1, 1]}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			weights := ramp(elemsOf(c.w))
			graph := func(constant bool) *fusion.Graph {
				w := `"constants": [{"name": "W", "dtype": "float32", "shape": ` + c.w + `, "data": ` + weights + `}],`
				in := `{"name": "X", "dtype": "float32", "shape": [1, ` + c.x[1:] + `}`
				if !constant {
					w = ""
					in += `, {"name": "W", "dtype": "float32", "shape": ` + c.w + `}`
				}
				return parseGraph(t, `{"name": "taps", "inputs": [`+in+`], `+w+`
					"nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "Y", "attrs": `+c.attrs+`}],
					"outputs": ["Y"]}`)
			}
			g := graph(true)
			var dump strings.Builder
			p, err := fusion.Compile(g, fusion.Options{Dump: []string{"taps"}, DumpTo: &dump})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(dump.String(), "W_taps: float32"+c.taps); c.taps != "" && !got || c.taps == "" && strings.Contains(dump.String(), "W_taps") {
				t.Errorf("want the weights kept as %q:\n%s", c.taps, dump.String())
			}
			ref, err := fusion.Compile(graph(false), fusion.Options{NoFuse: true})
			if err != nil {
				t.Fatal(err)
			}
			in := map[string]any{}
			x, err := fusion.NewData(g.Inputs[0], nil)
			if err != nil {
				t.Fatal(err)
			}
			fill(rand.New(rand.NewPCG(1, 2)), x)
			in["X"] = x
			got, err := p.Interpret(nil, in)
			if err != nil {
				t.Fatal(err)
			}
			var w []float32
			for _, v := range strings.Split(strings.Trim(weights, "[]"), ", ") {
				var f float32
				fmt.Sscan(v, &f)
				w = append(w, f)
			}
			in["W"] = w
			want, err := ref.Interpret(nil, in)
			if err != nil {
				t.Fatal(err)
			}
			if e := check.MaxRelErr(got["Y"], want["Y"]); e > 1e-6 {
				t.Errorf("differs from the convolution with its weights given per call (max rel err %g)", e)
			}
		})
	}
}
