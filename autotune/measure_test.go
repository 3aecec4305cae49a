package autotune

import (
	"context"
	"errors"
	"flag"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/allocprof"
	"github.com/loom-go/loom/internal/cacheflush"
	"github.com/loom-go/loom/schedule"
)

// TestMain runs the tests with the translation validator on (with
// -long). The test binary started with LOOM_AUTOTUNE_WORKER=1 is the
// runner's worker process: the package's initialization serves it
// before TestMain (see WorkerEnv).
func TestMain(m *testing.M) {
	// With -long the autotuner's tests run with the translation validator
	// on for every step of every candidate the rules build; otherwise it
	// checks the steps it costs little on (schedule's default), and the
	// kernels are checked against the interpreter as always. The
	// validator judges every primitive on the adversarial corpus in
	// package schedule; here it multiplied the package's time sevenfold.
	flag.Parse()
	allocprof.Off()
	schedule.SetValidation(*long)
	code := m.Run()
	if sharedCacheDir != "" {
		os.RemoveAll(sharedCacheDir)
	}
	os.Exit(code)
}

// longInParallel marks t, one of the package's longest tests (those that
// compile and check many kernels, on the CPU or in the GPU's emulation),
// to run in parallel with the others of them, after the package's other
// tests. They share nothing a test could see: the translation
// validator's setting is TestMain's for the whole run, sharedCache is
// safe for goroutines (and finds a kernel only by its function), the
// GPU emulation builds each module apart, and the kernels' thread pool
// runs a parallel loop that finds it busy serially on its caller (the
// same results, more slowly).
func longInParallel(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// sharedCacheDir is the directory of sharedCache, once made.
var sharedCacheDir string

// sharedCache returns the kernel cache the package's tests compile into:
// a kernel two tests build (a workload's default schedule, say) is
// compiled once, and so is the runtime library a cache builds in its
// directory (0.2 s of a C compiler each time a test made a cache of its
// own). The kernels are keyed by their function and options, so a test
// finds only kernels identical to its own there. A test that closes its
// kernels (TestDispatchClose) or whose workers read the cache's
// directory (testRunner) makes a cache of its own.
func sharedCache() (*native.Cache, error) {
	return sharedCacheOnce()
}

var sharedCacheOnce = sync.OnceValues(func() (*native.Cache, error) {
	dir, err := os.MkdirTemp("", "autotune-test-cache-")
	if err != nil {
		return nil, err
	}
	sharedCacheDir = dir
	return native.NewCache(dir)
})

func testRunner(t *testing.T) (*LocalBuilder, *ProcessRunner) {
	dir := t.TempDir()
	cache, err := native.NewCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &LocalBuilder{Cache: cache, Parallel: 2},
		&ProcessRunner{Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{"LOOM_AUTOTUNE_WORKER=1"}, CacheDir: dir, Timeout: 20 * time.Second, Repeats: 3, MinSeconds: 0.001}
}

func mustParse(t *testing.T, src string) *ast.Func {
	t.Helper()
	f, err := ast.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRunnerIsolation: a correct candidate is timed; one that crashes (recorded with its signal),
// one that hangs and one that computes a wrong result are each recorded
// as failed with the reason, and the runner carries on.
func TestRunnerIsolation(t *testing.T) {
	b, r := testRunner(t)
	task := &Task{Name: "double", Func: mustParse(t, `func double(A: float32[64], B: float32[64]) {
  serial for (i, 0, 64) { B[i] = A[i] * 2.0f }
}`)}
	good := mustParse(t, `func double(A: float32[64], B: float32[64]) {
  serial for (i0, 0, 8) { unrolled for (i1, 0, 8) { B[i0 * 8 + i1] = A[i0 * 8 + i1] * 2.0f } }
}`)
	wrong := mustParse(t, `func double(A: float32[64], B: float32[64]) {
  serial for (i, 0, 64) { B[i] = A[i] * 3.0f }
}`)
	crash := mustParse(t, `func double(A: float32[64], B: float32[64]) {
  serial for (i, 0, 64) { B[i * 33554432] = A[i] * 2.0f }
}`)
	hang := mustParse(t, `func double(A: float32[64], B: float32[64]) {
  serial for (i, 0, 2000000000) { serial for (j, 0, 2000000000) { B[0] = B[0] * 1.0000001f + A[0] } }
}`)
	var cands []*Candidate
	for _, f := range []*ast.Func{good, wrong, crash, hang} {
		cands = append(cands, &Candidate{Func: f})
	}
	r.Timeout = 3 * time.Second
	builds := b.Build(context.Background(), task, cands)
	for i, br := range builds {
		if br.Err != nil {
			t.Fatalf("candidate %d: build: %v", i, br.Err)
		}
	}
	runs := r.Run(context.Background(), task, cands, builds)
	if runs[0].Err != nil || len(runs[0].Seconds) != 3 || runs[0].Seconds[0] <= 0 {
		t.Errorf("good candidate: %+v", runs[0])
	}
	for i, want := range map[int]string{1: "wrong result", 2: "SIGSEGV", 3: "timed out"} {
		if runs[i].Err == nil || !strings.Contains(runs[i].Err.Error(), want) {
			t.Errorf("candidate %d: %v, want an error containing %q", i, runs[i].Err, want)
		}
	}
}

// TestLongReductionInAnotherOrder: a column sum of 4096 floats taken in
// another order differs from the reference by more than the fixed
// tolerance, by rounding alone; the error bound of the reduction accepts
// it, and still rejects a sum with one term missing.
func TestLongReductionInAnotherOrder(t *testing.T) {
	b, r := testRunner(t)
	const src = `func colsum(X: float32[4096, 256], Y: float32[256]) {
  serial for (j, 0, 256) {
    Y[j] = 0.0f
    serial for (i, FIRST, 4096) { Y[j] = Y[j] + X[ROW, j] }
  }
}`
	variant := func(first, row string) *ast.Func {
		return mustParse(t, strings.NewReplacer("FIRST", first, "ROW", row).Replace(src))
	}
	task := &Task{Name: "colsum", Func: variant("0", "i")}
	cands := []*Candidate{{Func: variant("0", "4095 - i")}, {Func: variant("1", "i")}}
	builds := b.Build(context.Background(), task, cands)
	for i, br := range builds {
		if br.Err != nil {
			t.Fatalf("candidate %d: build: %v", i, br.Err)
		}
	}
	runs := r.Run(context.Background(), task, cands, builds)
	if runs[0].Err != nil {
		t.Errorf("the sum in reverse order: %v", runs[0].Err)
	}
	if runs[1].Err == nil || !strings.Contains(runs[1].Err.Error(), "error bound") {
		t.Errorf("the sum without its first term: %v, want a wrong result beyond the error bound", runs[1].Err)
	}
}

// The fake device of this test binary, its workers' too: a package-level
// variable registers it before package autotune's initialization starts a
// worker (WorkerEnv). It is never there.
var _ = func() bool {
	RegisterDevice("fake", func() (Device, error) { return nil, errors.New("the fake device is not on this machine") })
	return true
}()

// TestDeviceMeasure: a runner for a device whose worker cannot open it
// fails each candidate with the worker's reason, keeping the reference's
// failure instead of asking the worker again; a target no package
// registered fails naming the targets the program has (CUDA's own path
// is tested in package autotune/cudatune).
func TestDeviceMeasure(t *testing.T) {
	task := &Task{Name: "double", Func: mustParse(t, `func double(A: float32[64], B: float32[64]) {
  ScheduleBlock(root) {
    serial for (i, 0, 64) {
      ScheduleBlock(B) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 64))
        reads(A[vi])
        writes(B[vi])
        B[vi] = A[vi] * 2.0f
      }
    }
  }
}`)}
	cands := []*Candidate{{Func: task.Func}}
	builds := []BuildResult{{}}
	for _, c := range []struct{ target, want string }{
		{"fake", "the fake device is not on this machine"},
		{"nosuch", `no device of target "nosuch" is linked into this program; it has fake`},
		{"cuda", "import github.com/loom-go/loom/autotune/cudatune"},
	} {
		r := &ProcessRunner{Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{"LOOM_AUTOTUNE_WORKER=1"}, CacheDir: t.TempDir(),
			Timeout: 20 * time.Second, Repeats: 3, MinSeconds: 0.001, Target: c.target}
		run := r.Run(context.Background(), task, cands, builds)[0]
		if run.Err == nil || !strings.Contains(run.Err.Error(), c.want) {
			t.Errorf("target %s: %+v, want the error %q", c.target, run, c.want)
		}
		if len(r.refErrs) != 1 {
			t.Errorf("target %s: the reference's failure, reported by its worker, is not kept: %v", c.target, r.refErrs)
		}
		if again := r.Run(context.Background(), task, cands, builds)[0]; again.Err == nil || run.Err == nil || again.Err.Error() != run.Err.Error() {
			t.Errorf("target %s: a candidate after the reference failed: %+v, want the same failure", c.target, again)
		}
		r.Close()
	}
}

// TestWorkerFailureReason: a worker killed by a fault in the kernel is
// recorded with its signal and the runtime's line about it, not the
// register dump that ends its stderr.
func TestWorkerFailureReason(t *testing.T) {
	stderr := "SIGSEGV: segmentation violation\nPC=0x7f3a1c2d4010 m=0 sigcode=1 addr=0x7f3b00000000\nsignal arrived during cgo execution\n\ngoroutine 1 gp=0xc000002380 m=0 mp=0x9c3a40 [syscall]:\nruntime.cgocall(...)\n" +
		strings.Repeat("rax    0x0\nrbx    0x7ffd\n", 40)
	got := tail(stderr)
	if !strings.Contains(got, "SIGSEGV: segmentation violation") || strings.Contains(got, "rax") {
		t.Errorf("tail = %q", got)
	}
	panicked := "panic: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.f()\n"
	if got := tail(panicked); !strings.Contains(got, "panic: index out of range") {
		t.Errorf("tail of a panic = %q", got)
	}
}

// TestRunnerClose: the runner's reference outputs live in a temporary
// directory of its own, which Close removes (loom tune left one behind
// per run); a runner used again makes a new one.
func TestRunnerClose(t *testing.T) {
	b, r := testRunner(t)
	task := &Task{Name: "double", Func: mustParse(t, `func double(A: float32[8], B: float32[8]) {
  serial for (i, 0, 8) { B[i] = A[i] * 2.0f }
}`)}
	cands := []*Candidate{{Func: task.Func}}
	run := func() string {
		if res := r.Run(context.Background(), task, cands, b.Build(context.Background(), task, cands)); res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
		dir := r.dir
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("the reference's directory %q: %v", dir, err)
		}
		return dir
	}
	dir := run()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after Close: %v, want it removed", dir, err)
	}
	again := run()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(again); !os.IsNotExist(err) {
		t.Errorf("%s after the second Close: %v", again, err)
	}
}

