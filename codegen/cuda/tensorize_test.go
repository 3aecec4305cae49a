package cuda_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/gputest"
	"github.com/loom-go/loom/schedule"
)

// tensorCoreGemm is C[M, N] = A[M, K] · B[K, N] with factors of type in
// and float32 sums, scheduled for mma.sync m16n8k16: a block per 16 rows
// of C, a warp (threadIdx.y) per 8 columns, the init spread over the
// warp's 32 lanes (threadIdx.x), and the 16 x 8 x 16 nest under the k
// tiles tensorized.
func tensorCoreGemm(t *testing.T, in string, m, n, kk int) *schedule.Schedule {
	t.Helper()
	return tensorCoreGemmLanes(t, in, m, n, kk, 32)
}

// tensorCoreGemmLanes is tensorCoreGemm with the init spread over lanes
// threads along x (none: 0).
func tensorCoreGemmLanes(t *testing.T, in string, m, n, kk, lanes int) *schedule.Schedule {
	t.Helper()
	s, err := schedule.New(gemmFunc(t, in, m, n, kk))
	if err != nil {
		t.Fatal(err)
	}
	tensorizeMMALanes(t, s, "C", "mma_m16n8k16_"+map[string]string{"float16": "f16", "bfloat16": "bf16"}[in]+"_f32", lanes)
	return s
}

// gemmFunc is C[M, N] = A[M, K] · B[K, N] with factors of type in and
// float32 sums.
func gemmFunc(t *testing.T, in string, m, n, kk int) *ast.Func {
	t.Helper()
	f, err := ast.Parse(fmt.Sprintf(`func gemm(A: %[1]s[%[2]d, %[4]d], B: %[1]s[%[4]d, %[3]d], C: float32[%[2]d, %[3]d]) {
  ScheduleBlock(root) {
    serial for (i, 0, %[2]d) {
      serial for (j, 0, %[3]d) {
        serial for (k, 0, %[4]d) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, %[2]d), vj = spatial(0, %[3]d), vk = reduce(0, %[4]d))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0f
            }
            C[vi, vj] = C[vi, vj] + float32(A[vi, vk]) * float32(B[vk, vj])
          }
        }
      }
    }
  }
}`, in, m, n, kk))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTensorCoreGemm: a gemm tensorized for mma.sync lowers to calls of
// the helper (each lane's accumulators in registers across the k steps),
// compiles to PTX with the Tensor Core instruction for sm_80 and sm_90,
// and in the emulation matches the interpreter (the sums in another
// order: within float32 rounding), for float16 and bfloat16 factors, at
// several shapes.
func TestTensorCoreGemm(t *testing.T) {
	for _, c := range []struct {
		in      string
		m, n, k int
	}{{"float16", 16, 16, 16}, {"float16", 32, 16, 48}, {"bfloat16", 32, 16, 32}} {
		t.Run(fmt.Sprintf("%s/%dx%dx%d", c.in, c.m, c.n, c.k), func(t *testing.T) {
			s := tensorCoreGemm(t, c.in, c.m, c.n, c.k)
			short := map[string]string{"float16": "f16", "bfloat16": "bf16"}[c.in]
			m, err := cuda.Lower(s.Func(), cuda.Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, ast.Print(s.Func()))
			}
			// The accumulators stay in registers across the k steps:
			// loaded before their loop, the nest loads A and B only.
			if !strings.Contains(m.Source, "loom_mma_ld_c_f32(&") || !strings.Contains(m.Source, "loom_mma_m16n8k16_"+short+"_f32(loom_a, loom_b, loom_acc") {
				t.Fatalf("no mma call with its accumulators in registers:\n%s", m.Source)
			}
			bits := ast.Float16Bits
			if c.in == "bfloat16" {
				bits = ast.BFloat16Bits
			}
			runTensorCore(t, s, bits, "C")
		})
	}
}

// TestTensorCoreRefused: a tensorized nest that a warp cannot run as one
// is refused where it lowers, with the reason: a block whose x axis is
// not one warp.
func TestTensorCoreRefused(t *testing.T) {
	for _, lanes := range []int{0, 64} {
		s := tensorCoreGemmLanes(t, "float16", 32, 16, 32, lanes)
		_, err := cuda.Lower(s.Func(), cuda.Options{})
		if err == nil || !strings.Contains(err.Error(), "the block must be 32 threads along x") {
			t.Errorf("%d lanes: got %v", lanes, err)
		}
	}
}

