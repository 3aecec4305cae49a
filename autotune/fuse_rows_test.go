package autotune

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

func TestVectorFill(t *testing.T) {
	for _, c := range []struct {
		n, lanes int64
		want     float64
	}{
		{7, 16, 7.0 / 48},      // one row of a 7x7 image: 4 + 2 + 1 lanes, three instructions
		{49, 16, 49.0 / 64},    // the whole image: 16 + 16 + 16 + 1
		{56, 16, 56.0 / 64},    // 56 = 3.5 vectors: 16 + 16 + 16 + 8, and 14, 28 fill no better
		{3136, 16, 1},          // 56x56: whole vectors
		{196, 16, 196.0 / 208}, // 14x14: tiles of 16 or 32 and a last one of 4 (14 and 28: three instructions a row)
		{14, 16, 14.0 / 48},    // a row of a 14x14 image: 8 + 4 + 2
		{7, 8, 7.0 / 24},
		{49, 8, 49.0 / 56},                        // 7x7 on 256-bit vectors: 6 whole and one odd lane
		{50257, 16, 50257.0 / (1570*2*16 + 2*16)}, // 29 divides it, but tiles of 32 and a tail of 17 fill better
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

// TestFuseRows: a 1x1 convolution over a 7x7 or 14x14 image is
// vectorized along its pixels (the two image loops fused), with 512-bit
// and 256-bit vectors (a row of 7 takes three instructions, 4 + 2 + 1
// lanes; 49 pixels take 7 of 8 lanes, or 4 vectors of 16), and its
// candidates compute what the interpreter computes; in a padded 3x3
// convolution (rows not contiguous in its input) the loops stay apart.
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
		{"1x1 conv on 7x7, 256-bit vectors", conv1x1(7, 1, 0), 8, true},
		{"padded 3x3 conv on 7x7", conv1x1(7, 3, 1), 16, false},
		{"1x1 conv on 14x14", conv1x1(14, 1, 0), 16, true},
	} {
		if got := fuses(c.graph, c.lanes); got != c.want {
			t.Errorf("%s: fused %v, want %v", c.what, got, c.want)
		}
	}

	// Candidates with the fused loop (and the default schedule, whose
	// 196 pixels run in tiles of 32 and a last one of 4, without a
	// gather) compute what the interpreter does.
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{7, 14} {
		k := fusedKernel(t, conv1x1(size, 1, 0))
		c := workload.Case{Name: k.Name, Func: k, Sizes: map[string]int64{}}
		want := c.Args(1)
		if err := ast.Interpret(k, nil, want); err != nil {
			t.Fatal(err)
		}
		target := Target{VectorLanes: 16, Threads: 1}
		sp := &Space{Rules: DefaultRules(), Target: target}
		for seed := uint64(0); seed <= 2; seed++ {
			var s *schedule.Schedule
			if seed == 0 {
				s, err = Default(k, target)
			} else {
				s, err = sp.Sample(k, seed)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(s.Trace().String(), "fuse(") {
				t.Errorf("%dx%d, seed %d: the image loops are not fused:\n%s", size, size, seed, s.Trace())
			}
			if seed == 0 {
				// The accesses through the fused pixels, the compacted
				// accumulators' included, are whole vectors.
				m, err := llvm.Lower(s.Func(), llvm.Options{VectorBits: 512})
				if err != nil {
					t.Fatal(err)
				}
				if ir := m.String(); strings.Contains(ir, "@llvm.masked.gather") || strings.Contains(ir, "@llvm.masked.scatter") {
					t.Errorf("%dx%d: the default schedule gathers or scatters:\n%s", size, size, s.Trace())
				}
			}
			kern, err := cache.Compile(s.Func(), llvm.Options{})
			if err != nil {
				t.Fatalf("%dx%d, seed %d: %v\n%s", size, size, seed, err, s.Trace())
			}
			got := c.Args(1)
			if err := kern.Run(nil, got); err != nil {
				t.Fatal(err)
			}
			for _, p := range k.Params {
				if e := check.MaxRelErr(got[p.Name], want[p.Name]); e > 1e-5 {
					t.Fatalf("%dx%d, seed %d: %s differs from the interpreter by %g\n%s", size, size, seed, p.Name, e, s.Trace())
				}
			}
		}
	}
}

// TestFusedPixelsContiguous: MobileNetV2's 1x1 convolutions, whose
// default schedules run the fused pixels in tiles with a tail and keep
// the accumulators of a tile of output channels in a compacted buffer
// (indexed from the tile's first channel), load and store every vector
// whole: no gather, no scatter (a gather per accumulator ran 576->160
// at 7x7 40 times slower than oneDNN).
func TestFusedPixelsContiguous(t *testing.T) {
	for _, c := range []struct{ in, out, size int }{{576, 160, 7}, {384, 96, 14}, {96, 24, 56}} {
		graph := fmt.Sprintf(`{"name": "c", "inputs": [{"name": "X", "dtype": "float32", "shape": [1, %[1]d, %[3]d, %[3]d]},
  {"name": "W", "dtype": "float32", "shape": [%[2]d, %[1]d, 1, 1]}, {"name": "B", "dtype": "float32", "shape": [%[2]d, 1, 1]}],
  "nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "Y"}, {"op": "add", "inputs": ["Y", "B"], "output": "Z"}], "outputs": ["Z"]}`, c.in, c.out, c.size)
		k := fusedKernel(t, graph)
		s, err := Default(k, Target{VectorLanes: 16, Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		m, err := llvm.Lower(s.Func(), llvm.Options{VectorBits: 512})
		if err != nil {
			t.Fatal(err)
		}
		if ir := m.String(); strings.Contains(ir, "@llvm.masked.gather") || strings.Contains(ir, "@llvm.masked.scatter") {
			t.Errorf("%d->%d at %dx%d: the default schedule gathers or scatters:\n%s", c.in, c.out, c.size, c.size, s.Func())
		}
	}
}
