package module_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loom-go/loom/internal/check"
)

// TestPackedConvolutionsRun: a model's convolutions of constant weights
// run in NHWC with their filters in panels (a 3x3 with padding, a
// strided grouped 5x5, a depthwise 3x3 after them, 512 channels in the
// padded copy's slack case): compiled to native code with Default
// schedules on two threads, they compute what the interpreter computes
// for the graph, every output element written.
func TestPackedConvolutionsRun(t *testing.T) {
	data := func(n int) string {
		var b strings.Builder
		for k := range n {
			if k > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%g", float64(k%11-5)/32)
		}
		return "[" + b.String() + "]"
	}
	src := `{"name": "packed",
		"inputs": [{"name": "X", "dtype": "float32", "shape": [1, 16, 9, 7]}, {"name": "Z", "dtype": "float32", "shape": [1, 256, 6, 6]}],
		"constants": [
			{"name": "W1", "dtype": "float32", "shape": [32, 16, 3, 3], "data": ` + data(32*16*9) + `},
			{"name": "W2", "dtype": "float32", "shape": [32, 16, 5, 5], "data": ` + data(32*16*25) + `},
			{"name": "W3", "dtype": "float32", "shape": [32, 1, 3, 3], "data": ` + data(32*9) + `},
			{"name": "W4", "dtype": "float32", "shape": [16, 256, 3, 3], "data": ` + data(16*256*9) + `}],
		"nodes": [
			{"op": "conv2d", "inputs": ["X", "W1"], "output": "c1", "attrs": {"pads": [1, 1, 1, 1]}},
			{"op": "relu", "inputs": ["c1"], "output": "r"},
			{"op": "conv2d", "inputs": ["r", "W2"], "output": "c2", "attrs": {"pads": [2, 2, 2, 2], "strides": [2, 2], "groups": 2}},
			{"op": "conv2d", "inputs": ["c2", "W3"], "output": "c3", "attrs": {"pads": [1, 1, 1, 1], "groups": 32}},
			{"op": "conv2d", "inputs": ["Z", "W4"], "output": "c4", "attrs": {"pads": [1, 1, 1, 1], "strides": [2, 2]}}],
		"outputs": ["c3", "c4"]}`
	g, m := compiled(t, src)
	ins, raw := inputsAt(t, g, nil, 1)
	want, err := reference(t, goldenCache(t), g, nil, raw)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := poisonedOutputs(m, ins)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(ins, outs); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if e := check.MaxRelErr(outs[name].Data, w); !(e <= 1e-4) {
			t.Errorf("output %s differs from the interpreter's by %g", name, e)
		}
	}
	if !strings.Contains(m.Plan().String(), "_panels") {
		t.Errorf("no filters in panels:\n%s", m.Plan())
	}
}
