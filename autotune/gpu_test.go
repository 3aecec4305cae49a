package autotune

import (
	"context"
	"flag"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/cudaemu"
	"github.com/loom-go/loom/internal/gputest"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestGPUSpaceLowers samples the GPU space of each workload (two seeds,
// eight with -long; the matmuls at 64³, 128³ with -long) and lowers
// every sample to CUDA C: a sample the rules keep must make a kernel (the
// few a rule drops, for too many threads or too much shared memory, are
// counted apart), and must compute what the interpreter does when run on
// the CPU's emulation of a GPU (package cudaemu: the first sample of
// each workload, every one with -long). conv2d's shared-memory fetches
// index by floor divisions of fused loops, which make every dependence
// question slow (seconds a sample).
var long = flag.Bool("long", false, "emulate every sampled GPU kernel, validate every step of every schedule, sample every seed")

func TestGPUSpaceLowers(t *testing.T) {
	longInParallel(t)
	seeds := uint64(2)
	if *long {
		seeds = 8
	}
	sp := &Space{Rules: GPURules(), Target: CUDATarget()}
	// The matmuls at 64³ (the emulation runs a CPU thread per GPU
	// thread: a quarter of 128³'s blocks), at 128³ with -long.
	mm := 64
	if *long {
		mm = 128
	}
	for _, c := range []workload.Case{
		workload.Matmul(mm, mm, mm),
		workload.MatmulBiasReLU(mm, mm, mm),
		workload.Softmax(64, 256),
		workload.RMSNorm(64, 256),
		workload.Chain(4, 8, 256),
		workload.Conv2D(1, 8, 10, 10, 16),
	} {
		lowered, dropped := 0, 0
		for seed := uint64(1); seed <= seeds; seed++ {
			s, err := sp.Sample(c.Func, seed)
			if err != nil {
				dropped++
				continue
			}
			f := s.Func()
			m, err := cuda.Lower(f, cuda.Options{})
			if err != nil {
				t.Errorf("%s seed %d: %v\n%s\n%s", c.Name, seed, err, s.Trace(), ast.Print(f))
				continue
			}
			lowered++
			if !*long && lowered > 1 {
				continue
			}
			got, want := c.Args(1), c.Args(1)
			if err := ast.Interpret(c.Func, c.Sizes, want); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err = gputest.Run(ctx, m, c.Sizes, got)
			cancel()
			if err != nil {
				t.Errorf("%s seed %d: %v\n%s", c.Name, seed, err, s.Trace())
				continue
			}
			for _, p := range c.Func.Params {
				if e := check.MaxRelErr(got[p.Name], want[p.Name]); e > 1e-4 {
					t.Errorf("%s seed %d: %s differs from the interpreter's by %g\n%s", c.Name, seed, p.Name, e, s.Trace())
				}
			}
		}
		t.Logf("%s: %d of %d samples lower, %d dropped", c.Name, lowered, seeds, dropped)
		if lowered < max(int(seeds)/2, 1) {
			t.Errorf("%s: only %d of %d samples lower", c.Name, lowered, seeds)
		}
	}
}

// TestGPUDefaultMatchesInterpreter: the default schedule for a GPU of
// every function of defaultCases (the corpus, the workloads; the fusion
// goldens' kernels with -long) replays (and is the same every time: checked with
// -long, the CPU's default on every other case always), lowers to CUDA C,
// compiles to PTX (clang-14, installed by make tools: the test fails
// without it), and computes what the interpreter does, on the CPU's
// emulation of a GPU, at every size of the case (the edges included):
// every other case of defaultCases, every case with -long (a g++ compile
// of each case's emulation is most of the test's time); so does the
// default of five workloads at sizes that fill whole blocks (and of a
// convolution too with -long).
func TestGPUDefaultMatchesInterpreter(t *testing.T) {
	cases := defaultCases(t)
	if !*long {
		// The fusion goldens' kernels (half of the test's time: a
		// convolution's default takes seconds, and every case a g++
		// compile of its emulation) with -long; the corpus, the
		// workloads and the whole blocks below always. The goldens'
		// kernels are checked on the CPU by TestDefaultMatchesInterpreter.
		cases = slices.DeleteFunc(cases, func(c defaultCase) bool { return strings.Contains(c.name, ".txtar: ") })
	}
	whole := []workload.Case{
		workload.Matmul(64, 64, 64),
		workload.MatmulBiasReLU(64, 64, 64),
		workload.Softmax(64, 256),
		workload.RMSNorm(64, 256),
		workload.Chain(4, 8, 256),
		// Rows no tile divides (197, a prime), their tail guarded
		// (gpuPoorlyDivisible).
		workload.Matmul(197, 32, 16),
	}
	if *long {
		// A tenth of the test's time; the convolutions of defaultCases
		// (at sizes with partial blocks) run either way.
		whole = append(whole, workload.Conv2D(1, 8, 10, 10, 16))
	}
	emulated := len(cases) // of defaultCases, every other one; every one with -long
	for _, c := range whole {
		cases = append(cases, defaultCase{c.Name + " (whole blocks)", c.Func, []map[string]int64{c.Sizes}, func(sizes map[string]int64, seed uint64) map[string]any {
			return workload.Case{Name: c.Name, Func: c.Func, Sizes: sizes}.Args(seed)
		}})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := deterministicDefault(t, c, CUDATarget(), false)
			m, err := cuda.Lower(s.Func(), cuda.Options{})
			if err != nil {
				t.Errorf("%s: %v\n%s", c.name, err, s.Trace())
				return
			}
			if _, err := cuda.CompilePTX(m); err != nil {
				t.Errorf("%s: %v", c.name, err)
				return
			}
			if i < emulated && i%2 != 0 && !*long {
				return // lowered and compiled to PTX; emulated with -long
			}
			emulationMatches(t, c.name, c, m, s)
		})
	}
}