// tensorizeMMA schedules block name of s, a contraction whose last three
// loops are i, j and k (any loops before them become blocks along y, then
// z): i by 16 (the outer part a block along x), j by 8 (the outer part a
// warp, threadIdx.y), k by 16, the init spread over the warp's lanes, and
// the 16 x 8 x 16 nest tensorized with intrinsic.
func tensorizeMMA(t *testing.T, s *schedule.Schedule, name, intrinsic string) {
	t.Helper()
	tensorizeMMALanes(t, s, name, intrinsic, 32)
}

// tensorizeMMALanes is tensorizeMMA with the init spread over lanes
// threads along x (none: 0).
func tensorizeMMALanes(t *testing.T, s *schedule.Schedule, name, intrinsic string, lanes int) {
	t.Helper()
	tensorizeMMAAs(t, s, name, intrinsic, lanes, false)
}

// tensorizeMMAAs is tensorizeMMALanes; with blockize, the 16 x 8 x 16
// nest becomes a block of its own (schedule.Blockize) and the block is
// tensorized (TVM's way) instead of the nest's loop.
func tensorizeMMAAs(t *testing.T, s *schedule.Schedule, name, intrinsic string, lanes int, blockize bool) {
	t.Helper()
	h := &steps{s: s}
	ls := h.loops(name)
	if h.err != nil {
		t.Fatal(h.err)
	}
	n := len(ls)
	var is, js, ks, inits []schedule.Loop
	var init schedule.Block
	h.do(func() (err error) { is, err = s.Split(ls[n-3], -1, 16); return err })
	h.do(func() (err error) { js, err = s.Split(ls[n-2], -1, 8); return err })
	h.do(func() (err error) { ks, err = s.Split(ls[n-1], -1, 16); return err })
	h.do(func() error { return s.Reorder(is[0], js[0], ks[0], is[1], js[1], ks[1]) })
	for i, axis := range []string{"blockIdx.y", "blockIdx.z"} {
		if i < n-3 {
			h.do(func() error { return s.Bind(ls[i], axis) })
		}
	}
	h.do(func() error { return s.Bind(is[0], "blockIdx.x") })
	h.do(func() error { return s.Bind(js[0], "threadIdx.y") })
	h.do(func() (err error) { init, err = s.DecomposeReduction(h.block(name), ks[0]); return err })
	h.do(func() (err error) { inits, err = s.GetLoops(init); return err })
	h.do(func() error {
		if lanes == 0 {
			return nil
		}
		fused, err := s.Fuse(inits[len(inits)-2], inits[len(inits)-1])
		if err != nil {
			return err
		}
		parts, err := s.Split(fused, -1, lanes)
		if err != nil {
			return err
		}
		return s.Bind(parts[1], "threadIdx.x")
	})
	h.do(func() error {
		if !blockize {
			return s.Tensorize(is[1], intrinsic)
		}
		tile, err := s.Blockize(is[1])
		if err != nil {
			return err
		}
		return s.TensorizeBlock(tile, intrinsic)
	})
	if h.err != nil {
		t.Fatal(schedule.Explain(h.err))
	}
}

// TestTensorCoreBlockized: a gemm whose 16 x 8 x 16 tile nest was made a
// block (Blockize) and the block tensorized lowers as the tensorized nest
// does (its accumulators in registers across the k steps), compiles to
// PTX and matches the interpreter in the emulation, for float16 and
// bfloat16 factors.
func TestTensorCoreBlockized(t *testing.T) {
	for _, c := range []struct {
		in      string
		m, n, k int
	}{{"float16", 32, 16, 48}, {"bfloat16", 16, 24, 32}} {
		t.Run(fmt.Sprintf("%s/%dx%dx%d", c.in, c.m, c.n, c.k), func(t *testing.T) {
			g := gemmFunc(t, c.in, c.m, c.n, c.k)
			s, err := schedule.New(g)
			if err != nil {
				t.Fatal(err)
			}
			short := map[string]string{"float16": "f16", "bfloat16": "bf16"}[c.in]
			tensorizeMMAAs(t, s, "C", "mma_m16n8k16_"+short+"_f32", 32, true)
			if !strings.Contains(ast.Print(s.Func()), `attrs(tensorize = "mma_m16n8k16_`+short+`_f32")`) {
				t.Fatalf("no tensorized block:\n%s", ast.Print(s.Func()))
			}
			m, err := cuda.Lower(s.Func(), cuda.Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, ast.Print(s.Func()))
			}
			if !strings.Contains(m.Source, "loom_mma_ld_c_f32(&") || !strings.Contains(m.Source, "(loom_a, loom_b, loom_acc") {
				t.Fatalf("no mma call with its accumulators in registers:\n%s", m.Source)
			}
			bits := ast.Float16Bits
			if c.in == "bfloat16" {
				bits = ast.BFloat16Bits
			}
			runTensorCore(t, s, bits, "C")
		})
	}
}

