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
	"github.com/loom-go/loom/internal/cudaemu"
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
	s, err := schedule.New(f)
	if err != nil {
		t.Fatal(err)
	}
	h := &steps{s: s}
	ls := h.loops("C")
	var is, js, ks, inits []schedule.Loop
	var init schedule.Block
	h.do(func() (err error) { is, err = s.Split(ls[0], -1, 16); return err })
	h.do(func() (err error) { js, err = s.Split(ls[1], -1, 8); return err })
	h.do(func() (err error) { ks, err = s.Split(ls[2], -1, 16); return err })
	h.do(func() error { return s.Reorder(is[0], js[0], ks[0], is[1], js[1], ks[1]) })
	h.do(func() error { return s.Bind(is[0], "blockIdx.x") })
	h.do(func() error { return s.Bind(js[0], "threadIdx.y") })
	h.do(func() (err error) { init, err = s.DecomposeReduction(h.block("C"), ks[0]); return err })
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
		return s.Tensorize(is[1], "mma_m16n8k16_"+map[string]string{"float16": "f16", "bfloat16": "bf16"}[in]+"_f32")
	})
	if h.err != nil {
		t.Fatal(schedule.Explain(h.err))
	}
	return s
}

// TestTensorCoreGemm: a gemm tensorized for mma.sync lowers to calls of
// the helper, compiles to PTX with the Tensor Core instruction for sm_80
// and sm_90, and in the emulation matches the interpreter (the sums in
// another order: within float32 rounding), for float16 and bfloat16
// factors, at several shapes.
func TestTensorCoreGemm(t *testing.T) {
	for _, c := range []struct {
		in      string
		m, n, k int
	}{{"float16", 16, 16, 16}, {"float16", 32, 16, 48}, {"bfloat16", 32, 16, 32}} {
		t.Run(fmt.Sprintf("%s/%dx%dx%d", c.in, c.m, c.n, c.k), func(t *testing.T) {
			s := tensorCoreGemm(t, c.in, c.m, c.n, c.k)
			short := map[string]string{"float16": "f16", "bfloat16": "bf16"}[c.in]
			for _, arch := range []string{"sm_80", "sm_90"} {
				m, err := cuda.Lower(s.Func(), cuda.Options{Arch: arch})
				if err != nil {
					t.Fatalf("%v\n%s", err, ast.Print(s.Func()))
				}
				if !strings.Contains(m.Source, "loom_mma_m16n8k16_"+short+"_f32(&") {
					t.Fatalf("no mma call:\n%s", m.Source)
				}
				ptx, err := cuda.CompilePTX(m)
				if err != nil {
					t.Fatalf("%s: %v\n%s", arch, err, m.Source)
				}
				if want := "mma.sync.aligned.m16n8k16.row.col.f32." + short; !strings.Contains(ptx, want) {
					t.Errorf("%s: the PTX lacks %s", arch, want)
				}
				if arch != "sm_80" {
					continue
				}
				bits := ast.Float16Bits
				if c.in == "bfloat16" {
					bits = ast.BFloat16Bits
				}
				r := rand.New(rand.NewPCG(11, uint64(c.k)))
				a, b := make([]uint16, c.m*c.k), make([]uint16, c.k*c.n)
				for i := range a {
					a[i] = bits(r.NormFloat64())
				}
				for i := range b {
					b[i] = bits(r.NormFloat64())
				}
				got := map[string]any{"A": a, "B": b, "C": make([]float32, c.m*c.n)}
				want := map[string]any{"A": a, "B": b, "C": make([]float32, c.m*c.n)}
				if err := ast.Interpret(s.Func(), nil, want); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				err = cudaemu.Run(ctx, m, nil, got)
				cancel()
				if err != nil {
					t.Fatalf("%v\n%s", err, m.Source)
				}
				g, w := got["C"].([]float32), want["C"].([]float32)
				for i := range w {
					if math.Abs(float64(g[i]-w[i])) > 1e-4*(1+math.Abs(float64(w[i]))) {
						t.Fatalf("C[%d] = %g, the interpreter %g\n%s", i, g[i], w[i], m.Source)
					}
				}
			}
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
