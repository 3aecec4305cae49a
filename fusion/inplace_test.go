package fusion_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
)

// residualGraph is a residual block's end: R, a matmul's result, is added
// (through view, "R" itself or an expression of it) to another matmul's
// output with a bias and a ReLU, giving Y, which a last matmul reads;
// extra nodes follow those.
func residualGraph(view, extra, outputs string) string {
	return fmt.Sprintf(`{"name": "res", "inputs": [
    {"name": "A", "dtype": "float32", "shape": ["N", 8]}, {"name": "B", "dtype": "float32", "shape": [8, 8]},
    {"name": "A2", "dtype": "float32", "shape": ["N", 8]}, {"name": "B2", "dtype": "float32", "shape": [8, 8]},
    {"name": "Bias", "dtype": "float32", "shape": [8]}, {"name": "B3", "dtype": "float32", "shape": [8, 3]}],
  "nodes": [
    {"op": "matmul", "inputs": ["A2", "B2"], "output": "R"},
    {"op": "matmul", "inputs": ["A", "B"], "output": "T1"},
    {"op": "add", "inputs": ["T1", "Bias"], "output": "T2"}%s,
    {"op": "add", "inputs": ["T2", "%s"], "output": "T3"},
    {"op": "relu", "inputs": ["T3"], "output": "Y"},
    {"op": "matmul", "inputs": ["Y", "B3"], "output": "Z"}%s],
  "outputs": [%s]}`, map[bool]string{true: "", false: `, {"op": "transpose", "inputs": ["R"], "output": "RT"}`}[view == "R"], view, extra, outputs)
}

// TestInPlaceResidual: the kernel that adds a residual no later kernel
// reads writes its result into the residual's memory (its function
// updates R; Y is a name for R's memory, placed nowhere), and the plan
// computes what the unfused graph does; where the residual is read again
// later, read at other indices (transposed), or the result is the graph's
// output, the kernel writes a buffer of its own.
func TestInPlaceResidual(t *testing.T) {
	for _, tc := range []struct {
		name    string
		src     string
		inPlace bool
	}{
		{"residual", residualGraph("R", "", `"Z"`), true},
		{"residual read later", residualGraph("R", `, {"op": "add", "inputs": ["Z", "Z"], "output": "Z2"}, {"op": "matmul", "inputs": ["R", "B3"], "output": "Z3"}`, `"Z2", "Z3"`), false},
		{"transposed residual", strings.ReplaceAll(residualGraph("RT", "", `"Z"`), `"N"`, "8"), false},
		{"result is an output", residualGraph("R", "", `"Z", "Y"`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := fusion.ParseJSON([]byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			p, err := fusion.Compile(g, fusion.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var writer *fusion.Kernel
			for _, k := range p.Kernels {
				if slices.Contains(k.Nodes, "Y") {
					writer = k
				}
			}
			if writer == nil {
				t.Fatalf("no kernel computes Y:\n%s", p)
			}
			var y *fusion.Buffer
			for _, b := range p.Buffers {
				if b.Tensor.Name == "Y" {
					y = b
				}
			}
			inPlace := y != nil && y.AliasOf != nil && y.AliasOf.Name == "R"
			if inPlace != tc.inPlace {
				t.Errorf("Y in R's memory: %v, want %v:\n%s", inPlace, tc.inPlace, p)
			}
			if inPlace && (slices.Contains(writer.Inputs, "R") || !slices.Equal(writer.Outputs, []string{"R"}) || writer.Func.Param("Y") != nil || writer.Func.Param("R") == nil) {
				t.Errorf("kernel %s reads %v, writes %v: want R updated in place, no Y:\n%s", writer.Name, writer.Inputs, writer.Outputs, writer.Func)
			}
			apart, err := fusion.Compile(g, fusion.Options{NoFuse: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{1, 5} {
				compare(t, g, p, apart, map[string]int64{"N": n})
			}
		})
	}
}
