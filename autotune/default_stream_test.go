package autotune

import (
	"fmt"
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
// returns it with its Default for tg, checked against the interpreter
// (compiled through cache; not checked when cache is nil).
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
	if cache == nil {
		return f, s
	}
	matchesInterpreter(t, cache, f.Name, f, s, []map[string]int64{nil}, func(sizes map[string]int64, seed uint64) map[string]any {
		return workload.Case{Name: f.Name, Func: f, Sizes: sizes}.Args(seed)
	})
	return f, s
}

// avx512Server is one core of an AVX-512 server (Ice Lake's caches), the
// target of the tests that pin Default's register tiles.
var avx512Server = Target{VectorLanes: 16, Threads: 1, Caches: Caches{L1D: 48 << 10, L2: 1280 << 10}}

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

// denseConvSrc is a dense 3x3 convolution in NHWC over CC input
// channels to 32 filters in panels of 16, at 14x14, for defaultOf.
const denseConvSrc = `func conv(X: float32[16, 16, CC], W: float32[2, 3, 3, CC, 16], Y: float32[14, 14, 32]) {
  ScheduleBlock(root) {
    serial for (h, 0, 14) {
      serial for (w, 0, 14) {
        serial for (c, 0, 32) {
          serial for (rc, 0, CC) {
            serial for (rh, 0, 3) {
              serial for (rw, 0, 3) {
                ScheduleBlock(Y) {
                  vh, vw, vc, vrc, vrh, vrw = axis.bind(h, w, c, rc, rh, rw)
                  axis.domain(vh = spatial(0, 14), vw = spatial(0, 14), vc = spatial(0, 32), vrc = reduce(0, CC), vrh = reduce(0, 3), vrw = reduce(0, 3))
                  reads(Y[vh, vw, vc], X[vh + vrh, vw + vrw, vrc], W[floordiv(vc, 16), vrh, vrw, vrc, floormod(vc, 16)])
                  writes(Y[vh, vw, vc])
                  init {
                    Y[vh, vw, vc] = 0.0f
                  }
                  Y[vh, vw, vc] = Y[vh, vw, vc] + X[vh + vrh, vw + vrw, vrc] * W[floordiv(vc, 16), vrh, vrw, vrc, floormod(vc, 16)]
                }
              }
            }
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
	cache, err := sharedCache()
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

// TestDefaultChannelwise: a depthwise convolution in NHWC gets a register
// tile two vectors of channels wide whose rows run along the width only
// (channelwise) where its windows overlap at stride 1, or where at
// stride 2 its input is larger than twice the L2 and has eight vectors
// of channels; at stride 2 over a small input the rows spread over
// height and width. Windows wider than five taps at stride 1 (ConvNeXt's
// 7x7) get one vector, two rows along the height and seven along the
// width (wideWindowTile). One case of each tile shape (the smallest)
// computes what the interpreter does, compiled; every case with -long.
func TestDefaultChannelwise(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	const src = `func dw(X: float32[HP, HP, 96], W: float32[KK, KK, 96], Y: float32[HH, HH, 96]) {
  ScheduleBlock(root) {
    serial for (h, 0, HH) {
      serial for (w, 0, HH) {
        serial for (c, 0, 96) {
          serial for (rh, 0, KK) {
            serial for (rw, 0, KK) {
              ScheduleBlock(Y) {
                vh, vw, vc, vrh, vrw = axis.bind(h, w, c, rh, rw)
                axis.domain(vh = spatial(0, HH), vw = spatial(0, HH), vc = spatial(0, 96), vrh = reduce(0, KK), vrw = reduce(0, KK))
                reads(Y[vh, vw, vc], X[vh * SS + vrh, vw * SS + vrw, vc], W[vrh, vrw, vc])
                writes(Y[vh, vw, vc])
                init {
                  Y[vh, vw, vc] = 0.0f
                }
                Y[vh, vw, vc] = Y[vh, vw, vc] + X[vh * SS + vrh, vw * SS + vrw, vc] * W[vrh, vrw, vc]
              }
            }
          }
        }
      }
    }
  }
}`
	for _, c := range []struct {
		h, stride, window int
		widthOnly         bool
		description       string
		run               bool // compiled and run against the interpreter without -long
	}{
		{26, 1, 3, true, "stride 1, 110 KiB", false},
		{8, 1, 3, true, "stride 1, 38 KiB", true},
		{8, 2, 3, false, "stride 2, 108 KiB", true},
		{28, 2, 3, true, "stride 2, 1.2 MiB", false},
		{14, 1, 5, true, "5x5, stride 1", false},
		{14, 1, 7, false, "7x7, stride 1", true},
	} {
		run := cache
		if !c.run && !*long {
			run = nil // the tile is checked; the code of its shape is run at a smaller size above
		}
		_, s := defaultOf(t, run, streamTarget, src, map[string]int{"HP": c.h*c.stride + c.window - 1, "HH": c.h, "SS": c.stride, "KK": c.window})
		lanes, rows, width := vectorTileOf(s), tileRowsOf(s, "vh"), tileRowsOf(s, "vw")
		if c.window > maxSharedTaps {
			if lanes != 8 || rows != 2 || width != 7 {
				t.Errorf("%s: the register tile is %d x %d pixels of %d channels, want 2 x 7 of 8; trace:\n%s", c.description, rows, width, lanes, s.Trace())
			}
			continue
		}
		if lanes != 16 {
			t.Errorf("%s: the register tile takes %d lanes of channels, want 16; trace:\n%s", c.description, lanes, s.Trace())
		}
		if widthOnly := rows == 1; widthOnly != c.widthOnly {
			t.Errorf("%s: the register tile has %d rows along the height, want rows along the width only: %v; trace:\n%s", c.description, rows, c.widthOnly, s.Trace())
		}
	}
}

// TestDefaultGroupedConvolution: a grouped convolution in NHWC whose
// groups are as wide as the register tile's row (16 channels, two
// vectors) reads one input value for the row, a broadcast: it gets a
// dense convolution's tile, rows along height and width. Groups
// narrower than a vector (4 channels on AVX2, 4 and 8 on AVX-512) get
// vectors of a group's lanes, one a row (groupLanes), at every stride.
// They compute what the interpreter does (the AVX-512 tiles with -long).
func TestDefaultGroupedConvolution(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	const src = `func gconv(X: float32[16, 16, 64], W: float32[3, 3, GG, 64], Y: float32[14, 14, 64]) {
  ScheduleBlock(root) {
    serial for (h, 0, 14) {
      serial for (w, 0, 14) {
        serial for (c, 0, 64) {
          serial for (rc, 0, GG) {
            serial for (rh, 0, 3) {
              serial for (rw, 0, 3) {
                ScheduleBlock(Y) {
                  vh, vw, vc, vrc, vrh, vrw = axis.bind(h, w, c, rc, rh, rw)
                  axis.domain(vh = spatial(0, 14), vw = spatial(0, 14), vc = spatial(0, 64), vrc = reduce(0, GG), vrh = reduce(0, 3), vrw = reduce(0, 3))
                  reads(Y[vh, vw, vc], X[vh + vrh, vw + vrw, floordiv(vc, GG) * GG + vrc], W[vrh, vrw, vrc, vc])
                  writes(Y[vh, vw, vc])
                  init {
                    Y[vh, vw, vc] = 0.0f
                  }
                  Y[vh, vw, vc] = Y[vh, vw, vc] + X[vh + vrh, vw + vrw, floordiv(vc, GG) * GG + vrc] * W[vrh, vrw, vrc, vc]
                }
              }
            }
          }
        }
      }
    }
  }
}`
	_, s := defaultOf(t, cache, streamTarget, src, map[string]int{"GG": 16})
	if rows := tileRowsOf(s, "vh"); rows <= 1 {
		t.Errorf("16 channels a group: the register tile has %d rows along the height, want more than one; trace:\n%s", rows, s.Trace())
	}
	avx512 := streamTarget
	avx512.VectorLanes = 16
	for _, c := range []struct {
		tg           Target
		group, lanes int64
		stride       int
	}{
		{streamTarget, 4, 4, 1},
		{avx512, 8, 8, 1},
		{avx512, 4, 4, 2},
	} {
		src := strings.NewReplacer("vh + vrh", fmt.Sprintf("vh * %d + vrh", c.stride), "vw + vrw", fmt.Sprintf("vw * %d + vrw", c.stride), "X: float32[16, 16,", fmt.Sprintf("X: float32[%d, %d,", 13*c.stride+3, 13*c.stride+3)).Replace(src)
		run := cache
		if c.tg.VectorLanes != streamTarget.VectorLanes && !*long {
			run = nil // the tile is checked; code of its kind runs in the case above
		}
		_, s := defaultOf(t, run, c.tg, src, map[string]int{"GG": int(c.group)})
		if got := vectorSplitOf(s); got != c.lanes {
			t.Errorf("%d channels a group, %d lanes, stride %d: the register tile's vector is %d lanes, want %d; trace:\n%s", c.group, c.tg.VectorLanes, c.stride, got, c.lanes, s.Trace())
		}
	}
}

// TestDefaultGroupedConvolutionChannelsFirst: a grouped convolution in
// NCHW, its filters' loop not vectorized, reads its input at
// floordiv(c, G)*G + rc: the G filters of a group share that input, so
// Default tiles the filters (it used to leave them whole, one filter a
// register tile, each loading the same inputs again), by a factor that
// keeps a tile inside its groups: a multiple of G, or a divisor of G
// where the tile holds fewer filters. The code computes what the
// interpreter does.
func TestDefaultGroupedConvolutionChannelsFirst(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	const src = `func gconv_nchw(X: float32[32, XX, XX], W: float32[32, GG, 3, 3], Y: float32[32, 14, 14]) {
  ScheduleBlock(root) {
    serial for (c, 0, 32) {
      serial for (h, 0, 14) {
        serial for (w, 0, 14) {
          serial for (rc, 0, GG) {
            serial for (rh, 0, 3) {
              serial for (rw, 0, 3) {
                ScheduleBlock(Y) {
                  vc, vh, vw, vrc, vrh, vrw = axis.bind(c, h, w, rc, rh, rw)
                  axis.domain(vc = spatial(0, 32), vh = spatial(0, 14), vw = spatial(0, 14), vrc = reduce(0, GG), vrh = reduce(0, 3), vrw = reduce(0, 3))
                  reads(Y[vc, vh, vw], X[floordiv(vc, GG) * GG + vrc, vh * SS + vrh, vw * SS + vrw], W[vc, vrc, vrh, vrw])
                  writes(Y[vc, vh, vw])
                  init {
                    Y[vc, vh, vw] = 0.0f
                  }
                  Y[vc, vh, vw] = Y[vc, vh, vw] + X[floordiv(vc, GG) * GG + vrc, vh * SS + vrh, vw * SS + vrw] * W[vc, vrc, vrh, vrw]
                }
              }
            }
          }
        }
      }
    }
  }
}`
	for _, c := range []struct {
		tg            Target
		group, stride int
	}{
		{streamTarget, 4, 1},
		{streamTarget, 8, 2},
		{avx512Server, 4, 1},
		{avx512Server, 8, 2},
		{avx512Server, 16, 1},
	} {
		run := cache
		if c.tg.VectorLanes != streamTarget.VectorLanes && !*long {
			run = nil // the tile is checked; code of its kind runs in the cases above
		}
		_, s := defaultOf(t, run, c.tg, src, map[string]int{"GG": c.group, "SS": c.stride, "XX": 13*c.stride + 3})
		g, filters := int64(c.group), tileRowsOf(s, "vc")
		if filters <= 1 || filters%g != 0 && g%filters != 0 {
			t.Errorf("%d channels a group, stride %d, %d lanes: the register tile holds %d filters, want more than one, a multiple or a divisor of the group; trace:\n%s", c.group, c.stride, c.tg.VectorLanes, filters, s.Trace())
		}
	}
}

// TestDefaultPadsGroupedConvolutionPerTile: the pad of a grouped
// convolution in NHWC (in a loop of one iteration, as a batch of one
// leaves it), which the convolution reads at floordiv(c, G)*G +
// rc, goes under the convolution's first tile level, at its innermost
// loop the pad's region moves with (it used to stay at the root: a pass
// over the whole padded image of its own), and the code computes what
// the interpreter does. A dense convolution's pad (read at affine
// indices) keeps its place under the outermost loop.
func TestDefaultPadsGroupedConvolutionPerTile(t *testing.T) {
	longInParallel(t)
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	const src = `func padded_gconv(X: float32[HH, HH, CC], W: float32[3, 3, GG, CC], Y: float32[HH, HH, CC]) {
  ScheduleBlock(root) {
    alloc P: float32[PP, PP, CC]
    serial for (ph, 0, PP) {
      serial for (pw, 0, PP) {
        serial for (pc, 0, CC) {
          ScheduleBlock(P) {
            vph, vpw, vpc = axis.bind(ph, pw, pc)
            axis.domain(vph = spatial(0, PP), vpw = spatial(0, PP), vpc = spatial(0, CC))
            reads(X[min(LL, max(0, vph - 1)), min(LL, max(0, vpw - 1)), vpc])
            writes(P[vph, vpw, vpc])
            P[vph, vpw, vpc] = select(vph >= 1 && vph < EE && (vpw >= 1 && vpw < EE), X[min(LL, max(0, vph - 1)), min(LL, max(0, vpw - 1)), vpc], 0.0f)
          }
        }
      }
    }
    serial for (n, 0, 1) {
    serial for (h, 0, HH) {
      serial for (w, 0, HH) {
        serial for (c, 0, CC) {
          serial for (rc, 0, GG) {
            serial for (rh, 0, 3) {
              serial for (rw, 0, 3) {
                ScheduleBlock(Y) {
                  vh, vw, vc, vrc, vrh, vrw = axis.bind(h, w, c, rc, rh, rw)
                  axis.domain(vh = spatial(0, HH), vw = spatial(0, HH), vc = spatial(0, CC), vrc = reduce(0, GG), vrh = reduce(0, 3), vrw = reduce(0, 3))
                  reads(Y[vh, vw, vc], P[vh + vrh, vw + vrw, floordiv(vc, GG) * GG + vrc], W[vrh, vrw, vrc, vc])
                  writes(Y[vh, vw, vc])
                  init {
                    Y[vh, vw, vc] = 0.0f
                  }
                  Y[vh, vw, vc] = Y[vh, vw, vc] + P[vh + vrh, vw + vrw, floordiv(vc, GG) * GG + vrc] * W[vrh, vrw, vrc, vc]
                }
              }
            }
          }
        }
      }
    }
    }
  }
}`
	oneThread := streamTarget
	oneThread.Threads = 1
	for _, c := range []struct {
		group   int // input channels a filter reads; 32: dense
		tg      Target
		perTile bool
	}{
		{8, oneThread, true},
		{4, oneThread, true},
		{8, streamTarget, false}, // the outer loop runs in parallel: the tiles' halos would race
		{32, oneThread, false},   // read at affine indices: under the outermost loop, as before
	} {
		text := src
		if c.group == 32 {
			text = strings.ReplaceAll(text, "floordiv(vc, GG) * GG + vrc", "vrc")
		}
		_, s := defaultOf(t, cache, c.tg, text, map[string]int{"GG": c.group, "HH": 14, "PP": 16, "CC": 32, "LL": 13, "EE": 15})
		shared := sharedLoops(s.Func(), "P", "Y")
		if c.perTile && shared < 2 {
			t.Errorf("groups of %d, %d threads: the pad shares %d loops with the convolution, want it under the first tile level (two or more); trace:\n%s", c.group, c.tg.Threads, shared, s.Trace())
		}
		if !c.perTile && shared > 1 {
			t.Errorf("groups of %d, %d threads: the pad shares %d loops with the convolution, want at most the outermost; trace:\n%s", c.group, c.tg.Threads, shared, s.Trace())
		}
	}
	// A dense convolution at ResNet-50's first 3x3 (64 channels at
	// 56x56), whose outer tile levels have more than one iteration at
	// one thread: its pad stays under the outermost loop (compiled, not
	// run).
	dense := strings.ReplaceAll(src, "floordiv(vc, GG) * GG + vrc", "vrc")
	_, s := defaultOf(t, nil, avx512Server, dense, map[string]int{"GG": 64, "HH": 56, "PP": 58, "CC": 64, "LL": 55, "EE": 57})
	if shared := sharedLoops(s.Func(), "P", "Y"); shared > 1 {
		t.Errorf("dense at 56x56: the pad shares %d loops with the convolution, want at most the outermost; trace:\n%s", shared, s.Trace())
	}
}

// sharedLoops returns how many loops, outermost first, are around both
// block a and block b of f.
func sharedLoops(f *ast.Func, a, b string) int {
	var la, lb []*ast.For
	eachBlock(f, func(blk *ast.ScheduleBlock, loops []*ast.For) {
		switch blk.Name {
		case a:
			la = slices.Clone(loops)
		case b:
			lb = slices.Clone(loops)
		}
	})
	n := 0
	for n < min(len(la), len(lb)) && la[n] == lb[n] {
		n++
	}
	return n
}

// vectorSplitOf returns the innermost factor Default split the
// vectorized loop by in s: the decision of the trace's first categorical
// whose choices are a vector's lanes or a group's (0 when s has none).
func vectorSplitOf(s *schedule.Schedule) int64 {
	for _, in := range s.Trace().Insts {
		if in.Kind != "sample_categorical" || len(in.Decision) != 1 || len(in.Args) == 0 {
			continue
		}
		choices := in.Args[0].List
		if len(choices) > 0 && choices[0].Int != nil && *choices[0].Int >= 4 && *choices[0].Int <= 16 && *choices[0].Int&(*choices[0].Int-1) == 0 {
			return *choices[in.Decision[0]].Int
		}
	}
	return 0
}

// tileRowsOf returns how many values of variable v of block Y the
// innermost tile of s's scheduled function spans: the product of the
// extents of the unrolled loops Y's binding of v mentions (loop names are
// unique, so these are loops around Y).
func tileRowsOf(s *schedule.Schedule, v string) int64 {
	unrolled := map[string]int64{}
	var binding ast.Expr
	ast.Inspect(s.Func().Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.For:
			if k, ok := ast.ConstIntValue(ast.Simplify(n.Extent)); ok && n.Kind == ast.Unrolled {
				unrolled[n.Var.Name] = k
			}
		case *ast.ScheduleBlock:
			for _, it := range n.Iters {
				if n.Name == "Y" && it.Var.Name == v {
					binding = it.Binding
				}
			}
		}
		return true
	})
	rows := int64(1)
	for name, k := range unrolled {
		if binding != nil && ast.Mentions(binding, name) {
			rows *= k
		}
	}
	return rows
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
		if len(choices) > 1 && choices[0].Int != nil && (*choices[0].Int == 8 || *choices[0].Int == 16) { // a vector of AVX2 or AVX-512
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
	cache, err := sharedCache()
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

// TestDefaultAVX512Accumulators: with AVX-512's 32 vector registers a
// dense convolution's register tile takes 28 accumulators (ResNet-50's
// 3x3 convolution at 14x14: 14 pixels by two vectors of filters), and a
// stem over three colour channels, whose broadcast inputs step by three
// floats a tap, keeps to 24 (see denseAccumulators). The rows go along
// the width first (windowsAlongWidth). Both compute what the interpreter
// does.
func TestDefaultAVX512Accumulators(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		channels, most, least int64
	}{
		{64, 28, 28},
		{3, 24, 1},
	} {
		_, s := defaultOf(t, cache, avx512Server, denseConvSrc, map[string]int{"CC": int(c.channels)})
		height, width := tileRowsOf(s, "vh"), tileRowsOf(s, "vw")
		accs := height * width * vectorTileOf(s) / 16
		if accs > c.most || accs < c.least {
			t.Errorf("%d input channels: the register tile takes %d accumulators, want %d to %d; trace:\n%s", c.channels, accs, c.least, c.most, s.Trace())
		}
		if height > 1 && width < 14 {
			t.Errorf("%d input channels: the register tile is %d x %d pixels, want its rows along the width first (windowsAlongWidth); trace:\n%s", c.channels, height, width, s.Trace())
		}
	}
}

// TestDefaultAliasedPanels: a matrix-vector product whose matrix rows are
// a multiple of 4 KiB apart (1024 columns of float32) runs its reduction
// outside the panels, eight rows at a time across a thread's panels
// (aliasedPanels); at 1152 columns the panels stay outermost, each read
// row after row. The aliased one computes what the interpreter does.
func TestDefaultAliasedPanels(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n       int
		aliased bool
		above   []int64 // the vectorized loop's levels above its four vectors
	}{{1024, true, []int64{2, 1, 16}}, {1152, false, []int64{36, 1, 1}}} {
		cc := cache
		if !c.aliased {
			cc = nil
		}
		_, s := defaultOf(t, cc, streamTarget, matmulSrc, map[string]int{"MM": 1, "KK": 64, "NN": c.n})
		tiles := decisionsOf(s, "sample_perfect_tile")
		if !slices.ContainsFunc(tiles, func(d []int64) bool { return slices.Equal(d, c.above) }) {
			t.Errorf("N = %d: no tile %v of the panels; trace:\n%s", c.n, c.above, s.Trace())
		}
		eight := slices.ContainsFunc(tiles, func(d []int64) bool { return slices.Equal(d, []int64{8, 8}) })
		if eight != c.aliased {
			t.Errorf("N = %d: reduction in steps of eight rows %v, want %v; trace:\n%s", c.n, eight, c.aliased, s.Trace())
		}
	}
}

// TestDefaultAliasedRows: a matrix product whose left-hand rows are a
// multiple of 4 KiB apart (1024 or 2048 float32s) gives its register
// tile at most eight of them (aliasedRows): 7 of 28 where 768 columns
// take 14, two vectors wide on AVX-512. The aliased one computes what the
// interpreter does.
func TestDefaultAliasedRows(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k    int
		rows int64 // the register tile's
	}{{1024, 7}, {2048, 7}, {768, 14}} {
		cc := cache
		if c.k != 1024 {
			cc = nil
		}
		_, s := defaultOf(t, cc, avx512Server, matmulSrc, map[string]int{"MM": 28, "KK": c.k, "NN": 32})
		var rows []int64
		for _, d := range decisionsOf(s, "sample_perfect_tile") {
			p := int64(1)
			for _, f := range d {
				p *= f
			}
			if p == 28 && len(d) > 1 {
				rows = append(rows, d[len(d)-1])
			}
		}
		if len(rows) != 1 || rows[0] != c.rows {
			t.Errorf("K = %d: register tile rows %v, want [%d]; trace:\n%s", c.k, rows, c.rows, s.Trace())
		}
	}
}

// paddedConvSrc is denseConvSrc over a padded copy of its 14x14 input
// that the function writes itself (a pad stage, as fusion lowers a
// convolution's padding), for defaultOf.
var paddedConvSrc = strings.NewReplacer(
	"func conv(X: float32[16, 16, CC]", "func padconv(X: float32[14, 14, CC]",
	"  ScheduleBlock(root) {\n", "  ScheduleBlock(root) {\n"+padStageSrc(14, 1, "CC"),
	"X[vh + vrh, vw + vrw, vrc]", "P[vh + vrh, vw + vrw, vrc]",
).Replace(denseConvSrc)

// padStageSrc returns the nest that writes P, X (size x size pixels of
// channels) padded by pad pixels of zeros on every side, with P's
// allocation: the pad stage fusion lowers a convolution's padding to.
func padStageSrc(size, pad int, channels string) string {
	p, last := size+2*pad, size-1
	return strings.NewReplacer("PP", strconv.Itoa(p), "LAST", strconv.Itoa(last), "PAD", strconv.Itoa(pad), "SIZE", strconv.Itoa(size), "CC", channels).Replace(`    alloc P: float32[PP, PP, CC]
    serial for (ph, 0, PP) {
      serial for (pw, 0, PP) {
        serial for (pc, 0, CC) {
          ScheduleBlock(P) {
            vph, vpw, vpc = axis.bind(ph, pw, pc)
            axis.domain(vph = spatial(0, PP), vpw = spatial(0, PP), vpc = spatial(0, CC))
            reads(X[min(LAST, max(0, vph - PAD)), min(LAST, max(0, vpw - PAD)), vpc])
            writes(P[vph, vpw, vpc])
            P[vph, vpw, vpc] = select(vph - PAD >= 0 && vph - PAD < SIZE && (vpw - PAD >= 0 && vpw - PAD < SIZE), X[min(LAST, max(0, vph - PAD)), min(LAST, max(0, vpw - PAD)), vpc], 0.0f)
          }
        }
      }
    }
