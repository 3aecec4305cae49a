package autotune

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

func TestVectorFill(t *testing.T) {
	for _, c := range []struct {
		n, lanes int64
		want     float64
	}{
		{7, 16, 7.0 / 16},    // one row of a 7x7 image
		{49, 16, 49.0 / 64},  // the whole image
		{56, 16, 56.0 / 64},  // 56 = 3.5 vectors, and 14, 28 fill no better
		{3136, 16, 1},        // 56x56: whole vectors
		{196, 16, 14.0 / 16}, // 14x14: 14, 28 and 49 fill no better than a row
		{7, 8, 7.0 / 8},
	} {
		if got := vectorFill(c.n, c.lanes, 64); got != c.want {
			t.Errorf("vectorFill(%d, %d) = %g, want %g", c.n, c.lanes, got, c.want)
		}
	}
}

// conv1x1 is a 1x1 convolution with a bias and ReLU over a size x size
// image, padded by pad.
func conv1x1(size, kernel, pad int) string {
	return fmt.Sprintf(`{"name": "c", "inputs": [{"name": "X", "dtype": "float32", "shape": [1, 24, %d, %d]},
  {"name": "W", "dtype": "float32", "shape": [32, 24, %d, %d]}, {"name": "B", "dtype": "float32", "shape": [32, 1, 1]}],
  "nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "Y", "attrs": {"pads": [%d, %d, %d, %d]}},
    {"op": "add", "inputs": ["Y", "B"], "output": "Z"}, {"op": "relu", "inputs": ["Z"], "output": "R"}], "outputs": ["R"]}`, size, size, kernel, kernel, pad, pad, pad, pad)
}

// TestFuseRows: a 1x1 convolution over a 7x7 image is vectorized along
// its 49 pixels (the two image loops fused) on a 512-bit target, and its
// candidates compute what the interpreter computes; with 256-bit vectors
// (7 of 8 lanes work already), in a padded 3x3 convolution (rows not
// contiguous in its input) and over a 14x14 image (no better fill) the
// loops stay apart.
func TestFuseRows(t *testing.T) {
	fuses := func(graph string, lanes int) bool {
		k := fusedKernel(t, graph)
		s, err := schedule.New(k)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.GetBlock("Y")
		if err != nil {
			t.Fatal(err)
		}
		bi, err := info(s, b)
		if err != nil {
			t.Fatal(err)
		}
		after, err := fuseRows(s, b, bi, Target{VectorLanes: lanes, Threads: 1}, 64)
		if err != nil {
			t.Fatal(err)
		}
		return after != bi
	}
	for _, c := range []struct {
		what  string
		graph string
		lanes int
		want  bool
	}{
		{"1x1 conv on 7x7, 512-bit vectors", conv1x1(7, 1, 0), 16, true},
		{"1x1 conv on 7x7, 256-bit vectors", conv1x1(7, 1, 0), 8, false},
		{"padded 3x3 conv on 7x7", conv1x1(7, 3, 1), 16, false},
		{"1x1 conv on 14x14", conv1x1(14, 1, 0), 16, false},
	} {
		if got := fuses(c.graph, c.lanes); got != c.want {
			t.Errorf("%s: fused %v, want %v", c.what, got, c.want)
		}
	}

	// Candidates with the fused loop compute what the interpreter does.
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := fusedKernel(t, conv1x1(7, 1, 0))
	c := workload.Case{Name: k.Name, Func: k, Sizes: map[string]int64{}}
	want := c.Args(1)
	if err := ast.Interpret(k, nil, want); err != nil {
		t.Fatal(err)
	}
	sp := &Space{Rules: DefaultRules(), Target: Target{VectorLanes: 16, Threads: 1}}
	for seed := uint64(1); seed <= 2; seed++ {
		s, err := sp.Sample(k, seed)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(s.Trace().String(), "fuse(") {
			t.Errorf("seed %d: the image loops are not fused:\n%s", seed, s.Trace())
		}
		kern, err := cache.Compile(s.Func(), llvm.Options{})
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, s.Trace())
		}
		got := c.Args(1)
		if err := kern.Run(nil, got); err != nil {
			t.Fatal(err)
		}
		for _, p := range k.Params {
			if e := workload.MaxRelErr(got[p.Name], want[p.Name]); e > 1e-5 {
				t.Fatalf("seed %d: %s differs from the interpreter by %g\n%s", seed, p.Name, e, s.Trace())
			}
		}
	}
}
