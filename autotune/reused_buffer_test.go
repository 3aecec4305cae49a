package autotune

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/workload"
)

// TestSymbolicRowBufferReused: a softmax over rows of symbolic length
// keeps its exponentials in a buffer of one row (compacted by valid
// bounds of the region its split loops write and read), allocated once
// per call and reused by every row, instead of a whole [12, S, S] copy
// per call; at two threads each thread's chunk has its own. Checked
// against the interpreter at sizes 0, 1, 13 and 40.
func TestSymbolicRowBufferReused(t *testing.T) {
	g, err := fusion.ParseJSON([]byte(`{"name": "rows",
  "inputs": [{"name": "X", "dtype": "float32", "shape": [12, "S", "S"]}],
  "nodes": [{"op": "softmax", "inputs": ["X"], "output": "Y", "attrs": {"axis": -1}}],
  "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := p.Kernels[0].Func
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 2} {
		tg := Target{VectorLanes: llvm.Host().VectorBits() / 32, Threads: threads}
		s, err := Default(f, tg)
		if err != nil {
			t.Fatal(err)
		}
		m, err := llvm.Lower(s.Func(), llvm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if ir := m.String(); !strings.Contains(ir, "reused.") {
			t.Errorf("%d threads: no temporary is reused across rows:\n%s", threads, s.Func())
		}
		sizes := []map[string]int64{{"S": 0}, {"S": 1}, {"S": 13}, {"S": 40}}
		args := func(sz map[string]int64, seed uint64) map[string]any {
			return workload.Case{Name: f.Name, Func: f, Sizes: sz}.Args(seed)
		}
		matchesInterpreter(t, cache, f.Name, f, s, sizes, args)
	}
}
