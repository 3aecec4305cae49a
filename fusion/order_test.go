package fusion_test

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
)

// TestExecOrderLowersPeak: two branches, each a large intermediate
// reduced by a matmul to a small one, listed breadth first by the graph
// (and the sum fused into branch A's last matmul, so that branch B must
// end first): the exec-order pass runs branch B to its end before branch
// A starts, so that the two large intermediates never live at once; the
// result is unchanged, and GraphOrderMemory reports the peak it saved.
func TestExecOrderLowersPeak(t *testing.T) {
	g, err := fusion.ParseJSON([]byte(`{"name": "branches",
  "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 16]}, {"name": "W1", "dtype": "float32", "shape": [16, 256]},
    {"name": "W2", "dtype": "float32", "shape": [16, 256]}, {"name": "W3", "dtype": "float32", "shape": [256, 4]}, {"name": "W4", "dtype": "float32", "shape": [256, 4]}],
  "nodes": [
    {"op": "matmul", "inputs": ["X", "W1"], "output": "A1"},
    {"op": "matmul", "inputs": ["X", "W2"], "output": "B1"},
    {"op": "matmul", "inputs": ["A1", "W3"], "output": "A2"},
    {"op": "matmul", "inputs": ["B1", "W4"], "output": "B2"},
    {"op": "add", "inputs": ["A2", "B2"], "output": "Y"}],
  "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, k := range p.Kernels {
		order = append(order, strings.Join(k.Nodes, "+"))
	}
	if got := strings.Join(order, " "); got != "B1 B2 A1 A2+Y" {
		t.Errorf("kernels run in the order %s, want B1 B2 A1 A2+Y", got)
	}
	sizes := map[string]int64{"S": 100}
	chosen, err := p.Memory(sizes)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := p.GraphOrderMemory(sizes)
	if err != nil {
		t.Fatal(err)
	}
	// A1 and B1 are 100x256 floats (102400 bytes) each, B2 100x4
	// (1600): the graph's order holds A1, B1 and B2 at once.
	if chosen.Peak != 102400+1600 || listed.Peak != 2*102400+1600 {
		t.Errorf("peak %d in the chosen order, %d in the graph's; want %d and %d", chosen.Peak, listed.Peak, 102400+1600, 2*102400+1600)
	}
	apart, err := fusion.Compile(g, fusion.Options{NoFuse: true})
	if err != nil {
		t.Fatal(err)
	}
	compare(t, g, p, apart, sizes)
}
