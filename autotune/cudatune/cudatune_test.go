package cudatune

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/cudaemu"
)

// workerEnv makes this test binary a tuning worker with CUDA registered:
// autotune.WorkerEnv would start the worker before this package's
// initialization registers the device.
const workerEnv = "LOOM_CUDATUNE_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		if err := autotune.ServeWorker(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func mustParse(t *testing.T, src string) *ast.Func {
	t.Helper()
	f, err := ast.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCUDAMeasure: the GPU builder lowers candidates (refusing, with the
// CUDA writer's reason, one that binds no loop to threads). On a machine
// without CUDA the GPU runner's workers answer each candidate with CUDA's
// absence instead of crashing; then, loading the stand-in driver of
// package cudaemu, they compile, run, check and time it, as they do on a
// GPU where there is one.
func TestCUDAMeasure(t *testing.T) {
	// No LLVM: a GPU's machine may have none, and the GPU runner needs
	// none (its reference is made on the GPU too).
	r := &autotune.ProcessRunner{Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{workerEnv + "=1"}, CacheDir: t.TempDir(),
		Timeout: 20 * time.Second, Repeats: 3, MinSeconds: 0.001, Target: Target}
	const src = `func double(A: float32[64], B: float32[64]) {
  ScheduleBlock(root) {
    %s for (i0, 0, 2) {
      %s for (i1, 0, 32) {
        ScheduleBlock(B) {
          vi = axis.bind(i0 * 32 + i1)
          axis.domain(vi = spatial(0, 64))
          reads(A[vi])
          writes(B[vi])
          B[vi] = A[vi] * 2.0f
        }
      }
    }
  }
}`
	task := &autotune.Task{Name: "double", Func: mustParse(t, fmt.Sprintf(src, "serial", "serial"))}
	bound := mustParse(t, fmt.Sprintf(src, "bind(blockIdx.x)", "bind(threadIdx.x)"))
	cands := []*autotune.Candidate{{Func: bound}, {Func: task.Func}}
	builds := (&Builder{}).Build(context.Background(), task, cands)
	if builds[0].Err != nil {
		t.Fatalf("bound candidate: %v", builds[0].Err)
	}
	if builds[1].Err == nil {
		t.Errorf("a candidate with no GPU-bound loop lowered to CUDA")
	}
	run := r.Run(context.Background(), task, cands[:1], builds[:1])[0]
	if _, err := cuda.Open(); err != nil {
		if run.Err == nil || !strings.Contains(run.Err.Error(), "CUDA is not available") {
			t.Errorf("without CUDA: %+v, want CUDA's absence as the error", run)
		}
		lib, err := cudaemu.BuildDriver(context.Background(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		// The first runner keeps its failed reference (a runner's
		// workers do not gain CUDA later); a new one with the stand-in.
		if again := r.Run(context.Background(), task, cands[:1], builds[:1])[0]; again.Err == nil || again.Err.Error() != run.Err.Error() {
			t.Errorf("a candidate after the reference failed: %+v, want the same failure", again)
		}
		r.Close()
		r = &autotune.ProcessRunner{Command: r.Command, Env: append(r.Env, cuda.DriverEnv+"="+lib, cuda.NVRTCEnv+"="+lib), CacheDir: r.CacheDir,
			Timeout: r.Timeout, Repeats: r.Repeats, MinSeconds: r.MinSeconds, Target: r.Target}
		defer r.Close()
		run = r.Run(context.Background(), task, cands[:1], builds[:1])[0]
		if run.Err != nil || len(run.Seconds) == 0 || run.Seconds[0] <= 0 {
			t.Errorf("on the stand-in driver: %+v", run)
		}
		return
	}
	if run.Err != nil || len(run.Seconds) == 0 || run.Seconds[0] <= 0 {
		t.Errorf("on the GPU: %+v", run)
	}
}
