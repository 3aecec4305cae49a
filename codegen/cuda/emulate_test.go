package cuda_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
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

// TestEmulate runs every representative kernel on the CPU, each GPU thread
// an OS thread (package cudaemu), and compares what it computes with the
// interpreter: the barriers, the shuffles, the vector accesses and the
// shared-memory indexing checked for real on a machine without a GPU. It
// needs g++ (C++20), which make tools provides. gemm_pipelined, the
// two-stage pipeline of the 128x128x128 product, only with -long: the
// three-stage gemm_pipelined3 runs the same cp.async pipeline code in
// fewer emulated threads, and TestPTX checks gemm_pipelined's PTX. On a
// machine without CUDA the kernels of onStandIn are left to TestRun,
// which runs them on the stand-in driver (the same emulation, through
// the launcher) against the interpreter.
func TestEmulate(t *testing.T) {
	standIn := standInRunsTestRun()
	for _, gc := range gpuCases() {
		if gc.name == "gemm_pipelined" && !*long {
			continue // gemm_pipelined3 is pipelined too, in fewer emulated threads
		}
		if onStandIn[gc.name] && standIn {
			continue // TestRun runs it on the stand-in driver, emulated as here
		}
		t.Run(gc.name, func(t *testing.T) {
			m := lowered(t, gc)
			got, want := gc.c.Args(1), gc.c.Args(1)
			if err := ast.Interpret(gc.c.Func, gc.c.Sizes, want); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := gputest.Run(ctx, m, gc.c.Sizes, got); err != nil {
				t.Fatal(err)
			}
			for _, b := range gc.c.Func.Params {
				if e := check.MaxRelErr(got[b.Name], want[b.Name]); e > 1e-4 {
					t.Errorf("%s differs from the interpreter's by %g", b.Name, e)
				}
			}
		})
	}
}

// standInRunsTestRun reports whether TestRun runs on the stand-in driver
// in this process's run: there is no CUDA, and cuda.DriverEnv names no
// driver (as it does in the stand-in's child process).
func standInRunsTestRun() bool {
	_, err := cuda.Open()
	return err != nil && errors.Is(err, cuda.ErrNoCUDA) && os.Getenv(cuda.DriverEnv) == ""
}