// bindElementwise runs block name's loops, fused, 64 threads a block.
func bindElementwise(t *testing.T, s *schedule.Schedule, name string) {
	t.Helper()
	h := &steps{s: s}
	ls := h.loops(name)
	fused := ls[0]
	for _, l := range ls[1:] {
		h.do(func() (err error) { fused, err = s.Fuse(fused, l); return err })
	}
	var parts []schedule.Loop
	h.do(func() (err error) { parts, err = s.Split(fused, -1, 64); return err })
	h.do(func() error { return s.Bind(parts[0], "blockIdx.x") })
	h.do(func() error { return s.Bind(parts[1], "threadIdx.x") })
	if h.err != nil {
		t.Fatal(schedule.Explain(h.err))
	}
}

// runTensorCore lowers s, checks the PTX (sm_80, sm_90) for the Tensor
// Core instruction, runs it in the emulation on random 16-bit factors and
// compares every float32 output with the interpreter's.
func runTensorCore(t *testing.T, s *schedule.Schedule, bits func(float64) uint16, outputs ...string) {
	t.Helper()
	for _, arch := range []string{"sm_80", "sm_90"} {
		m, err := cuda.Lower(s.Func(), cuda.Options{Arch: arch})
		if err != nil {
			t.Fatalf("%v\n%s", err, ast.Print(s.Func()))
		}
		ptx, err := cuda.CompilePTX(m)
		if err != nil {
			t.Fatalf("%s: %v\n%s", arch, err, m.Source)
		}
		if !strings.Contains(ptx, "mma.sync.aligned.m16n8k16") {
			t.Errorf("%s: no mma.sync in the PTX", arch)
		}
		if arch != "sm_80" {
			continue
		}
		r := rand.New(rand.NewPCG(21, 22))
		got, want := map[string]any{}, map[string]any{}
		for _, p := range s.Func().Params {
			n := int64(1)
			for _, d := range p.Shape {
				v, _ := ast.ConstIntValue(d)
				n *= v
			}
			switch p.DType {
			case ast.Float16, ast.BFloat16:
				d := make([]uint16, n)
				for i := range d {
					d[i] = bits(r.NormFloat64())
				}
				got[p.Name], want[p.Name] = d, append([]uint16(nil), d...)
			default:
				d := make([]float32, n)
				for i := range d {
					d[i] = float32(r.NormFloat64())
				}
				got[p.Name], want[p.Name] = d, append([]float32(nil), d...)
			}
		}
		if err := ast.Interpret(s.Func(), nil, want); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err = gputest.Run(ctx, m, nil, got)
		cancel()
		if err != nil {
			t.Fatalf("%v\n%s", err, m.Source)
		}
		for _, out := range outputs {
			if g, ok := got[out].([]uint16); ok {
				// float16 sums: the interpreter rounds every partial sum,
				// the Tensor Core at the end.
				w := want[out].([]uint16)
				scale := 1.0
				for i := range w {
					scale = math.Max(scale, math.Abs(ast.Float16Value(w[i])))
				}
				for i := range w {
					if d := math.Abs(ast.Float16Value(g[i]) - ast.Float16Value(w[i])); d > 2e-2*scale {
						t.Fatalf("%s[%d] = %g, the interpreter %g\n%s", out, i, ast.Float16Value(g[i]), ast.Float16Value(w[i]), m.Source)
					}
				}
				continue
			}
			g, w := got[out].([]float32), want[out].([]float32)
			for i := range w {
				if math.Abs(float64(g[i]-w[i])) > 1e-4*(1+math.Abs(float64(w[i]))) {
					t.Fatalf("%s[%d] = %g, the interpreter %g\n%s", out, i, g[i], w[i], m.Source)
				}
			}
		}
	}
}

