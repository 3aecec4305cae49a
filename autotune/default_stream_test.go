package autotune

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// decisionsOf lists the decisions of s's sampling instructions of kind, in
// the order the trace has them.
func decisionsOf(s *schedule.Schedule, kind string) [][]int64 {
	var out [][]int64
	for _, in := range s.Trace().Insts {
		if in.Kind == kind {
			out = append(out, in.Decision)
		}
	}
	return out
}

// defaultOf parses src with its sizes substituted (NAME -> value) and
// returns it with its Default for tg, checked against the interpreter.
func defaultOf(t *testing.T, cache *native.Cache, tg Target, src string, subst map[string]int) (*ast.Func, *schedule.Schedule) {
	t.Helper()
	for name, v := range subst {
		src = strings.ReplaceAll(src, name, strconv.Itoa(v))
	}
	f, err := ast.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Default(f, tg)
	if err != nil {
		t.Fatal(err)
	}
	matchesInterpreter(t, cache, f.Name, f, s, []map[string]int64{nil}, func(sizes map[string]int64, seed uint64) map[string]any {
		return workload.Case{Name: f.Name, Func: f, Sizes: sizes}.Args(seed)
	})
	return f, s
}

// matmulSrc is C[MM, NN] = A[MM, KK] B[KK, NN], its sizes placeholders
// for defaultOf.
const matmulSrc = `func mm(A: float32[MM, KK], B: float32[KK, NN], C: float32[MM, NN]) {
  ScheduleBlock(root) {
    serial for (i, 0, MM) {
      serial for (j, 0, NN) {
        serial for (k, 0, KK) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, MM), vj = spatial(0, NN), vk = reduce(0, KK))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0f
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
}`

// streamTarget is an AVX2 machine with a 128 KiB L2 (small, so that the
// interpreter checks small functions), on two threads.
var streamTarget = Target{VectorLanes: 8, Threads: 2, Caches: Caches{L1D: 32 << 10, L2: 128 << 10}}

// TestDefaultStreamsPanels: a product whose weight matrix (indexed by
// the vectorized loop's columns alone) is larger than half the L2 is
// tiled with its column panels outermost and every row inside a panel
// (panelsOuter), so the weights are read once a call; a small weight
// keeps the rows' tiles outermost. Both compute what the interpreter
// does.
func TestDefaultStreamsPanels(t *testing.T) {
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k       int
		streams bool
	}{{128, true}, {32, false}} {
		_, s := defaultOf(t, cache, streamTarget, matmulSrc, map[string]int{"MM": 7, "KK": c.k, "NN": 256})
		// The levels of the vectorized loop above its two vectors: 16
		// panels, all at the outermost level when streamed.
		outer := slices.ContainsFunc(decisionsOf(s, "sample_perfect_tile"), func(d []int64) bool { return slices.Equal(d, []int64{16, 1, 1}) })
		if outer != c.streams {
			t.Errorf("K = %d (weights %d KiB): panels outermost %v, want %v; trace:\n%s", c.k, c.k*256*4>>10, outer, c.streams, s.Trace())
		}
	}
}

// TestDefaultChannelwise: a depthwise convolution in NHWC over an input
// larger than twice the L2, with eight vectors of channels or more, gets
// a register tile four vectors wide whose rows run along the width only
// (channelwise); over a small input it keeps two vectors. Both compute
// what the interpreter does.
func TestDefaultChannelwise(t *testing.T) {
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const src = `func dw(X: float32[HP, HP, 96], W: float32[3, 3, 96], Y: float32[HH, HH, 96]) {
  ScheduleBlock(root) {
    serial for (h, 0, HH) {
      serial for (w, 0, HH) {
        serial for (c, 0, 96) {
          serial for (rh, 0, 3) {
            serial for (rw, 0, 3) {
              ScheduleBlock(Y) {
                vh, vw, vc, vrh, vrw = axis.bind(h, w, c, rh, rw)
                axis.domain(vh = spatial(0, HH), vw = spatial(0, HH), vc = spatial(0, 96), vrh = reduce(0, 3), vrw = reduce(0, 3))
                reads(Y[vh, vw, vc], X[vh + vrh, vw + vrw, vc], W[vrh, vrw, vc])
                writes(Y[vh, vw, vc])
                init {
                  Y[vh, vw, vc] = 0.0f
                }
                Y[vh, vw, vc] = Y[vh, vw, vc] + X[vh + vrh, vw + vrw, vc] * W[vrh, vrw, vc]
              }
            }
          }
        }
      }
    }
  }
}`
	for _, c := range []struct {
		h     int
		lanes int64
	}{{26, 32}, {8, 16}} {
		_, s := defaultOf(t, cache, streamTarget, src, map[string]int{"HP": c.h + 2, "HH": c.h})
		if lanes := vectorTileOf(s); lanes != c.lanes {
			t.Errorf("%dx%d pixels: the register tile takes %d lanes of channels, want %d; trace:\n%s", c.h, c.h, lanes, c.lanes, s.Trace())
		}
	}
}

// vectorTileOf returns the lanes of the register tile's vector Default
// chose in s: the categorical among multiples of 8 lanes, starting at one
// vector (0 when s has none).
func vectorTileOf(s *schedule.Schedule) int64 {
	var lanes int64
	for _, in := range s.Trace().Insts {
		if in.Kind != "sample_categorical" || len(in.Decision) != 1 || len(in.Args) == 0 {
			continue
		}
		choices := in.Args[0].List
		if len(choices) > 1 && choices[0].Int != nil && *choices[0].Int == 8 {
			lanes = *choices[in.Decision[0]].Int
		}
	}
	return lanes
}

// TestDefaultVectorWidths: a matrix-vector product (one row) takes four
// vectors, with a tail where they do not divide its columns (1000 of 8
// lanes), its only independent accumulators (rowless); 24 columns, which
// two vectors do not divide, take three vectors rather than one; other
// products keep two. Each computes what the interpreter does.
func TestDefaultVectorWidths(t *testing.T) {
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m, n  int
		lanes int64
	}{{1, 1000, 32}, {1, 24, 24}, {1, 96, 32}, {30, 24, 24}, {30, 1000, 8}, {30, 256, 16}} {
		if _, s := defaultOf(t, cache, streamTarget, matmulSrc, map[string]int{"MM": c.m, "KK": 48, "NN": c.n}); vectorTileOf(s) != c.lanes {
			t.Errorf("[%d, 48] x [48, %d]: the register tile takes %d lanes, want %d; trace:\n%s", c.m, c.n, vectorTileOf(s), c.lanes, s.Trace())
		}
	}
}
