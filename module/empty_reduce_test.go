package module_test

import (
	"math"
	"testing"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

// emptyReduceCase is a graph with a reduction over a symbolic axis, run at
// sizes where that axis is empty.
type emptyReduceCase struct {
	name  string
	graph string
	sizes []int64 // the symbol's values, run in order on one module
	want  func(size int64) map[string][]float32
}

var emptyReduceCases = []emptyReduceCase{
	{
		// Issue 45: W = exp(Z) read Z's stale arena bytes at S = 0 after a
		// call at S = 3.
		name: "sum_then_exp",
		graph: `{"name": "sum_exp", "inputs": [{"name": "X", "dtype": "float32", "shape": [3, "S"]}],
		  "nodes": [{"op": "reduce_sum", "inputs": ["X"], "output": "Z", "attrs": {"axes": [1]}},
		            {"op": "exp", "inputs": ["Z"], "output": "W"}],
		  "outputs": ["W"]}`,
		sizes: []int64{0, 3, 0},
		want: func(s int64) map[string][]float32 {
			if s == 0 {
				return map[string][]float32{"W": {1, 1, 1}}
			}
			return nil
		},
	},
	{
		name: "sum_outer_axes",
		graph: `{"name": "sum_outer", "inputs": [{"name": "X", "dtype": "float32", "shape": [2, "S", 3]}],
		  "nodes": [{"op": "reduce_sum", "inputs": ["X"], "output": "Y", "attrs": {"axes": [0, 1]}}],
		  "outputs": ["Y"]}`,
		sizes: []int64{0, 2, 0},
		want: func(s int64) map[string][]float32 {
			if s == 0 {
				return map[string][]float32{"Y": {0, 0, 0}}
			}
			return nil
		},
	},
	{
		name: "matmul_k",
		graph: `{"name": "mm_k", "inputs": [{"name": "A", "dtype": "float32", "shape": [3, "K"]}, {"name": "B", "dtype": "float32", "shape": ["K", 5]}],
		  "nodes": [{"op": "matmul", "inputs": ["A", "B"], "output": "C"}],
		  "outputs": ["C"]}`,
		sizes: []int64{0, 4, 0},
		want: func(s int64) map[string][]float32 {
			if s == 0 {
				return map[string][]float32{"C": make([]float32, 15)}
			}
			return nil
		},
	},
	{
		name: "max_then_add",
		graph: `{"name": "max_add", "inputs": [{"name": "X", "dtype": "float32", "shape": [2, "S"]}],
		  "nodes": [{"op": "reduce_max", "inputs": ["X"], "output": "M", "attrs": {"axes": [1]}},
		            {"op": "add", "inputs": ["M", "M"], "output": "Y"}],
		  "outputs": ["Y"]}`,
		sizes: []int64{0, 5, 0},
		want: func(s int64) map[string][]float32 {
			if s == 0 {
				inf := float32(math.Inf(-1))
				return map[string][]float32{"Y": {inf, inf}}
			}
			return nil
		},
	},
}

// symbolOf returns the graph's only symbol.
func symbolOf(t *testing.T, g *fusion.Graph) string {
	t.Helper()
	syms := g.Symbols()
	if len(syms) != 1 {
		t.Fatalf("graph %s has symbols %v, want one", g.Name, syms)
	}
	return syms[0]
}

// TestEmptyReductions: a reduction over an axis that is empty at run time
// writes its identity, in Module.Run and in the C library, whatever the
// outputs and the arena held before (the same module run at a size where
// the axis is not empty first). Elsewhere the module agrees with the
// interpreter.
func TestEmptyReductions(t *testing.T) {
	for _, c := range emptyReduceCases {
		t.Run(c.name, func(t *testing.T) {
			g, err := fusion.ParseJSON([]byte(c.graph))
			if err != nil {
				t.Fatal(err)
			}
			sym := symbolOf(t, g)
			m, err := module.Compile(g, module.Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			var cases []cCase
			for i, s := range c.sizes {
				sizes := map[string]int64{sym: s}
				ins, raw := inputsAt(t, g, sizes, uint64(7+i))
				outs, err := m.NewOutputs(ins)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range outs {
					poisonTensor(o, 7)
				}
				if err := m.Run(ins, outs); err != nil {
					t.Fatalf("%s=%d: %v", sym, s, err)
				}
				want := c.want(s)
				if want == nil {
					ref, err := reference(t, nil, g, sizes, raw)
					if err != nil {
						t.Fatal(err)
					}
					want = map[string][]float32{}
					for name, d := range ref {
						want[name] = d.([]float32)
					}
				}
				for name, w := range want {
					checkFloats(t, "Module.Run", sym, s, name, outs[name].Data.([]float32), w)
				}
				cases = append(cases, cCase{ins, outs})
			}
			needCC(t)
			got := buildAndRun(t, m, t.TempDir(), "graph", cases, false)
			for i, s := range c.sizes {
				if want := c.want(s); want != nil {
					for name, w := range want {
						checkFloats(t, "the C library", sym, s, name, got[i][name].([]float32), w)
					}
				}
			}
		})
	}
}

// poisonTensor fills a float32 tensor with v.
func poisonTensor(x module.Tensor, v float32) {
	if d, ok := x.Data.([]float32); ok {
		for i := range d {
			d[i] = v
		}
	}
}

func checkFloats(t *testing.T, who, sym string, s int64, name string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s at %s=%d: output %s has %d elements, want %d", who, sym, s, name, len(got), len(want))
	}
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		if g == w || math.Abs(g-w) <= 1e-5*math.Max(1, math.Abs(w)) {
			continue
		}
		t.Errorf("%s at %s=%d: %s[%d] = %v, want %v", who, sym, s, name, i, got[i], want[i])
	}
}