// emulationMatches runs m, lowered from schedule s of case c, on the CPU's
// emulation of a GPU at each of the case's sizes, and fails where it
// computes other than the interpreter does on c's function.
func emulationMatches(t *testing.T, name string, c defaultCase, m *cuda.Module, s *schedule.Schedule) {
	t.Helper()
	var runs []cudaemu.Binding
	var wants []map[string]any
	for i, at := range c.sizes {
		want := c.args(at, uint64(i))
		if err := ast.Interpret(c.f, at, want); err != nil {
			t.Fatalf("%s at %v: %v", name, at, err)
		}
		wants = append(wants, want)
		runs = append(runs, cudaemu.Binding{Sizes: at, Args: c.args(at, uint64(i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err := gputest.RunEach(ctx, m, runs)
	cancel()
	if err != nil {
		t.Errorf("%s: %v\n%s", name, err, s.Trace())
		return
	}
	for i, r := range runs {
		for _, p := range c.f.Params {
			if e := check.MaxRelErr(r.Args[p.Name], wants[i][p.Name]); e > 1e-4 {
				t.Errorf("%s at %v: %s differs from the interpreter's by %g\n%s", name, r.Sizes, p.Name, e, s.Trace())
			}
		}
	}
}

// TestGPUDefaultHalf: the CUDA default schedule of workloads in float16
// (their float32 buffers, constants and casts made float16) lowers,
// compiles to PTX and matches the interpreter in the emulation, within
// what sums in float, not rounded to 16 bits at every step, differ by
// (relative to the output's largest value); the matmul's runs on Tensor
// Cores (TensorCoreTiling).
func TestGPUDefaultHalf(t *testing.T) {
	for _, c := range []workload.Case{
		workload.Matmul(64, 64, 64),
		workload.Softmax(64, 256),
		workload.RMSNorm(64, 256),
		workload.Chain(4, 8, 256),
	} {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			src := strings.ReplaceAll(ast.Print(c.Func), "float32", "float16")
			src = regexp.MustCompile(`([0-9]|inf|nan)f\b`).ReplaceAllString(src, "${1}h")
			f, err := ast.Parse(src)
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			s, _, ptx, got, want := defaultOnGPU(t, c.Name, f, c.Sizes)
			if c.Name == "matmul" && !strings.Contains(ptx, "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16") {
				t.Errorf("the float16 matmul's default does not run on Tensor Cores:\n%s", s.Trace())
			}
			for _, p := range f.Params {
				g, w := got[p.Name].([]uint16), want[p.Name].([]uint16)
				scale, worst := 1.0, 0.0
				for i := range w {
					scale = math.Max(scale, math.Abs(ast.Float16Value(w[i])))
				}
				for i := range w {
					worst = math.Max(worst, math.Abs(ast.Float16Value(g[i])-ast.Float16Value(w[i]))/scale)
				}
				if worst > 2e-2 {
					t.Errorf("%s differs from the interpreter's by %g (of its largest value)\n%s", p.Name, worst, s.Trace())
				}
			}
		})
	}
}

// TestGPUDefaultTensorCores: the CUDA default of contractions with 16-bit
// float factors and float32 sums (a gemm, a batched matmul with the second
// factor transposed: attention's scores) tiles them for mma.sync, their
// factors' tiles fetched into shared memory by the block, and the kernels
// match the interpreter in the emulation; one whose extents the
// tile does not divide is left to the other rules, and still matches.
func TestGPUDefaultTensorCores(t *testing.T) {
	for _, c := range []struct {
		name, src string
		sizes     map[string]int64
		tc        bool
	}{
		{"gemm", `func gemm(A: float16[64, 32], B: float16[32, 64], C: float32[64, 64]) {
  ScheduleBlock(root) {
    serial for (i, 0, 64) {
      serial for (j, 0, 64) {
        serial for (k, 0, 32) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 64), vj = spatial(0, 64), vk = reduce(0, 32))
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
}`, nil, true},
		{"scores", `func scores(Q: bfloat16[3, 32, 16], K: bfloat16[3, 24, 16], S: float32[3, 32, 24]) {
  ScheduleBlock(root) {
    serial for (h, 0, 3) {
      serial for (i, 0, 32) {
        serial for (j, 0, 24) {
          serial for (d, 0, 16) {
            ScheduleBlock(S) {
              vh, vi, vj, vd = axis.bind(h, i, j, d)
              axis.domain(vh = spatial(0, 3), vi = spatial(0, 32), vj = spatial(0, 24), vd = reduce(0, 16))
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
  }
}`, nil, true},
		{"ragged", `func ragged(A: float16[20, 32], B: float16[32, 64], C: float32[20, 64]) {
  ScheduleBlock(root) {
    serial for (i, 0, 20) {
      serial for (j, 0, 64) {
        serial for (k, 0, 32) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 20), vj = spatial(0, 64), vk = reduce(0, 32))
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
}`, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f, err := ast.Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			s, m, ptx, got, want := defaultOnGPU(t, c.name, f, c.sizes)
			if got := strings.Contains(ptx, "mma.sync.aligned.m16n8k16"); got != c.tc {
				t.Errorf("Tensor Cores used: %v, want %v\n%s", got, c.tc, s.Trace())
			}
			// The factors' tiles staged in shared memory, the accumulators
			// in registers across the k steps.
			if c.tc && (!strings.Contains(m.Source, "__shared__") || !strings.Contains(m.Source, "(loom_a, loom_b, loom_acc")) {
				t.Errorf("no shared tiles, or accumulators not in registers:\n%s", m.Source)
			}
			out := f.Params[len(f.Params)-1].Name
			if e := check.MaxRelErr(got[out], want[out]); e > 1e-4 {
				t.Errorf("%s differs from the interpreter's by %g\n%s", out, e, s.Trace())
			}
		})
	}
}

// defaultOnGPU decides f's CUDA default schedule, lowers it, checks its
// PTX, and runs it in the emulation at sizes on random inputs, returning
// the schedule, the module, the PTX and the parameters as the kernels and
// the interpreter leave them.
func defaultOnGPU(t *testing.T, name string, f *ast.Func, sizes map[string]int64) (*schedule.Schedule, *cuda.Module, string, map[string]any, map[string]any) {
	t.Helper()
	s, err := Default(f, CUDATarget())
	if err != nil {
		t.Fatal(schedule.Explain(err))
	}
	m, err := cuda.Lower(s.Func(), cuda.Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Trace())
	}
	ptx, err := cuda.CompilePTX(m)
	if err != nil {
		t.Fatal(err)
	}
	h := workload.Case{Name: name, Func: f, Sizes: sizes}
	got, want := h.Args(1), h.Args(1)
	if err := ast.Interpret(f, sizes, want); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err = gputest.Run(ctx, m, sizes, got)
	cancel()
	if err != nil {
		t.Fatalf("%v\n%s", err, s.Trace())
	}
	return s, m, ptx, got, want
}

// TestTensorCoreShapes: TensorCoreTiling's steps at several shapes (warps,
// warp tiles of several mma tiles, k steps of one or two mma steps, no
// shared tiles, shared tiles fetched in the step that uses them, and
// pipelines of 2 and 3 stages) lower to a kernel that keeps every warp
// tile's accumulators in registers, loads shared fragments with ldmatrix
// and pipelined tiles with cp.async, compiles to PTX for sm_80 and sm_90,
// and matches the interpreter in the emulation; a float16 contraction
// with B transposed (attention's keys) too. Default's shape for a large
// gemm is a pipelined 128 × 128 block tile.
func TestTensorCoreShapes(t *testing.T) {
	longInParallel(t)
	gemm := func(m, n, k int, bt bool) *ast.Func {
		b, bidx := fmt.Sprintf("B: float16[%d, %d]", k, n), "B[vk, vj]"
		if bt {
			b, bidx = fmt.Sprintf("B: float16[%d, %d]", n, k), "B[vj, vk]"
		}
		f, err := ast.Parse(fmt.Sprintf(`func gemm(A: float16[%[1]d, %[3]d], %[4]s, C: float32[%[1]d, %[2]d]) {
  ScheduleBlock(root) {
    serial for (i, 0, %[1]d) {
      serial for (j, 0, %[2]d) {
        serial for (k, 0, %[3]d) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, %[1]d), vj = spatial(0, %[2]d), vk = reduce(0, %[3]d))
            reads(C[vi, vj], A[vi, vk], %[5]s)
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0f
            }
            C[vi, vj] = C[vi, vj] + float32(A[vi, vk]) * float32(%[5]s)
          }
        }
      }
    }
  }
}`, m, n, k, b, bidx))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct {
		m, n, k int
		bt      bool
		shape   tensorCoreShape
	}{
		{128, 128, 96, false, tensorCoreShape{2, 2, 4, 8, 1, 3}},
		{64, 64, 64, false, tensorCoreShape{2, 2, 2, 4, 1, 2}},
		{64, 32, 64, true, tensorCoreShape{1, 2, 4, 2, 2, 2}},
		{32, 64, 48, false, tensorCoreShape{2, 1, 1, 8, 1, 1}},
		{32, 32, 32, true, tensorCoreShape{1, 1, 2, 4, 2, 0}},
	} {
		name := fmt.Sprintf("%dx%dx%d/bt=%v/%v", c.m, c.n, c.k, c.bt, c.shape)
		t.Run(name, func(t *testing.T) {
			f := gemm(c.m, c.n, c.k, c.bt)
			s, err := schedule.New(f)
			if err != nil {
				t.Fatal(err)
			}
			intrinsic := "mma_m16n8k16_f16_f32"
			if c.bt {
				intrinsic += "_nt"
			}
			tgt := CUDATarget()
			tgt.decide = true // the widest fetches: 16 bytes, cp.async.cg
			if err := tensorCoreSteps(s, tgt, "C", intrinsic, c.shape, ""); err != nil {
				t.Fatal(schedule.Explain(err))
			}
			m, err := cuda.Lower(s.Func(), cuda.Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, ast.Print(s.Func()))
			}
			want := []string{fmt.Sprintf("float loom_acc1[%d][4]", c.shape.wm*c.shape.wn)}
			if c.shape.stages > 0 {
				want = append(want, "loom_mma_ld_a_shared(", "loom_mma_ld_b"+map[bool]string{false: "", true: "t"}[c.bt]+"_shared(")
			}
			if c.shape.stages > 1 {
				want = append(want, fmt.Sprintf("loom_cp_async_wait<%d>()", c.shape.stages-1))
			}
			for _, w := range want {
				if !strings.Contains(m.Source, w) {
					t.Errorf("the kernel has no %s:\n%s", w, m.Source)
				}
			}
			// The shared tiles' rows, as ldmatrix reads them, an odd number
			// of 16 bytes apart (no bank conflicts).
			lds := regexp.MustCompile(`loom_mma_ld_bt?_shared\(.*\(long long\)\((\d+)\)|loom_mma_ld_a_shared\(.*\(long long\)\((\d+)\)`).FindAllStringSubmatch(m.Source, -1)
			if c.shape.stages > 0 && len(lds) < 2 {
				t.Errorf("%d calls of the shared loaders, want both factors'", len(lds))
			}
			for _, ld := range lds {
				n, _ := strconv.Atoi(ld[1] + ld[2])
				if n%8 != 0 || (n/8)%2 != 1 {
					t.Errorf("a shared tile's rows are %d elements apart: ldmatrix's eight rows share banks", n)
				}
			}
			for _, arch := range []string{"sm_80", "sm_90"} {
				m.Arch = arch
				ptx, err := cuda.CompilePTX(m)
				if err != nil {
					t.Fatalf("%s: %v", arch, err)
				}
				insts := []string{"mma.sync.aligned.m16n8k16"}
				if c.shape.stages > 0 {
					insts = append(insts, "ldmatrix.sync.aligned")
				}
				if c.shape.stages > 1 {
					insts = append(insts, "cp.async.cg.shared.global")
				}
				for _, inst := range insts {
					if !strings.Contains(ptx, inst) {
						t.Errorf("%s: the PTX has no %s", arch, inst)
					}
				}
			}
			m.Arch = "sm_80"
			h := workload.Case{Name: "gemm", Func: f}
			got, wantArgs := h.Args(1), h.Args(1)
			if err := ast.Interpret(f, nil, wantArgs); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := gputest.Run(ctx, m, nil, got); err != nil {
				t.Fatal(err)
			}
			if e := check.MaxRelErr(got["C"], wantArgs["C"]); e > 1e-4 {
				t.Errorf("C differs from the interpreter's by %g\n%s", e, m.Source)
			}
		})
	}
	shapes := tensorCoreShapes(4096/16, 4096/8, 4096/16, 1, 4, 48<<10)
	if want := (tensorCoreShape{2, 2, 4, 8, 2, 2}); len(shapes) == 0 || shapes[0] != want {
		t.Errorf("the default shape of a 4096³ gemm is %v, want %v", shapes[0], want)
	}
}

// TestTensorCoreAccumulate: a contraction with 16-bit sums (a float16
// gemm summed in float16, a bfloat16 one summed in bfloat16, for which no
// Tensor Core instruction sums in its type) accumulated in float32
// (Accumulate into a global float32 copy of the output) runs on Tensor
// Cores with float32 accumulators, each warp rounding its tile into the
// output after the k steps: it compiles to PTX, matches the interpreter
// of the scheduled function in the emulation, and is within one rounding
// of the output type of the exact result. Default does not take this
// path (it keeps the function's own sums), and a bfloat16 gemm then has
// no Tensor Core schedule.
func TestTensorCoreAccumulate(t *testing.T) {
	for _, dt := range []string{"float16", "bfloat16"} {
		t.Run(dt, func(t *testing.T) {
			f, err := ast.Parse(strings.ReplaceAll(`func gemm(A: T[64, 64], B: T[64, 32], C: T[64, 32]) {
  ScheduleBlock(root) {
    serial for (i, 0, 64) {
      serial for (j, 0, 32) {
        serial for (k, 0, 64) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 64), vj = spatial(0, 32), vk = reduce(0, 64))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            init {
              C[vi, vj] = T(0.0f)
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
}`, "T", dt))
			if err != nil {
				t.Fatal(err)
			}
			tgt := CUDATarget()
			tgt.decide = true
			if d, err := Default(f, tgt); err != nil {
				t.Fatal(err)
			} else if tc := strings.Contains(d.Trace().String(), "tensorize"); tc != (dt == "float16") {
				t.Errorf("Default uses Tensor Cores: %v, want %v (the function's own sums)", tc, dt == "float16")
			}
			s, err := schedule.New(f)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := s.GetBlock("C")
			wb, err := s.Accumulate(b, "C", ast.Float32, "global")
			if err != nil {
				t.Fatal(schedule.Explain(err))
			}
			short := map[string]string{"float16": "f16", "bfloat16": "bf16"}[dt]
			if err := tensorCoreSteps(s, tgt, "C", "mma_m16n8k16_"+short+"_f32", tensorCoreShape{2, 1, 2, 4, 2, 2}, wb.Name()); err != nil {
				t.Fatal(schedule.Explain(err))
			}
			m, err := cuda.Lower(s.Func(), cuda.Options{})
			if err != nil {
				t.Fatalf("%v\n%s", err, ast.Print(s.Func()))
			}
			for _, arch := range []string{"sm_80", "sm_90"} {
				m.Arch = arch
				ptx, err := cuda.CompilePTX(m)
				if err != nil {
					t.Fatalf("%s: %v", arch, err)
				}
				if !strings.Contains(ptx, "mma.sync.aligned.m16n8k16.row.col.f32."+short+"."+short+".f32") {
					t.Errorf("%s: no mma with float32 accumulators in the PTX", arch)
				}
			}
			m.Arch = "sm_80"
			h := workload.Case{Name: "gemm", Func: f}
			got, want := h.Args(1), h.Args(1)
			args := check.Clone(got)
			if err := ast.Interpret(s.Func(), nil, want); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := gputest.Run(ctx, m, nil, got); err != nil {
				t.Fatal(err)
			}
			value := ast.Float16Value
			if dt == "bfloat16" {
				value = ast.BFloat16Value
			}
			a, bb, g, w := args["A"].([]uint16), args["B"].([]uint16), got["C"].([]uint16), want["C"].([]uint16)
			ulp := map[string]float64{"float16": 0x1p-10, "bfloat16": 0x1p-7}[dt]
			for i := range 64 {
				for j := range 32 {
					exact, mag := 0.0, 0.0
					for k := range 64 {
						p := value(a[i*64+k]) * value(bb[k*32+j])
						exact, mag = exact+p, mag+math.Abs(p)
					}
					// The float32 sums round once at the end: within one
					// rounding of the exact sum (and a float32 error of the
					// magnitudes summed); the emulation's sums run in
					// another order than the interpreter's.
					tol := ulp*math.Abs(exact) + 1e-6*mag
					if e := math.Abs(value(g[i*32+j]) - exact); e > tol {
						t.Fatalf("C[%d, %d] = %g on the Tensor Cores, exact %g (off by %g > %g)", i, j, value(g[i*32+j]), exact, e, tol)
					}
					if e := math.Abs(value(w[i*32+j]) - exact); e > tol {
						t.Fatalf("C[%d, %d] = %g in the interpreter, exact %g (off by %g > %g)", i, j, value(w[i*32+j]), exact, e, tol)
					}
				}
			}
		})
	}
}

// TestGPUSymbolicTiling: MultiLevelTilingGPU tiles a matmul of symbolic
// sizes (its tails guarded, the cache's fill and write-back under the
// thread loop), in Default and in samples; each such kernel lowers and
// computes what the interpreter does, on the CPU's emulation of a GPU, at
// the case's sizes and the edges (0, 1, sizes no tile divides).
func TestGPUSymbolicTiling(t *testing.T) {
	longInParallel(t)
	var c defaultCase
	for _, dc := range defaultCases(t) {
		if dc.name == "matmul_sym" {
			c = dc
		}
	}
	if c.f == nil {
		t.Fatal("no matmul_sym among the cases")
	}
	c.sizes = append(c.sizes, map[string]int64{"M": 70, "N": 97, "K": 33})
	sp := &Space{Rules: GPURules(), Target: CUDATarget()}
	d, err := Default(c.f, CUDATarget())
	if err != nil {
		t.Fatal(err)
	}
	schedules := []*schedule.Schedule{d}
	seeds := uint64(1) // two with -long
	if *long {
		seeds = 2
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		if s, err := sp.Sample(c.f, seed); err == nil {
			schedules = append(schedules, s)
		}
	}
	tiled := 0
	for i, s := range schedules {
		if !strings.Contains(s.Trace().String(), "reverse_compute_at") || s.Func().Block("C_local") == nil {
			continue
		}
		tiled++
		m, err := cuda.Lower(s.Func(), cuda.Options{})
		if err != nil {
			t.Errorf("schedule %d: %v\n%s", i, err, s.Trace())
			continue
		}
		emulationMatches(t, fmt.Sprintf("matmul_sym schedule %d", i), c, m, s)
	}
	if tiled == 0 || !strings.Contains(d.Trace().String(), "reverse_compute_at") {
		t.Errorf("Default and %d samples: %d tiled with a write cache (Default must be)", seeds, tiled)
	}
}

// TestPipelineKey: the tuner's spelling of the pipeline annotation is
// codegen/cuda's.
func TestPipelineKey(t *testing.T) {
	if pipelineKey != cuda.PipelineKey {
		t.Errorf("autotune's pipelineKey %q, codegen/cuda's PipelineKey %q", pipelineKey, cuda.PipelineKey)
	}
}
