package fusion_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/golden"
)

// TestMemoryPlanLiveRanges places the intermediate buffers of every
// golden graph, fused and one kernel per operator (many intermediates),
// and checks by enumerating the kernel steps that no two buffers live at
// the same step share a byte of the arena, and that reuse happens.
func nameOf(t *fusion.Tensor) string {
	if t == nil {
		return ""
	}
	return t.Name
}

func TestMemoryPlanLiveRanges(t *testing.T) {
	files, _ := filepath.Glob("../testdata/fusion/*.txtar")
	reused := false
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ar := txtar.Parse(data)
		if _, bad := golden.Section(ar, "error"); bad {
			continue
		}
		src, _ := golden.Section(ar, "graph.json")
		g, err := fusion.ParseJSON([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		for _, noFuse := range []bool{false, true} {
			p, err := fusion.Compile(g, fusion.Options{NoFuse: noFuse})
			if err != nil {
				t.Fatal(err)
			}
			sizes := map[string]int64{}
			for k, s := range g.Symbols() {
				sizes[s] = int64(3 + 2*k)
			}
			mem, err := p.Memory(sizes)
			if err != nil {
				t.Fatal(err)
			}
			live := map[string][2]int{}
			for _, b := range p.Buffers {
				if b.Role == fusion.RoleIntermediate && b.AliasOf == nil {
					live[b.Tensor.Name] = [2]int{b.First, b.Last}
				}
			}
			// A view (a reshape's output sharing its input's memory)
			// is not placed: its input lives as long as it does.
			for _, b := range p.Buffers {
				if r, ok := live[nameOf(b.AliasOf)]; ok && (r[0] > b.First || r[1] < b.Last) {
					t.Errorf("%s: %s lives %d..%d, its view %s %d..%d", file, b.AliasOf.Name, r[0], r[1], b.Tensor.Name, b.First, b.Last)
				}
			}
			if len(mem.Places) != len(live) {
				t.Fatalf("%s: %d buffers placed, %d intermediates", file, len(mem.Places), len(live))
			}
			for step := range p.Kernels {
				for i, a := range mem.Places {
					for _, b := range mem.Places[i+1:] {
						ra, rb := live[a.Name], live[b.Name]
						if ra[0] > step || ra[1] < step || rb[0] > step || rb[1] < step {
							continue
						}
						if a.Size > 0 && b.Size > 0 && a.Offset < b.Offset+b.Size && b.Offset < a.Offset+a.Size {
							t.Errorf("%s: %s [%d, %d) and %s [%d, %d) are both live at kernel %d and overlap",
								file, a.Name, a.Offset, a.Offset+a.Size, b.Name, b.Offset, b.Offset+b.Size, step)
						}
					}
				}
			}
			if mem.Peak < mem.Naive {
				reused = true
			}
		}
	}
	if !reused {
		t.Error("no plan reused any memory")
	}
}

// TestPlanWeights: the positions of a kernel's constant inputs among its
// parameters, the graph's inputs, scalar constants (folded into the code)
// and intermediates left out.
func TestPlanWeights(t *testing.T) {
	g, err := fusion.ParseJSON([]byte(`{
  "name": "w",
  "inputs": [{"name": "X", "dtype": "float32", "shape": [2, 3]}],
  "constants": [
    {"name": "W", "dtype": "float32", "shape": [3, 4], "data": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]},
    {"name": "B", "dtype": "float32", "shape": [4], "data": [1, 2, 3, 4]},
    {"name": "two", "dtype": "float32", "shape": [], "data": [2]}
  ],
  "nodes": [
    {"op": "mul", "inputs": ["X", "two"], "output": "X2"},
    {"op": "exp", "inputs": ["X2"], "output": "E"},
    {"op": "reduce_sum", "inputs": ["E"], "output": "S", "attrs": {"axes": [1], "keepdims": true}},
    {"op": "div", "inputs": ["E", "S"], "output": "P"},
    {"op": "matmul", "inputs": ["P", "W"], "output": "M"},
    {"op": "add", "inputs": ["M", "B"], "output": "Y"}
  ],
  "outputs": ["Y"]
}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, k := range p.Kernels {
		var names []string
		for _, i := range p.Weights(k) {
			names = append(names, k.Func.Params[i].Name)
		}
		var want []string
		for i, in := range k.Inputs {
			if in == "W" || in == "B" {
				want = append(want, k.Func.Params[i].Name)
				found++
			}
		}
		if fmt.Sprint(names) != fmt.Sprint(want) {
			t.Errorf("kernel %s (inputs %v): weights %v, want %v", k.Name, k.Inputs, names, want)
		}
	}
	if found != 2 {
		t.Fatalf("the kernels read W and B %d times, want 2:\n%s", found, p)
	}
}
