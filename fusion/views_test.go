package fusion_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
)

// TestAnchorReadsThroughViews: a matmul reads through a transpose of the
// outer dimensions and through a reshape that splits a dimension (no
// kernel copies them), but not through a transpose that moves the
// innermost dimension or a reshape that merges dimensions (a copy kernel
// is faster there); every plan computes what the unfused graph computes.
func TestAnchorReadsThroughViews(t *testing.T) {
	for _, tc := range []struct {
		name    string
		x       string // X's shape
		view    string // the nodes from X to V, the matmul's left operand [2, 3, 4]
		kernels int
	}{
		{"outer transpose", "[3, 2, 4]", `{"op": "transpose", "inputs": ["X"], "output": "V", "attrs": {"perm": [1, 0, 2]}}`, 1},
		{"split reshape", "[2, 12]", `{"op": "reshape", "inputs": ["X"], "output": "V", "attrs": {"shape": [2, 3, 4]}}`, 1},
		{"split then transpose", "[3, 8]", `{"op": "reshape", "inputs": ["X"], "output": "X2", "attrs": {"shape": [3, 2, 4]}},
			{"op": "transpose", "inputs": ["X2"], "output": "V", "attrs": {"perm": [1, 0, 2]}}`, 1},
		{"inner transpose", "[2, 4, 3]", `{"op": "transpose", "inputs": ["X"], "output": "V", "attrs": {"perm": [0, 2, 1]}}`, 2},
		{"merge reshape", "[2, 3, 2, 2]", `{"op": "reshape", "inputs": ["X"], "output": "V", "attrs": {"shape": [2, 3, 4]}}`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf(`{"name": "views", "inputs": [{"name": "X", "dtype": "float32", "shape": %s}, {"name": "W", "dtype": "float32", "shape": [4, 5]}],
  "nodes": [%s, {"op": "matmul", "inputs": ["V", "W"], "output": "Y"}], "outputs": ["Y"]}`, tc.x, tc.view)
			g, err := fusion.ParseJSON([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			fused, err := fusion.Compile(g, fusion.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(fused.Kernels) != tc.kernels {
				var ks []string
				for _, k := range fused.Kernels {
					ks = append(ks, strings.Join(k.Nodes, " "))
				}
				t.Errorf("%d kernels (%s), want %d", len(fused.Kernels), strings.Join(ks, " | "), tc.kernels)
			}
			apart, err := fusion.Compile(g, fusion.Options{NoFuse: true})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			inputs := map[string]any{}
			for _, x := range g.Inputs {
				d, err := fusion.NewData(x, nil)
				if err != nil {
					t.Fatal(err)
				}
				check.FillRandom(d, r)
				inputs[x.Name] = d
			}
			want, err := apart.Interpret(nil, inputs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fused.Interpret(nil, inputs)
			if err != nil {
				t.Fatal(err)
			}
			if e := check.MaxRelErr(got["Y"], want["Y"]); e > 1e-6 {
				t.Errorf("the fused plan differs from the unfused one by %g", e)
			}
		})
	}
}