// TestCandidateDataFromTheTask: a candidate runs on the data of the
// function it was scheduled from. The task writes half of its output B
// first, so B starts poisoned (NaN) and its other half stays NaN; the
// candidate reads all of B first (as a cache's fill does) and writes it
// back: on data of its own B would start zeroed and the candidate would
// be a wrong result.
func TestCandidateDataFromTheTask(t *testing.T) {
	b, r := testRunner(t)
	const half = `    serial for (i, 0, 32) {
      ScheduleBlock(B) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 32))
        reads(A[vi])
        writes(B[vi])
        B[vi] = A[vi] * 2.0f
      }
    }`
	task := &Task{Name: "half", Func: mustParse(t, `func half(A: float32[64], B: float32[64]) {
  ScheduleBlock(root) {
`+half+`
  }
}`)}
	filled := mustParse(t, `func half(A: float32[64], B: float32[64]) {
  ScheduleBlock(root) {
    serial for (j, 0, 64) {
      ScheduleBlock(B_fill) {
        vj = axis.bind(j)
        axis.domain(vj = spatial(0, 64))
        reads(B[vj])
        writes(B[vj])
        B[vj] = B[vj] + 0.0f
      }
    }
`+half+`
  }
}`)
	cands := []*Candidate{{Func: filled}}
	builds := b.Build(context.Background(), task, cands)
	if builds[0].Err != nil {
		t.Fatal(builds[0].Err)
	}
	if runs := r.Run(context.Background(), task, cands, builds); runs[0].Err != nil {
		t.Errorf("a candidate that reads its output first: %v", runs[0].Err)
	}
}