// TestEmptyCrossThreadReduction: a row sum over a symbolic K, its reduce
// loop split over 32 threads (one warp) or 128 (four, through shared
// memory), each thread's share predicated. At K = 0 no iteration runs,
// and the output gets its init all the same, as the interpreter gives it
// (Y holds other values before); at K = 5 most threads run nothing; at
// K = 300 the shares are uneven.
func TestEmptyCrossThreadReduction(t *testing.T) {
	f, err := ast.Parse(`func rowsum[K: int32](X: float32[6, K], Y: float32[6]) {
  ScheduleBlock(root) {
    serial for (i, 0, 6) {
      serial for (k, 0, K) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, 6), vk = reduce(0, K))
          reads(Y[vi], X[vi, vk])
          writes(Y[vi])
          init {
            Y[vi] = 0.0f
          }
          Y[vi] = Y[vi] + X[vi, vk]
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{32, 128} {
		s, err := schedule.New(f)
		if err != nil {
			t.Fatal(err)
		}
		h := &steps{s: s}
		ls := h.loops("Y")
		var ks []schedule.Loop
		h.do(func() (err error) { ks, err = s.Split(ls[1], threads, -1); return err })
		h.do(func() error { return s.Bind(ls[0], "blockIdx.x") })
		h.do(func() error { return s.Bind(ks[0], "threadIdx.x") })
		if h.err != nil {
			t.Fatal(h.err)
		}
		m := compiledToPTX(t, s)
		var runs []cudaemu.Binding
		var wants []map[string]any
		for _, k := range []int64{0, 5, 300} {
			sizes := map[string]int64{"K": k}
			c := workload.Case{Name: "rowsum", Func: f, Sizes: sizes}
			got, want := c.Args(3), c.Args(3)
			// Y holds values before, to be replaced by the init at K = 0.
			check.FillRandom(got["Y"], rand.New(rand.NewPCG(1, 2)))
			check.FillRandom(want["Y"], rand.New(rand.NewPCG(1, 2)))
			if err := ast.Interpret(f, sizes, want); err != nil {
				t.Fatal(err)
			}
			runs, wants = append(runs, cudaemu.Binding{Sizes: sizes, Args: got}), append(wants, want)
		}
		emulateEach(t, m, runs)
		for i, r := range runs {
			if e := check.MaxRelErr(r.Args["Y"], wants[i]["Y"]); e > 1e-4 {
				t.Errorf("%d threads, K=%d: Y differs from the interpreter's by %g\n%s", threads, r.Sizes["K"], e, m.Source)
			}
		}
	}
}

// TestRootConditions: conditions on the sizes directly under the root
// (an if with an else, one nested in another, a declaration under one)
// enclose kernels: each kernel runs its body only where its conditions
// hold, and computes what the interpreter does on both sides of them.
func TestRootConditions(t *testing.T) {
	f, err := ast.Parse(`func cond[N: int32](X: float32[N], Z: float32[N], W: float32[N]) {
  ScheduleBlock(root) {
    if (N > 4) {
      if (N < 9) {
        serial for (i, 0, N) {
          ScheduleBlock(Z) {
            vi = axis.bind(i)
            axis.domain(vi = spatial(0, N))
            reads(X[vi])
            writes(Z[vi])
            Z[vi] = X[vi] * 3.0f
          }
        }
      }
    } else {
      serial for (j, 0, N) {
        ScheduleBlock(W) {
          vj = axis.bind(j)
          axis.domain(vj = spatial(0, N))
          reads(X[vj])
          writes(W[vj])
          W[vj] = X[vj] + 1.0f
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
	h := &steps{s: s}
	for _, name := range []string{"Z", "W"} {
		ls := h.loops(name)
		var parts []schedule.Loop
		h.do(func() (err error) { parts, err = s.Split(ls[0], -1, 4); return err })
		h.do(func() error { return s.Bind(parts[0], "blockIdx.x") })
		h.do(func() error { return s.Bind(parts[1], "threadIdx.x") })
	}
	if h.err != nil {
		t.Fatal(h.err)
	}
	m := compiledToPTX(t, s)
	if len(m.Kernels) != 2 {
		t.Fatalf("%d kernels, want 2\n%s", len(m.Kernels), m.Source)
	}
	var runs []cudaemu.Binding
	var wants []map[string]any
	for _, n := range []int64{0, 1, 4, 5, 8, 9, 13} {
		sizes := map[string]int64{"N": n}
		c := workload.Case{Name: "cond", Func: f, Sizes: sizes}
		got, want := c.Args(5), c.Args(5)
		if err := ast.Interpret(f, sizes, want); err != nil {
			t.Fatal(err)
		}
		runs, wants = append(runs, cudaemu.Binding{Sizes: sizes, Args: got}), append(wants, want)
	}
	emulateEach(t, m, runs)
	for i, r := range runs {
		for _, b := range []string{"Z", "W"} {
			if e := check.MaxRelErr(r.Args[b], wants[i][b]); e > 0 {
				t.Errorf("N=%d: %s differs from the interpreter's by %g\n%s", r.Sizes["N"], b, e, m.Source)
			}
		}
	}
}

// compiledToPTX lowers s's function to CUDA C and compiles it to PTX,
// failing the test where either step fails.
func compiledToPTX(t *testing.T, s *schedule.Schedule) *cuda.Module {
	t.Helper()
	m, err := cuda.Lower(s.Func(), cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cuda.CompilePTX(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// emulateEach runs m on the CPU's emulation at every binding of runs (one
// compile), failing the test where it cannot.
func emulateEach(t *testing.T, m *cuda.Module, runs []cudaemu.Binding) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := gputest.RunEach(ctx, m, runs); err != nil {
		t.Fatal(err)
	}
}
