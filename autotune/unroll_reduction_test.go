package autotune

import (
	"regexp"
	"strings"
	"testing"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestDefaultUnrollsReductionAroundTile: Default's register tile of a
// matmul and of a dense 3x3 convolution (AVX-512) runs four steps of the
// channel reduction as straight code: the reduce loop around the tile is
// split by four and its inner part unrolled, past the window's taps for
// the convolution. A reduction that four does not divide, shorter than
// two unrolled stretches, or unrolled whole by the unroll limit (one row
// of eight steps), stays as it was. The loop over the unrolled
// stretches prefetches the next pass's operands. The unrolled kernels
// compute what the interpreter does, and finishing the schedule again
// adds nothing.
func TestDefaultUnrollsReductionAroundTile(t *testing.T) {
	longInParallel(t)
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	// rk_1 (the reduction's inner tile factor) split into rk_1_0 and an
	// unrolled rk_1_1 of 4, with the tile under it.
	unrolledFour := regexp.MustCompile(`unrolled for \((k|rc)_1_1, 0, 4\) \{\s*unrolled for`)
	prefetchOuter := regexp.MustCompile(`serial for \((k|rc)_1_0, 0, (\d+)\) attrs\(prefetch = (\d+)\)`)
	for _, c := range []unrollCase{
		{"matmul 56 x 64 x 256", matmulSrc, map[string]int{"MM": 56, "NN": 64, "KK": 256}, true, cache},
		{"matmul 56 x 64 x 8 (the shortest reduction split)", matmulSrc, map[string]int{"MM": 56, "NN": 64, "KK": 8}, true, cache},
		{"matmul 1 x 64 x 8 (unrolled whole by the limit already)", matmulSrc, map[string]int{"MM": 1, "NN": 64, "KK": 8}, false, cache},
		{"matmul, a reduction of 6", matmulSrc, map[string]int{"MM": 56, "NN": 64, "KK": 6}, false, nil},
		{"matmul, a reduction of 4", matmulSrc, map[string]int{"MM": 56, "NN": 64, "KK": 4}, false, nil},
		{"matmul, a reduction of 250", matmulSrc, map[string]int{"MM": 56, "NN": 64, "KK": 250}, false, nil},
		{"dense 3x3 over 64 channels", denseConvSrc, map[string]int{"CC": 64}, true, cache},
	} {
		f, s := defaultOf(t, c.run, avx512Server, c.src, c.sizes)
		fn := s.Func().String()
		if got := unrolledFour.MatchString(fn); got != c.unrolled {
			t.Errorf("%s: the reduction unrolled by four around the tile: %v, want %v; function:\n%s", c.description, got, c.unrolled, fn)
			continue
		}
		// The loop over the unrolled stretches prefetches the next pass's
		// operands (llvm.PrefetchKey: its own extent ahead).
		pf := prefetchOuter.FindStringSubmatch(fn)
		if c.unrolled && (pf == nil || pf[2] != pf[3]) || !c.unrolled && strings.Contains(fn, "prefetch") {
			t.Errorf("%s: the loop around the unrolled steps annotated %q, want its extent ahead when unrolled (%v); function:\n%s", c.description, pf, c.unrolled, fn)
		}
		if c.src == denseConvSrc && c.unrolled {
			// The taps run outside the unrolled channels.
			if !regexp.MustCompile(`for \(rh, 0, 3\)[^\n]*\{\s*serial for \(rw, 0, 3\)[^\n]*\{\s*unrolled for \(rc_1_1, 0, 4\)`).MatchString(fn) {
				t.Errorf("%s: want the taps outside the unrolled channels; function:\n%s", c.description, fn)
			}
		}
		before := len(s.Trace().Insts)
		if err := Finish(s); err != nil {
			t.Fatalf("%s: finishing again: %v", c.description, err)
		}
		if after := len(s.Trace().Insts); after != before {
			t.Errorf("%s: finishing again added %d steps", c.description, after-before)
		}
		// The trace replays to the same function.
		r, err := schedule.Replay(f, s.Trace(), nil)
		if err != nil {
			t.Fatalf("%s: replay: %v", c.description, err)
		}
		if r.Func().String() != fn {
			t.Errorf("%s: the replayed trace builds another function", c.description)
		}
	}
}

// TestUnrolledReductionSymbolicRows: a matmul of symbolic rows on two
// threads, whose tiles the code generator partitions into an interior and
// tails, keeps the unrolled reduction and computes what the interpreter
// does at 0, 1 and 13 rows.
func TestUnrolledReductionSymbolicRows(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(matmulSrc, "func mm(", "func mm[MM: int32](", 1)
	f, s := defaultOf(t, nil, Target{VectorLanes: 16, Threads: 2, Caches: avx512Server.Caches}, src, map[string]int{"NN": 64, "KK": 32})
	if fn := s.Func().String(); !strings.Contains(fn, "unrolled for (k_1_1, 0, 4)") {
		t.Fatalf("the reduction is not unrolled by four; function:\n%s", fn)
	}
	matchesInterpreter(t, cache, f.Name, f, s, []map[string]int64{{"MM": 0}, {"MM": 1}, {"MM": 13}}, func(sizes map[string]int64, seed uint64) map[string]any {
		return workload.Case{Name: f.Name, Func: f, Sizes: sizes}.Args(seed)
	})
}

// plainConvSrc is a dense 3x3 convolution in NHWC at 6x6 over 24 input
// channels to OO filters, its weights as the graph gives them, for
// defaultOf.
const plainConvSrc = `func conv(X: float32[8, 8, 24], W: float32[3, 3, 24, OO], Y: float32[6, 6, OO]) {
  ScheduleBlock(root) {
    serial for (h, 0, 6) {
      serial for (w, 0, 6) {
        serial for (c, 0, OO) {
          serial for (rc, 0, 24) {
            serial for (rh, 0, 3) {
              serial for (rw, 0, 3) {
                ScheduleBlock(Y) {
                  vh, vw, vc, vrc, vrh, vrw = axis.bind(h, w, c, rc, rh, rw)
                  axis.domain(vh = spatial(0, 6), vw = spatial(0, 6), vc = spatial(0, OO), vrc = reduce(0, 24), vrh = reduce(0, 3), vrw = reduce(0, 3))
                  reads(Y[vh, vw, vc], X[vh + vrh, vw + vrw, vrc], W[vrh, vrw, vrc, vc])
                  writes(Y[vh, vw, vc])
                  init {
                    Y[vh, vw, vc] = 0.0f
                  }
                  Y[vh, vw, vc] = Y[vh, vw, vc] + X[vh + vrh, vw + vrw, vrc] * W[vrh, vrw, vrc, vc]
                }
              }
            }
          }
        }
      }
    }
  }
}`

// TestDefaultPartialRowsWithoutLSR: a convolution's register tile whose
// rows are a vector and a half (24 filters, AVX-512) is compiled without
// llc's loop strength reduction (llvm.NoLSRKey on a tap loop), which gave
// every row a pointer of its own there; rows of whole vectors (32
// filters), and the same kernel on AVX2 (24 filters are three vectors),
// keep it. Each computes what the interpreter does.
func TestDefaultPartialRowsWithoutLSR(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	avx2 := avx512Server
	avx2.VectorLanes = 8
	for _, c := range []struct {
		filters int
		target  Target
		off     bool
	}{{24, avx512Server, true}, {32, avx512Server, false}, {24, avx2, false}} {
		_, s := defaultOf(t, cache, c.target, plainConvSrc, map[string]int{"OO": c.filters})
		m, err := llvm.Lower(s.Func(), llvm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tap := regexp.MustCompile(`serial for \(r[hw], 0, 3\) attrs\(no_lsr = 1\)`).MatchString(s.Func().String())
		if m.DisableLSR != c.off || tap != c.off {
			t.Errorf("%d filters, %d lanes: without loop strength reduction %v (a tap annotated: %v), want %v; function:\n%s", c.filters, c.target.VectorLanes, m.DisableLSR, tap, c.off, s.Func())
		}
	}
}
