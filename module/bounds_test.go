package module_test

import (
	"slices"
	"testing"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

// TestBoundsMakeAModuleOfTheirOwn: a graph compiled for a bucket of its
// sizes (Options.Bounds) is another module than the same graph without
// bounds or with other bounds, and computes the same at sizes in and out
// of its bucket.
func TestBoundsMakeAModuleOfTheirOwn(t *testing.T) {
	g, err := fusion.ParseJSON([]byte(`{"name": "bucketed",
  "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 24]}, {"name": "W", "dtype": "float32", "shape": [24, 20]}],
  "nodes": [{"op": "matmul", "inputs": ["X", "W"], "output": "P"}, {"op": "tanh", "inputs": ["P"], "output": "Y"}],
  "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	cache := goldenCache(t)
	plain, err := module.Compile(g, module.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	bucket := func(lo, hi int64) *autotune.SizeBounds {
		return &autotune.SizeBounds{Min: map[string]int64{"S": lo}, Max: map[string]int64{"S": hi}}
	}
	small, err := module.Compile(g, module.Options{Cache: cache, Bounds: bucket(5, 8)})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	large, err := module.Compile(g, module.Options{Cache: cache, Bounds: bucket(65, 128)})
	if err != nil {
		t.Fatal(err)
	}
	defer large.Close()
	if plain.Plan() == small.Plan() || small.Plan() == large.Plan() {
		t.Fatal("bounds did not make a module of their own")
	}
	for _, s := range []int64{0, 1, 7, 100, 130} {
		x, w := make([]float32, s*24), make([]float32, 24*20)
		for i := range x {
			x[i] = float32(i%7) / 7
		}
		for i := range w {
			w[i] = float32(i%5)/5 - 0.4
		}
		in := map[string]module.Tensor{"X": {Shape: []int64{s, 24}, Data: x}, "W": {Shape: []int64{24, 20}, Data: w}}
		var results [][]float32
		for _, m := range []*module.Module{plain, small, large} {
			out, err := m.NewOutputs(in)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Run(in, out); err != nil {
				t.Fatal(err)
			}
			results = append(results, out["Y"].Data.([]float32))
		}
		for i, r := range results[1:] {
			if !slices.EqualFunc(r, results[0], func(a, b float32) bool { return a-b < 1e-5 && b-a < 1e-5 }) {
				t.Errorf("S=%d: the module with bounds %d differs from the one without", s, i)
			}
		}
	}
}
