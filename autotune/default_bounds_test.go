package autotune

import (
	"testing"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/workload"
)

// TestDefaultForABucket: with bounds on the symbolic sizes (a bucket, as
// package lazy gives through module.Options.Bounds), Default tiles a
// symbolic loop for the bucket's largest extent; the schedule still
// computes what the interpreter does at every size, in the bucket and out
// of it (the tails are guarded), and differs from the unbounded one.
func TestDefaultForABucket(t *testing.T) {
	g, err := fusion.ParseJSON([]byte(`{"name": "bucketed",
  "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 48]}, {"name": "W", "dtype": "float32", "shape": [48, 40]},
             {"name": "B", "dtype": "float32", "shape": [40]}],
  "nodes": [{"op": "matmul", "inputs": ["X", "W"], "output": "P"},
            {"op": "add", "inputs": ["P", "B"], "output": "Q"},
            {"op": "relu", "inputs": ["Q"], "output": "Y"}],
  "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := fusion.Compile(g, fusion.Options{PlainWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := Target{VectorLanes: llvm.Host().VectorBits() / 32, Threads: 2}
	bounded := plain
	bounded.Bounds = &SizeBounds{Min: map[string]int64{"S": 65}, Max: map[string]int64{"S": 128}}
	for _, k := range p.Kernels {
		f := k.Func
		sizes := []map[string]int64{{"S": 65}, {"S": 100}, {"S": 128}, {"S": 1}, {"S": 0}, {"S": 13}, {"S": 300}}
		args := func(s map[string]int64, seed uint64) map[string]any {
			return workload.Case{Name: f.Name, Func: f, Sizes: s}.Args(seed)
		}
		c := defaultCase{k.Name, f, sizes, args}
		s := deterministicDefault(t, c, bounded, true)
		u := deterministicDefault(t, c, plain, false)
		if s.Trace().String() == u.Trace().String() {
			t.Errorf("%s: the bucket 65..128 changed nothing of its default schedule:\n%s", k.Name, s.Trace())
		}
		matchesInterpreter(t, cache, k.Name+" (bucket 65..128)", f, s, sizes, args)
	}
}