// TestTensorCoreGemmBiasReLU: C = A · B on Tensor Cores (float16
// factors), then Y = max(C + bias, 0) in a kernel of its own.
func TestTensorCoreGemmBiasReLU(t *testing.T) {
	f, err := ast.Parse(`func gemm_bias_relu(A: float16[32, 48], B: float16[48, 32], Bias: float32[32], C: float32[32, 32], Y: float32[32, 32]) {
  ScheduleBlock(root) {
    serial for (i, 0, 32) {
      serial for (j, 0, 32) {
        serial for (k, 0, 48) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 32), vj = spatial(0, 32), vk = reduce(0, 48))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0f
            }
            C[vi, vj] = C[vi, vj] + float32(A[vi, vk]) * float32(B[vk, vj])
          }
        }
      }
    }
    serial for (i, 0, 32) {
      serial for (j, 0, 32) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 32), vj = spatial(0, 32))
          reads(C[vi, vj], Bias[vj])
          writes(Y[vi, vj])
          Y[vi, vj] = max(C[vi, vj] + Bias[vj], 0.0f)
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedule.New(f)
	if err != nil {
		t.Fatal(err)
	}
	tensorizeMMA(t, s, "C", "mma_m16n8k16_f16_f32")
	bindElementwise(t, s, "Y")
	runTensorCore(t, s, ast.Float16Bits, "C", "Y")
}

// TestTensorCoreAttentionScores: multi-head attention scores S = Q · Kᵀ
// (bfloat16 Q and K, [heads, tokens, 32], K's rows the keys: the
// transposed-B instruction), a head per block along y, then the scaling
// P = S / 8 in a kernel of its own.
func TestTensorCoreAttentionScores(t *testing.T) {
	f, err := ast.Parse(`func scores(Q: bfloat16[2, 32, 32], K: bfloat16[2, 16, 32], S: float32[2, 32, 16], P: float32[2, 32, 16]) {
  ScheduleBlock(root) {
    serial for (h, 0, 2) {
      serial for (i, 0, 32) {
        serial for (j, 0, 16) {
          serial for (d, 0, 32) {
            ScheduleBlock(S) {
              vh, vi, vj, vd = axis.bind(h, i, j, d)
              axis.domain(vh = spatial(0, 2), vi = spatial(0, 32), vj = spatial(0, 16), vd = reduce(0, 32))
              reads(S[vh, vi, vj], Q[vh, vi, vd], K[vh, vj, vd])
              writes(S[vh, vi, vj])
              init {
                S[vh, vi, vj] = 0.0f
              }
              S[vh, vi, vj] = S[vh, vi, vj] + float32(Q[vh, vi, vd]) * float32(K[vh, vj, vd])
            }
          }
        }
      }
    }
    serial for (h, 0, 2) {
      serial for (i, 0, 32) {
        serial for (j, 0, 16) {
          ScheduleBlock(P) {
            vh, vi, vj = axis.bind(h, i, j)
            axis.domain(vh = spatial(0, 2), vi = spatial(0, 32), vj = spatial(0, 16))
            reads(S[vh, vi, vj])
            writes(P[vh, vi, vj])
            P[vh, vi, vj] = S[vh, vi, vj] * 0.125f
          }
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedule.New(f)
	if err != nil {
		t.Fatal(err)
	}
	tensorizeMMA(t, s, "S", "mma_m16n8k16_bf16_f32_nt")
	bindElementwise(t, s, "P")
	runTensorCore(t, s, ast.BFloat16Bits, "S", "P")
}

// TestTensorCoreHalfAccumulate: a float16 gemm that accumulates in
// float16 (the function's choice of accumulator type picks the
// instruction: mma ... f16.f16.f16.f16) on Tensor Cores.
func TestTensorCoreHalfAccumulate(t *testing.T) {
	f, err := ast.Parse(`func gemm_h(A: float16[32, 32], B: float16[32, 16], C: float16[32, 16]) {
  ScheduleBlock(root) {
    serial for (i, 0, 32) {
      serial for (j, 0, 16) {
        serial for (k, 0, 32) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 32), vj = spatial(0, 16), vk = reduce(0, 32))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0h
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedule.New(f)
	if err != nil {
		t.Fatal(err)
	}
	tensorizeMMA(t, s, "C", "mma_m16n8k16_f16_f16")
	runTensorCore(t, s, ast.Float16Bits, "C")
}