// TestColdWeights: a task whose weight is timed out of the caches
// (Task.Cold, set by SetCold where the machine flushes them) files its
// records under the cold target, names the weight to the worker, and
// its candidates are checked and timed as any: a correct one gets its
// samples, a wrong one fails.
func TestColdWeights(t *testing.T) {
	b, r := testRunner(t)
	src := `func scale(W: float32[65536], X: float32[65536], Y: float32[65536]) {
  serial for (i, 0, 65536) { Y[i] = X[i] * W[i] }
}`
	task := &Task{Name: "scale", Func: mustParse(t, src), Target: "t"}
	task.SetCold(nil)
	if task.Cold != nil || task.Target != "t" {
		t.Fatalf("SetCold(nil) changed the task: %v, %s", task.Cold, task.Target)
	}
	task.SetCold([]int{0, 7})
	if !cacheflush.Supported {
		if task.Cold != nil || task.Target != "t" {
			t.Fatalf("SetCold on a machine that cannot flush changed the task: %v, %s", task.Cold, task.Target)
		}
		t.Skip("this machine cannot flush its caches")
	}
	if task.Target != ColdTarget("t") || !slices.Equal(coldNames(task), []string{"W"}) {
		t.Fatalf("cold task: target %s, flushes %v; want %s and W (position 7 is no parameter)", task.Target, coldNames(task), ColdTarget("t"))
	}
	wrong := mustParse(t, strings.Replace(src, "X[i] * W[i]", "X[i] + W[i]", 1))
	cands := []*Candidate{{Func: task.Func}, {Func: wrong}}
	builds := b.Build(context.Background(), task, cands)
	runs := r.Run(context.Background(), task, cands, builds)
	if runs[0].Err != nil || len(runs[0].Seconds) != 3 || runs[0].Seconds[0] <= 0 {
		t.Errorf("correct candidate timed cold: %+v", runs[0])
	}
	if runs[1].Err == nil {
		t.Errorf("wrong candidate timed cold passed: %+v", runs[1])
	}
}