`)
}

// streamCases returns the tests' shared kernel cache and streamTarget on
// one thread, for the tests that compare the two thread counts.
func streamCases(t *testing.T) (*native.Cache, Target) {
	t.Helper()
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	one := streamTarget
	one.Threads = 1
	return cache, one
}

// TestDefaultThreadsSharePaddedRows: a convolution whose filters are
// streamed panel by panel (panelsOuter) and whose input is a padded copy
// the function writes itself gives its threads shares of the image's
// rows, outermost and in parallel, with the panels under them
// (rowsForThreads), so that each thread reads the rows its share of the
// pad wrote; over the input as given (a parameter) or on one thread, the
// panels stay outermost. The first computes what the interpreter does
// (all of them with -long).
func TestDefaultThreadsSharePaddedRows(t *testing.T) {
	cache, one := streamCases(t)
	for _, c := range []struct {
		src     string
		tg      Target
		byRows  bool
		explain string
	}{
		{paddedConvSrc, streamTarget, true, "padded in the function, two threads"},
		{paddedConvSrc, one, false, "padded in the function, one thread"},
		{denseConvSrc, streamTarget, false, "input as given, two threads"},
	} {
		// 64 input channels: 72 KiB of filters, over half the 128 KiB L2.
		run := cache
		if !c.byRows && !*long {
			run = nil // the panels' tiling is run by TestDefaultStreamsPanels
		}
		_, s := defaultOf(t, run, c.tg, c.src, map[string]int{"CC": 64})
		tiles := decisionsOf(s, "sample_perfect_tile")
		panelsOuter := slices.ContainsFunc(tiles, func(d []int64) bool { return slices.Equal(d, []int64{2, 1, 1}) })
		panelsUnder := slices.ContainsFunc(tiles, func(d []int64) bool { return slices.Equal(d, []int64{1, 2, 1}) })
		rowShares := slices.ContainsFunc(tiles, func(d []int64) bool { return len(d) == 4 && d[0] == 2 && d[0]*d[1]*d[2]*d[3] == 14 })
		parallelRows := parallelOverRows(s)
		if got := rowShares && panelsUnder && parallelRows; got != c.byRows || !c.byRows && !panelsOuter {
			t.Errorf("%s: rows shared by the threads %v (row shares %v, panels under them %v, parallel rows %v), panels outermost %v; want rows %v; trace:\n%s",
				c.explain, got, rowShares, panelsUnder, parallelRows, panelsOuter, c.byRows, s.Trace())
		}
	}
}

// parallelOverRows reports whether the parallel loop of s's function
// steps the convolution's rows (h, split: its name begins "h_").
func parallelOverRows(s *schedule.Schedule) bool {
	found := false
	ast.Inspect(s.Func().Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.For); ok && l.Kind == ast.Parallel && strings.HasPrefix(l.Var.Name, "h_") {
			found = true
		}
		return !found
	})
	return found
}

// paddedDepthwiseSrc is a 7x7 depthwise convolution in NHWC over 32
// channels at 8x8 that reads a padded copy of its input written by the
// function itself (as fusion lowers a window wider than five taps).
var paddedDepthwiseSrc = `func paddw(X: float32[8, 8, 32], W: float32[7, 7, 32], Y: float32[8, 8, 32]) {
  ScheduleBlock(root) {
` + padStageSrc(8, 3, "32") + `    serial for (h, 0, 8) {
      serial for (w, 0, 8) {
        serial for (c, 0, 32) {
          serial for (rh, 0, 7) {
            serial for (rw, 0, 7) {
              ScheduleBlock(Y) {
                vh, vw, vc, vrh, vrw = axis.bind(h, w, c, rh, rw)
                axis.domain(vh = spatial(0, 8), vw = spatial(0, 8), vc = spatial(0, 32), vrh = reduce(0, 7), vrw = reduce(0, 7))
                reads(Y[vh, vw, vc], P[vh + vrh, vw + vrw, vc], W[vrh, vrw, vc])
                writes(Y[vh, vw, vc])
                init {
                  Y[vh, vw, vc] = 0.0f
                }
                Y[vh, vw, vc] = Y[vh, vw, vc] + P[vh + vrh, vw + vrw, vc] * W[vrh, vrw, vc]
              }
            }
          }
        }
      }
    }
  }
}`

// TestDefaultThreadsShareWideDepthwisePanels: a depthwise convolution
// with a window wider than five taps over a padded copy its function
// writes runs its panels of channels in parallel on more than one thread
// and computes the pad under that loop, a panel at a time, so that each
// thread pads what it reads (parallelPanelLocation); on one thread the
// pad stays a pass of its own at the root. Both compute what the
// interpreter does (the one-thread case with -long).
func TestDefaultThreadsShareWideDepthwisePanels(t *testing.T) {
	cache, one := streamCases(t)
	for _, c := range []struct {
		tg       Target
		perPanel bool
	}{{streamTarget, true}, {one, false}} {
		run := cache
		if !c.perPanel && !*long {
			run = nil
		}
		_, s := defaultOf(t, run, c.tg, paddedDepthwiseSrc, nil)
		// The pad block under the parallel loop, which steps the channels.
		var padUnderParallel, parallelChannels bool
		eachBlock(s.Func(), func(b *ast.ScheduleBlock, loops []*ast.For) {
			for _, l := range loops {
				if l.Kind != ast.Parallel {
					continue
				}
				if b.Name == "Y" {
					parallelChannels = strings.HasPrefix(l.Var.Name, "c_")
				}
				if b.Name == "P" {
					padUnderParallel = true
				}
			}
		})
		if got := padUnderParallel && parallelChannels; got != c.perPanel {
			t.Errorf("%d threads: pad under the parallel loop %v, the parallel loop steps the channels %v; want both %v; trace:\n%s",
				c.tg.Threads, padUnderParallel, parallelChannels, c.perPanel, s.Trace())
		}
	}
}
