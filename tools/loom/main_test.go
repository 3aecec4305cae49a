package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/allocprof"
	"github.com/loom-go/loom/internal/cudaemu"
	"github.com/loom-go/loom/tools/loom/internal/bench"
)

// TestMain lets the test binary serve as loom tune's worker process
// (loom tune runs its own executable with the argument "worker"), and as
// loom itself in a child process where asLoomEnv is set.
//
// In every role it times kernels briefly: samples of 1 ms (bench, the
// sweeps and the suite: 5 of them, not 0.3 s; tune's candidates: not 10
// ms). The tests check that times are measured, reported and recorded,
// never how precise they are, and at the full lengths timing was a third
// of the package's time.
func TestMain(m *testing.M) {
	bench.SampleTime, bench.MeasureTime = time.Millisecond, 0
	runnerMinSeconds = 1e-3
	if len(os.Args) > 1 && os.Args[1] == "worker" || os.Getenv(asLoomEnv) == "1" {
		allocprof.Off()
		os.Exit(loom(os.Args[1:], os.Stdout, os.Stderr))
	}
	flag.Parse()
	allocprof.Off()
	os.Exit(m.Run())
}

const asLoomEnv = "LOOM_TEST_AS_LOOM"

// longInParallel marks t, one of the package's four longest tests
// (TestTuneCUDA, TestReplayRebuildsTuned, TestTunedCommands,
// TestBenchSuiteOneDNN), to run in parallel with the others of them,
// after the package's other tests. What loom keeps for a whole process
// does not tell them apart: each has its own files (its database, its
// outputs, under t.TempDir()); native.SetThreads, which bench sets,
// changes only how fast kernels run, never what they compute; the
// kernel cache's directory is safe for processes and goroutines to
// share; and the translation validator's setting, which
// TestReplayRebuildsTuned sets off, is off in the whole package (no test
// runs tune -validate).
func longInParallel(t *testing.T) {
	t.Helper()
	t.Parallel()
}

func runLoom(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = loom(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExample(t *testing.T) {
	code, out, errs := runLoom(t, "example", "-S1", "2", "-S2", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"func chain[S1: int32, S2: int32]", "ScheduleBlock(C)", "max |F - Go reference| = 0", "rfactor(", "max relative difference from the interpreter"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestFmtAndRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "axpy.loom")
	src := "func axpy[N: int32](X: float32[N], Y: float32[N]) { serial for (i, 0, N) { Y[i] = 2.0f * X[i] + Y[i] } }"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runLoom(t, "fmt", path)
	want := "func axpy[N: int32](X: float32[N], Y: float32[N]) {\n  serial for (i, 0, N) {\n    Y[i] = 2.0f * X[i] + Y[i]\n  }\n}\n"
	if code != 0 || out != want {
		t.Fatalf("fmt: exit %d, stderr %s\n%s", code, errs, out)
	}
	if code, _, errs := runLoom(t, "fmt", "-w", path); code != 0 {
		t.Fatalf("fmt -w: %s", errs)
	}
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Fatalf("fmt -w wrote:\n%s", b)
	}
	code, out, errs = runLoom(t, "run", "-size", "N=5", path)
	if code != 0 || !strings.Contains(out, "X: 5 elements") || !strings.Contains(out, "Y: 5 elements") {
		t.Fatalf("run: exit %d, stderr %s\n%s", code, errs, out)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.loom")
	os.WriteFile(bad, []byte("func f(A: float32[4]) {\n  serial for (i, 0, 4) {\n    A[i + 1] = 1.0f\n  }\n}\n"), 0o644)
	broken := filepath.Join(dir, "broken.loom")
	os.WriteFile(broken, []byte("func f(A: float32[4]) {\n  A[0] = \n}\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"fmt"}, 2, "loom fmt: want at least one FILE as arguments, got 0"},
		{[]string{"fmt", broken}, 1, "broken.loom:3:1: expected an expression"},
		{[]string{"fmt", filepath.Join(dir, "missing.loom")}, 1, "no such file"},
		{[]string{"run", bad}, 1, "out-of-bounds store to A[4]"},
		{[]string{"run", "-size", "N", bad}, 2, "want NAME=VALUE"},
		{[]string{"example", "-S1", "-3"}, 2, "must be non-negative"},
		{[]string{"tune", "-workload", "gemm", "-target", "tpu"}, 1, `unknown -target "tpu"`},
		{[]string{"bench", "-workload", "gemm", "-size", "8", "-trace", filepath.Join(dir, "missing.trace")}, 1, "no such file"},
	} {
		code, _, errs := runLoom(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("loom %v: exit %d, stderr:\n%s\nwant exit %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// TestTuneCUDAWithoutGPU: a GPU tuning run on a machine without CUDA is
// refused, saying why.
func TestTuneCUDAWithoutGPU(t *testing.T) {
	if _, err := cuda.Open(); err == nil {
		t.Skip("this machine has a CUDA GPU")
	}
	code, _, errs := runLoom(t, "tune", "-workload", "gemm", "-size", "8", "-target", "cuda")
	if code != 1 || !strings.Contains(errs, "-target cuda needs an NVIDIA GPU") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
}

// TestTuneCUDA runs loom tune -target cuda end to end on a small gemm: the
// GPU rules, every candidate compiled by NVRTC, run, checked against the
// reference and timed in a worker process, the records kept, the best
// kernel written as CUDA C. Without a GPU it runs loom in a child process
// that loads the stand-in driver of package cudaemu in place of CUDA (the
// kernels run on the CPU).
func TestTuneCUDA(t *testing.T) {
	// Without a GPU nearly all of it is a child process's (and g++'s).
	longInParallel(t)
	dir := t.TempDir()
	args := []string{"tune", "-workload", "gemm", "-size", "32", "-target", "cuda", "-trials", "2", "-seed", "2",
		"-db", filepath.Join(dir, "db.jsonl"), "-out", filepath.Join(dir, "out"), "-json", "-q"}
	var code int
	var out, errs string
	if _, err := cuda.Open(); err == nil {
		code, out, errs = runLoom(t, args...)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		lib, err := cudaemu.BuildDriver(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		child := exec.CommandContext(ctx, os.Args[0], args...)
		child.Env = append(os.Environ(), asLoomEnv+"=1", cuda.DriverEnv+"="+lib, cuda.NVRTCEnv+"="+lib)
		var o, e bytes.Buffer
		child.Stdout, child.Stderr = &o, &e
		err = child.Run()
		code, out, errs = child.ProcessState.ExitCode(), o.String(), e.String()
		if err != nil && code <= 0 {
			t.Fatalf("loom tune in a child process: %v\n%s\n%s", err, o.String(), e.String())
		}
	}
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errs)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("not one JSON summary: %v\n%s", err, out)
	}
	if sum["failed"] != 0.0 || sum["trials"] != 2.0 {
		t.Errorf("summary: %s", out)
	}
	src, err := os.ReadFile(filepath.Join(dir, "out", "gemm.cu"))
	if err != nil || !strings.Contains(string(src), "__global__") {
		t.Errorf("the kernel written: %v\n%s", err, src)
	}
	db, err := os.ReadFile(filepath.Join(dir, "db.jsonl"))
	if err != nil || strings.Count(string(db), `"target":"cuda/sm_`) != 4 || strings.Count(string(db), `"confirmed":2`) != 2 {
		t.Errorf("the records: %v\n%s", err, db)
	}
}

// TestBench runs loom bench on a small gemm and checks its JSON line.
func TestBench(t *testing.T) {
	code, out, errs := runLoom(t, "bench", "-workload", "gemm", "-size", "64", "-threads", "2", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, key := range []string{"workload", "size", "threads", "schedule", "ms", "gflops", "gbps", "compile_ms", "max_rel_err"} {
		if _, ok := r[key]; !ok {
			t.Errorf("no %q in %s", key, out)
		}
	}
	if r["workload"] != "gemm" || r["size"] != 64.0 || r["threads"] != 2.0 || r["schedule"] != "hand" {
		t.Errorf("wrong fields: %s", out)
	}
	if e, _ := r["max_rel_err"].(float64); e > 1e-4 {
		t.Errorf("max_rel_err %g", e)
	}
	// Every workload takes its sizes by name.
	code, out, errs = runLoom(t, "bench", "-workload", "softmax", "-size", "R=64,D=128", "-threads", "1", "-json")
	if code != 0 || !strings.Contains(out, `"shape":"64x128"`) {
		t.Errorf("bench softmax at R=64,D=128: exit %d, %s\n%s", code, errs, out)
	}
	// The default schedule, decided without tuning, is checked like the
	// others, and says how long it took to decide.
	for _, w := range []string{"gemm_bias_relu", "softmax", "rmsnorm", "conv2d"} {
		size := map[string]string{"gemm_bias_relu": "40", "softmax": "R=12,D=100", "rmsnorm": "R=7,D=64", "conv2d": "C=8,H=9,W=9,K=16"}[w]
		code, out, errs := runLoom(t, "bench", "-workload", w, "-size", size, "-threads", "2", "-schedule", "default", "-json")
		if code != 0 || !strings.Contains(out, `"schedule":"default"`) || !strings.Contains(out, `"schedule_ms":`) {
			t.Errorf("bench %s -schedule default: exit %d, %s\n%s", w, code, errs, out)
		}
	}
	if code, _, errs := runLoom(t, "bench", "-workload", "nope"); code == 0 || !strings.Contains(errs, "unknown workload") {
		t.Errorf("an unknown workload: exit %d, %s", code, errs)
	}
	// -cpuprofile writes a profile; a path that cannot be
	// created is an error before any work.
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	if code, _, errs := runLoom(t, "bench", "-workload", "gemm", "-size", "32", "-threads", "1", "-cpuprofile", prof); code != 0 {
		t.Fatalf("bench -cpuprofile: exit %d: %s", code, errs)
	}
	if data, err := os.ReadFile(prof); err != nil {
		t.Error(err)
	} else if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b { // a profile is gzipped
		t.Errorf("-cpuprofile wrote no profile (%d bytes)", len(data))
	}
	if code, _, errs := runLoom(t, "bench", "-workload", "gemm", "-cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "p")); code != 1 || !strings.Contains(errs, "-cpuprofile") {
		t.Errorf("an unwritable -cpuprofile: exit %d, %s", code, errs)
	}
}

// TestFuse fuses a JSON graph, prints its plan and memory plan, and
// checks it against one kernel per operator.
func TestFuse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.json")
	os.WriteFile(path, []byte(`{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 16]}],
		"nodes": [{"op": "reduce_sum", "inputs": ["X"], "output": "R", "attrs": {"axes": [1]}},
		          {"op": "reduce_sum", "inputs": ["X"], "output": "C", "attrs": {"axes": [0]}},
		          {"op": "exp", "inputs": ["R"], "output": "E"},
		          {"op": "mul", "inputs": ["C", "C"], "output": "Y"}],
		"outputs": ["E", "Y"]}`), 0o644)
	code, out, errs := runLoom(t, "fuse", "-dump", "dce", "-size", "S=3", path)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, want := range []string{"=== after dce ===", "kernel 0 g_0 (reduce): R E", "func g_0[S: int32]", "memory plan:", "check Y: max relative error 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"name": "g", "inputs": [], "nodes": [{"op": "nope", "inputs": [], "output": "Y"}], "outputs": ["Y"]}`), 0o644)
	if code, _, errs := runLoom(t, "fuse", bad); code != 1 || !strings.Contains(errs, `nodes[0].op (nope): unknown operator "nope"`) {
		t.Errorf("bad graph: exit %d, stderr %s", code, errs)
	}
}

// TestTune runs a short search on a small gemm: the summary, the record
// in the database and the kernel files.
func TestTune(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "db.jsonl")
	code, out, errs := runLoom(t, "tune", "-workload", "gemm", "-size", "64", "-trials", "8", "-threads", "1", "-db", db, "-out", dir, "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var summary map[string]any
	if err := json.Unmarshal([]byte(out), &summary); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if summary["trials"] != 8.0 || summary["speedup"].(float64) <= 0 {
		t.Errorf("summary %v", summary)
	}
	if !strings.Contains(errs, "8/8 trials") {
		t.Errorf("no progress bar on stderr: %q", errs)
	}
	// 8 trials, then the 6 fastest measured again (-confirm).
	data, _ := os.ReadFile(db)
	if n, c := strings.Count(string(data), "\n"), strings.Count(string(data), `"confirmed":2`); n != 14 || c != 6 {
		t.Errorf("%d records in the database, %d confirmed; want 8 trials and 6 confirmed", n, c)
	}
	for _, file := range []string{"gemm.ll", "gemm.o", "gemm.h", "loomrt.c"} {
		if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
			t.Error(err)
		}
	}
}

// TestTunedCommands tunes a small gemm and the kernels of a graph, then
// uses the records: bench -schedule tuned, lower, replay and plot.
func TestTunedCommands(t *testing.T) {
	longInParallel(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "db.jsonl")
	if code, _, errs := runLoom(t, "tune", "-workload", "gemm", "-size", "48", "-trials", "6", "-threads", "1", "-db", db, "-q"); code != 0 {
		t.Fatalf("tune: exit %d: %s", code, errs)
	}
	code, out, errs := runLoom(t, "bench", "-workload", "gemm", "-size", "48", "-threads", "1", "-schedule", "tuned", "-db", db, "-json")
	if code != 0 || !strings.Contains(out, `"schedule":"tuned"`) {
		t.Fatalf("bench -schedule tuned: exit %d: %s\n%s", code, errs, out)
	}
	code, out, errs = runLoom(t, "lower", "-workload", "gemm", "-size", "48", "-threads", "1", "-db", db)
	if code != 0 || !strings.Contains(out, "// gemm before:") || !strings.Contains(out, "// gemm after:") || !strings.Contains(out, "get_block(\"C\")") {
		t.Fatalf("lower: exit %d: %s\n%s", code, errs, out)
	}
	code, out, errs = runLoom(t, "replay", "-workload", "gemm", "-size", "48", "-threads", "1", "-db", db)
	if code != 0 || !strings.Contains(out, "func apply(sch *schedule.Schedule) error {") || !strings.Contains(out, `sch.GetBlock("C")`) {
		t.Fatalf("replay: exit %d: %s\n%s", code, errs, out)
	}
	svg := filepath.Join(dir, "curve.svg")
	code, out, errs = runLoom(t, "plot", "-workload", "gemm", "-size", "48", "-threads", "1", "-db", db, "-o", svg)
	if code != 0 || !strings.Contains(out, "6 trials") {
		t.Fatalf("plot: exit %d: %s\n%s", code, errs, out)
	}
	if data, err := os.ReadFile(svg); err != nil || !strings.Contains(string(data), "<polyline") {
		t.Fatalf("plot wrote %q, %v", data, err)
	}
	// Another size has no records: a clear error, exit 1.
	// -json: one JSON object per line, with the fields documented.
	for _, c := range []struct {
		args []string
		keys []string
	}{
		{[]string{"lower", "-workload", "gemm", "-size", "48", "-threads", "1", "-db", db, "-json"}, []string{"kernel", "shape", "before", "schedule", "after"}},
		{[]string{"replay", "-workload", "gemm", "-size", "48", "-threads", "1", "-db", db, "-json"}, []string{"kernel", "record_shape", "same_sizes", "target", "ms", "go"}},
		{[]string{"plot", "-workload", "gemm", "-size", "48", "-threads", "1", "-db", db, "-o", svg, "-json"}, []string{"kernel", "run", "trials", "best", "unit", "confirmed", "svg"}},
	} {
		checkJSONLines(t, c.keys, c.args...)
	}
	// Another size has no records: a clear error that names the
	// workload as the user did and says what the database has, exit 1;
	// with -any-size the record of 48 is taken, and said to be.
	if code, _, errs := runLoom(t, "replay", "-workload", "gemm", "-size", "32", "-threads", "1", "-db", db); code != 1 ||
		!strings.Contains(errs, "gemm at 32x32x32 has no successful record") || !strings.Contains(errs, "48x48x48 on ") {
		t.Errorf("replay without records: exit %d, %s", code, errs)
	}
	if code, out, errs := runLoom(t, "replay", "-workload", "gemm", "-size", "32", "-threads", "1", "-db", db, "-any-size"); code != 0 ||
		!strings.Contains(out, "No record of gemm at 32x32x32: this is the best of 48x48x48") {
		t.Errorf("replay -any-size: exit %d, %s\n%s", code, errs, out)
	}
	// bench and tune agree on the thread count by default (all cores):
	// records tuned with the default are what bench -schedule tuned finds.
	if code, _, errs := runLoom(t, "tune", "-workload", "gemm", "-size", "24", "-trials", "2", "-confirm", "0", "-db", db, "-q"); code != 0 {
		t.Fatalf("tune: exit %d: %s", code, errs)
	}
	if code, out, errs := runLoom(t, "bench", "-workload", "gemm", "-size", "24", "-schedule", "tuned", "-db", db, "-json"); code != 0 || !strings.Contains(out, `"schedule":"tuned"`) {
		t.Errorf("bench -schedule tuned with the defaults: exit %d: %s\n%s", code, errs, out)
	}

	// A graph: every fused kernel is tuned (not confirmed: the first
	// tune above and TestTune check -confirm).
	code, out, errs = runLoom(t, "tune", "-graph", "../../testdata/fusion/mlp.json", "-size", "T=8", "-trials", "2", "-confirm", "0", "-threads", "1", "-db", db, "-q", "-json")
	if code != 0 {
		t.Fatalf("tune -graph: exit %d: %s\n%s", code, errs, out)
	}
	if n := strings.Count(out, `"kernel"`); n < 2 {
		t.Errorf("tune -graph tuned %d kernels, want every kernel of the MLP:\n%s", n, out)
	}
	if code, _, errs := runLoom(t, "tune", "-graph", "../../testdata/fusion/mlp.json"); code != 2 || !strings.Contains(errs, "-size T=N") {
		t.Errorf("tune -graph without sizes: exit %d, %s", code, errs)
	}
	// -h explains the flags of every command and exits 0.
	for name := range commands {
		if code, _, errs := runLoom(t, name, "-h"); code != 0 || !strings.Contains(errs, "usage: loom "+name) {
			t.Errorf("%s -h: exit %d, %s", name, code, errs)
		}
		if code, _, errs := runLoom(t, "help", name); code != 0 || !strings.Contains(errs, "usage: loom "+name) {
			t.Errorf("help %s: exit %d, %s", name, code, errs)
		}
	}
}

// TestBuildLinksWithC: loom build writes a directory a C program links
// against with nothing else (the kernel's object, its header, loom's
// runtime), under the name asked for; the program's result is right.
func TestBuildLinksWithC(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		if cc, err = exec.LookPath("gcc"); err != nil {
			t.Skip("no C compiler")
		}
	}
	var dir string
	for _, sched := range []struct{ name, says string }{{"hand", "the hand-written one"}, {"default", "the default, decided without tuning"}} {
		dir = t.TempDir()
		code, out, errs := runLoom(t, "build", "-workload", "gemm", "-size", "16", "-schedule", sched.name, "-out", dir, "-name", "mygemm")
		if code != 0 || !strings.Contains(out, "schedule: "+sched.says) {
			t.Fatalf("build -schedule %s: exit %d: %s\n%s", sched.name, code, errs, out)
		}
		header, err := os.ReadFile(filepath.Join(dir, "mygemm.h"))
		if err != nil || !strings.Contains(string(header), "cc -O2 -pthread -I. your_program.c mygemm.o loomrt.c -lm") {
			t.Fatalf("the header does not show how to link: %v\n%s", err, header)
		}
		prog := `#include <stdio.h>
#include "mygemm.h"
int main(void) {
	float a[256], b[256], c[256];
	for (int i = 0; i < 256; i++) { a[i] = 1; b[i] = i % 16; }
	if (mygemm(a, b, c) != 0) return 1;
	printf("%g %g\n", c[0], c[255]);
	return 0;
}
`
		if err := os.WriteFile(filepath.Join(dir, "main.c"), []byte(prog), 0o644); err != nil {
			t.Fatal(err)
		}
		// The exact line the header shows.
		build := exec.Command(cc, "-O2", "-pthread", "-I.", "main.c", "mygemm.o", "loomrt.c", "-lm", "-o", "prog")
		build.Dir = dir
		if msg, err := build.CombinedOutput(); err != nil {
			t.Fatalf("linking a C program: %v\n%s", err, msg)
		}
		run := exec.Command(filepath.Join(dir, "prog"))
		run.Env = append(os.Environ(), "LOOM_NUM_THREADS=2")
		got, err := run.CombinedOutput()
		if err != nil || strings.TrimSpace(string(got)) != "0 240" {
			t.Fatalf("the program printed %q (%v), want \"0 240\"", got, err)
		}
	}
	// -schedule hand is for the built-in workloads only; an unknown
	// schedule and a missing -out are usage errors.
	if code, _, errs := runLoom(t, "build", "-workload", "gemm", "-size", "16", "-schedule", "fast", "-out", dir); code != 2 || !strings.Contains(errs, `unknown -schedule "fast"`) {
		t.Errorf("-schedule fast: exit %d, %s", code, errs)
	}
	if code, _, errs := runLoom(t, "build", "-workload", "gemm", "-size", "16"); code != 2 || !strings.Contains(errs, "-out DIR is required") {
		t.Errorf("no -out: exit %d, %s", code, errs)
	}
}

// TestBuildGraph: loom build -graph writes one C library for the whole
// graph; a C program linked with it alone runs the graph at a size of its
// choosing, and a wrong shape comes back as a status with a message.
func TestBuildGraph(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	code, out, errs := runLoom(t, "build", "-graph", "../../testdata/fusion/mlp.json", "-threads", "2", "-o", dir)
	if code != 0 || !strings.Contains(out, "libmlp.a") {
		t.Fatalf("build -graph: exit %d: %s\n%s", code, errs, out)
	}
	prog := `#include <stdio.h>
#include "mlp.h"
static float x[5 * 64], w1[64 * 256], b1[256], w2[256 * 64], b2[64], g[64], beta[64], y[5 * 64];
int main(void) {
	loom_status st;
	int64_t xs[] = {5, 64}, w1s[] = {64, 256}, b1s[] = {256}, w2s[] = {256, 64}, b2s[] = {64}, gs[] = {64}, ys[2];
	for (int i = 0; i < 64; i++) g[i] = 1;
	for (int i = 0; i < 5 * 64; i++) x[i] = i % 7;
	if (mlp_output_shapes(xs, w1s, b1s, w2s, b2s, gs, gs, ys, &st) || ys[0] != 5 || ys[1] != 64) return 1;
	if (mlp(x, xs, w1, w1s, b1, b1s, w2, w2s, b2, b2s, g, gs, beta, gs, y, ys, 0, &st)) { printf("%s\n", st.message); return 1; }
	int64_t bad[] = {255};
	int rc = mlp(x, xs, w1, w1s, b1, bad, w2, w2s, b2, b2s, g, gs, beta, gs, y, ys, 0, &st);
	printf("%d %s\n", rc, st.message);
	return 0;
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.c"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(cc, "-O2", "-I", dir, "main.c", filepath.Join(dir, "libmlp.a"), "-lm", "-pthread", "-o", "prog")
	build.Dir = dir
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("linking a C program: %v\n%s", err, msg)
	}
	got, err := exec.Command(filepath.Join(dir, "prog")).CombinedOutput()
	want := "8 module: input B1: dimension 0 is 255; the graph's is 256"
	if err != nil || strings.TrimSpace(string(got)) != want {
		t.Fatalf("the program printed %q (%v), want %q", got, err, want)
	}
	if code, _, errs := runLoom(t, "build", "-graph", "../../testdata/fusion/mlp.json", "-schedule", "hand", "-o", dir); code != 2 || !strings.Contains(errs, "-graph takes -schedule auto") {
		t.Errorf("-graph -schedule hand: exit %d, %s", code, errs)
	}
}

// TestBenchGraph: loom bench -graph prints one JSON line with the
// module's time, its kernels' sum, the arena and the compile times; a
// missing symbol is a usage error.
func TestBenchGraph(t *testing.T) {
	code, out, errs := runLoom(t, "bench", "-graph", "../../testdata/graphs/attention.txtar", "-size", "S=5", "-threads", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	var line struct {
		Graph      string
		Kernels    int
		MS         float64 `json:"ms"`
		KernelMS   float64 `json:"kernel_ms"`
		PeakBytes  int64   `json:"peak_bytes"`
		NaiveBytes int64   `json:"naive_bytes"`
	}
	if err := json.Unmarshal([]byte(out), &line); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if line.Graph != "attention" || line.Kernels == 0 || line.MS <= 0 || line.KernelMS <= 0 || line.PeakBytes <= 0 || line.PeakBytes > line.NaiveBytes {
		t.Errorf("implausible line: %s", out)
	}
	if code, _, errs := runLoom(t, "bench", "-graph", "../../testdata/graphs/attention.txtar"); code != 2 || !strings.Contains(errs, "-size S=N") {
		t.Errorf("no -size: exit %d, %s", code, errs)
	}
}

// TestTuneFunc tunes a function of the user's own, from a .loom file, at
// the sizes given, and writes it out under the name asked for.
func TestTuneFunc(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "scale.loom")
	src := `func scale[N: int32](X: float32[N, 64], Y: float32[N, 64]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (j, 0, 64) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, N), vj = spatial(0, 64))
          reads(X[vi, vj])
          writes(Y[vi, vj])
          Y[vi, vj] = X[vi, vj] * 3.0f
        }
      }
    }
  }
}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "db.jsonl")
	code, out, errs := runLoom(t, "tune", "-func", path, "-size", "N=32", "-trials", "3", "-confirm", "0", "-threads", "1", "-db", db, "-out", dir, "-name", "triple", "-q", "-json")
	if code != 0 {
		t.Fatalf("tune -func: exit %d: %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, `"kernel":"scale"`) || !strings.Contains(out, `"shape":"N=32"`) || !strings.Contains(out, "triple.o") {
		t.Errorf("summary: %s", out)
	}
	data, _ := os.ReadFile(db)
	if !strings.Contains(string(data), `"sizes":{"N":32}`) {
		t.Errorf("the records do not carry their sizes:\n%.500s", data)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "-func", path}, "give every symbolic size a value: -size N=N"},
		{[]string{"tune", "-func", path, "-size", "N=4,M=2"}, "has no symbolic size M"},
		{[]string{"tune", "-func", path, "-graph", "g.json", "-size", "N=4"}, "-func and -graph name two sources"},
		{[]string{"lower", "-func", filepath.Join(dir, "missing.loom")}, "no such file"},
	} {
		if code, _, errs := runLoom(t, c.args...); code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("loom %v: exit %d, %s; want %q", c.args, code, errs, c.want)
		}
	}
}

// checkJSONLines runs loom and checks that stdout is one or more JSON
// objects, one per line, each with the keys.
func checkJSONLines(t *testing.T, keys []string, args ...string) []map[string]any {
	t.Helper()
	code, out, errs := runLoom(t, args...)
	if code != 0 {
		t.Fatalf("loom %v: exit %d: %s", args, code, errs)
	}
	var objs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var obj map[string]any
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("loom %v: a line is not a JSON object (%v):\n%.300s", args, err, line)
		}
		objs = append(objs, obj)
	}
	for _, k := range keys {
		found := false
		for _, obj := range objs {
			_, ok := obj[k]
			found = found || ok
		}
		if !found {
			t.Errorf("loom %v: no line has %q:\n%.1000s", args, k, out)
		}
	}
	return objs
}

// TestFuseJSONAndCheck: fuse -json prints the kernels, the memory plan
// and the checks as JSON lines; the default check of a large graph runs
// at smaller symbol values and says so; -check off skips it; run -json
// prints one object per buffer.
func TestFuseJSONAndCheck(t *testing.T) {
	graph := "../../testdata/fusion/mlp.json"
	objs := checkJSONLines(t, []string{"kernel", "kind", "func", "memory", "peak_bytes", "check", "max_rel_err", "ok"}, "fuse", "-json", "-size", "T=8", graph)
	if last := objs[len(objs)-1]; last["ok"] != true {
		t.Errorf("the check failed: %v", last)
	}
	code, out, errs := runLoom(t, "fuse", "-size", "T=1000000", graph)
	if code != 0 || !strings.Contains(out, "smaller than the sizes given (-check full checks at those)") || !strings.Contains(out, "check Out: max relative error 0") {
		t.Errorf("fuse at T=1000000: exit %d, %s\n%.3000s", code, errs, out)
	}
	// A layer of fixed shape too large to interpret is checked compiled.
	layer := filepath.Join(t.TempDir(), "layer.json")
	os.WriteFile(layer, []byte(`{"name": "layer", "inputs": [{"name": "X", "dtype": "float32", "shape": [196, 256]}, {"name": "W", "dtype": "float32", "shape": [256, 1024]}, {"name": "B", "dtype": "float32", "shape": [1024]}],
		"nodes": [{"op": "matmul", "inputs": ["X", "W"], "output": "H"}, {"op": "add", "inputs": ["H", "B"], "output": "HB"}, {"op": "relu", "inputs": ["HB"], "output": "Y"}],
		"outputs": ["Y"]}`), 0o644)
	objs = checkJSONLines(t, []string{"check", "with"}, "fuse", "-json", layer)
	if last := objs[len(objs)-1]; last["with"] != "compiled" || last["ok"] != true {
		t.Errorf("the layer's check: %v", last)
	}
	if code, out, _ := runLoom(t, "fuse", "-size", "T=1000000", "-check", "off", graph); code != 0 || strings.Contains(out, "check Out") {
		t.Errorf("-check off: exit %d\n%.2000s", code, out)
	}
	if code, _, errs := runLoom(t, "fuse", "-check", "some", graph); code != 2 || !strings.Contains(errs, `unknown -check "some"`) {
		t.Errorf("-check some: exit %d, %s", code, errs)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "axpy.loom")
	os.WriteFile(path, []byte("func axpy[N: int32](X: float32[N], Y: float32[N]) { serial for (i, 0, N) { Y[i] = 2.0f * X[i] + Y[i] } }"), 0o644)
	objs = checkJSONLines(t, []string{"buffer", "elements", "sum", "first"}, "run", "-json", "-size", "N=5", path)
	if len(objs) != 2 || objs[0]["buffer"] != "X" || objs[0]["elements"] != 5.0 {
		t.Errorf("run -json: %v", objs)
	}
}

// TestLowerStages: lower -stages prints the function after each step
// that changed it and the code generator's remarks (a vectorized loop
// that runs as scalar code, and why); -emit prints the IR loom writes,
// the optimized IR and the assembly.
func TestLowerStages(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.trace")
	os.WriteFile(trace, []byte(`b0 = get_block("C")
l0, l1, l2 = get_loops(b0)
l3, l4 = split(l1, [-1, 16])
vectorize(l4)
l5, l6 = split(l0, [-1, 4])
vectorize(l6)
`), 0o644)
	code, out, errs := runLoom(t, "lower", "-workload", "gemm", "-size", "32", "-trace", trace, "-stages")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"// stage 1: after l3, l4 = split(l1, [-1, 16])",
		"// stage 4: after vectorize(l6)",
		"vectorized loop j_1 runs as a scalar loop inside vectorized loop lanes: only one loop of a nest can be vectorized",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lower -stages lacks %q:\n%.3000s", want, out)
		}
	}
	if strings.Contains(out, "after get_block") {
		t.Errorf("a step that changed nothing is printed as a stage:\n%.2000s", out)
	}
	for emit, want := range map[string]string{"ll": "define i32 @matmul(", "opt": "local_unnamed_addr", "asm": "matmul:"} {
		code, out, errs := runLoom(t, "lower", "-workload", "gemm", "-size", "32", "-trace", trace, "-emit", emit)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("-emit %s: exit %d, %s; want %q in:\n%.1500s", emit, code, errs, want, out)
		}
	}
	if code, _, errs := runLoom(t, "lower", "-workload", "gemm", "-size", "32", "-trace", trace, "-emit", "obj"); code != 2 || !strings.Contains(errs, `unknown -emit "obj"`) {
		t.Errorf("-emit obj: exit %d, %s", code, errs)
	}
}

// TestLowerDefault: lower -default prints the schedule loom decides
// without tuning, replayed (its stages too), for a workload and for each
// kernel of a graph.
func TestLowerDefault(t *testing.T) {
	code, out, errs := runLoom(t, "lower", "-workload", "gemm", "-size", "64", "-threads", "1", "-default", "-stages")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"// schedule:", "vectorize(", "// stage 1: after", "vectorized for ("} {
		if !strings.Contains(out, want) {
			t.Errorf("lower -default lacks %q:\n%.3000s", want, out)
		}
	}
	code, out, errs = runLoom(t, "lower", "-graph", "../../testdata/fusion/mlp.json", "-size", "T=3", "-default", "-json")
	if code != 0 {
		t.Fatalf("graph: exit %d: %s", code, errs)
	}
	if n := strings.Count(out, `"kernel":`); n < 2 {
		t.Errorf("graph: %d kernels printed, want every kernel of mlp.json:\n%.2000s", n, out)
	}
	db := filepath.Join(t.TempDir(), "none.jsonl") // no database: the shipped model
	code, out, errs = runLoom(t, "lower", "-workload", "gemm", "-size", "64", "-threads", "1", "-default", "-refine", "4", "-db", db)
	if code != 0 || !strings.Contains(errs, "refined among") || !strings.Contains(out, "vectorized for (") {
		t.Errorf("lower -default -refine: exit %d, %s\n%.2000s", code, errs, out)
	}
	code, out, errs = runLoom(t, "bench", "-workload", "gemm", "-size", "64", "-threads", "1", "-schedule", "refined", "-refine", "4", "-db", db, "-json")
	if code != 0 || !strings.Contains(out, `"schedule":"refined"`) {
		t.Errorf("bench -schedule refined: exit %d, %s\n%s", code, errs, out)
	}
}

// TestTuneSaysWhyNoneRan: when every candidate fails, tune says why (the
// first failures' reasons), not only that none ran.
func TestTuneSaysWhyNoneRan(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db.jsonl")
	code, _, errs := runLoom(t, "tune", "-workload", "gemm", "-size", "64", "-trials", "2", "-confirm", "0", "-timeout", "1ms", "-db", db, "-q")
	if code != 1 || !strings.Contains(errs, "none of the 2 candidates ran correctly; the reasons:") || !strings.Contains(errs, "timed out after 1ms") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
}

// TestBenchSuite: loom bench -suite tunes every graph of a directory
// (those -cases selects) and prints one JSON line per case with its time,
// its kernels' and how many distinct schedules the trials were.
func TestBenchSuite(t *testing.T) {
	dir := t.TempDir()
	graph := `{"name": "small", "inputs": [{"name": "X", "dtype": "float32", "shape": [16, 32]}],
  "nodes": [{"op": "softmax", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`
	for _, name := range []string{"small_softmax", "skipped"} {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(graph), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runLoom(t, "bench", "-suite", dir, "-cases", "^small", "-trials", "3", "-threads", "1", "-db", filepath.Join(dir, "db.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1 (one case selected):\n%s", len(lines), out)
	}
	var line struct {
		Case     string    `json:"case"`
		Kernels  int       `json:"kernels"`
		Distinct int       `json:"distinct"`
		LoomMs   float64   `json:"loom_ms"`
		KernelMs []float64 `json:"kernel_ms"`
		SearchMs float64   `json:"search_ms"`
		// The default schedule and the nest as written, timed in
		// process as the tuned kernel is.
		DefaultMs     *float64 `json:"default_ms"`
		UnscheduledMs *float64 `json:"unscheduled_ms"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	if line.Case != "small_softmax" || line.Kernels != 1 || len(line.KernelMs) != 1 || line.LoomMs <= 0 || line.LoomMs != line.KernelMs[0] || line.SearchMs <= 0 || line.Distinct < 1 {
		t.Errorf("line: %s", lines[0])
	}
	if line.DefaultMs == nil || *line.DefaultMs <= 0 || line.UnscheduledMs == nil || *line.UnscheduledMs <= 0 {
		t.Errorf("no default or unscheduled time: %s", lines[0])
	}
	// -trials 0: no search, the default schedule is the result.
	code, out, errs = runLoom(t, "bench", "-suite", dir, "-cases", "^small", "-trials", "0", "-threads", "1", "-db", filepath.Join(dir, "db0.jsonl"))
	if code != 0 {
		t.Fatalf("-trials 0: exit %d: %s\n%s", code, errs, out)
	}
	line.DefaultMs, line.UnscheduledMs, line.Distinct = nil, nil, 0
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &line); err != nil {
		t.Fatalf("-trials 0: %v\n%s", err, out)
	}
	if line.LoomMs <= 0 || line.DefaultMs == nil || *line.DefaultMs != line.LoomMs || line.Distinct != 0 || line.UnscheduledMs != nil {
		t.Errorf("-trials 0: the default schedule's time is the line's, with no search and nothing unscheduled timed: %s", out)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "db0.jsonl")); err == nil && len(data) > 0 {
		t.Errorf("-trials 0 recorded trials:\n%s", data)
	}
	if code, _, errs := runLoom(t, "bench", "-suite", t.TempDir()); code != 1 || !strings.Contains(errs, "no graph files") {
		t.Errorf("an empty suite: exit %d: %s", code, errs)
	}
	// -results keeps the lines; a second run skips the cases measured
	// (printing their lines as they were), a line a killed run left
	// half-written is run again (one trial a kernel: the search is
	// checked above).
	results := filepath.Join(dir, "results.jsonl")
	args := []string{"bench", "-suite", dir, "-trials", "1", "-threads", "1", "-db", filepath.Join(dir, "db.jsonl"), "-results", results}
	code, first, errs := runLoom(t, args...)
	if code != 0 || strings.Count(first, "\n") != 2 {
		t.Fatalf("with -results: exit %d: %s\n%s", code, first, errs)
	}
	if data, _ := os.ReadFile(results); string(data) != first {
		t.Errorf("the results file:\n%s\nwant what was printed:\n%s", data, first)
	}
	firstLines := strings.Split(strings.TrimSpace(first), "\n")
	f, _ := os.OpenFile(results, os.O_WRONLY|os.O_TRUNC, 0)
	f.WriteString(firstLines[0] + "\n" + firstLines[1][:len(firstLines[1])/2])
	f.Close()
	code, again, errs := runLoom(t, args...)
	againLines := strings.Split(strings.TrimSpace(again), "\n")
	if code != 0 || len(againLines) != 2 || againLines[0] != firstLines[0] || againLines[1] == firstLines[1] {
		t.Errorf("resumed: exit %d, want the first case's line as it was and the second case run again:\n%s\nfirst run:\n%s", code, again, first)
	}
}

// TestBenchSuiteOneDNN: with -onednn, each case also runs on oneDNN (the
// suite's harness, built from tools/onednn where oneDNN is installed), on
// the same inputs, its result checked against loom's.
func TestBenchSuiteOneDNN(t *testing.T) {
	longInParallel(t)
	if _, err := os.Stat("/usr/include/oneapi/dnnl/dnnl.hpp"); err != nil {
		t.Skip("oneDNN is not installed (make onednn installs it)")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("no g++")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "onednn_suite")
	// -O0: the harness's checks are tested here, not its speed (oneDNN's
	// kernels are the library's own either way); -O2 took g++ 6.2 s of
	// CPU, -O0 4.0 s.
	if out, err := exec.Command("g++", "-O0", "-std=c++17", "-o", bin, "../onednn/suite.cpp", "-ldnnl").CombinedOutput(); err != nil {
		t.Fatalf("building the harness: %v\n%s", err, out)
	}
	graph := `{"name": "mm", "inputs": [{"name": "A", "dtype": "float32", "shape": [8, 16]}, {"name": "B", "dtype": "float32", "shape": [16, 24]},
  {"name": "Bias", "dtype": "float32", "shape": [24]}, {"name": "R", "dtype": "float32", "shape": [8, 24]}],
  "nodes": [{"op": "matmul", "inputs": ["A", "B"], "output": "C"}, {"op": "add", "inputs": ["C", "Bias"], "output": "CB"},
    {"op": "relu", "inputs": ["CB"], "output": "CR"}, {"op": "add", "inputs": ["CR", "R"], "output": "Y"}], "outputs": ["Y"]}`
	os.WriteFile(filepath.Join(dir, "mm.json"), []byte(graph), 0o644)
	os.WriteFile(filepath.Join(dir, "mm.onednn"), []byte("matmul 8 16 24 relu 1\n"), 0o644)
	// The same case with a spec that computes something else: caught.
	os.WriteFile(filepath.Join(dir, "wrong.json"), []byte(graph), 0o644)
	os.WriteFile(filepath.Join(dir, "wrong.onednn"), []byte("matmul 8 16 24 none 1\n"), 0o644)
	// One trial a kernel: oneDNN's side is what is checked here, not
	// the search (TestBenchSuite's).
	code, out, errs := runLoom(t, "bench", "-suite", dir, "-trials", "1", "-threads", "1", "-db", filepath.Join(dir, "db.jsonl"), "-onednn", bin)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 1 || len(lines) != 2 {
		t.Fatalf("exit %d (want 1: one case is wrong), %d lines: %s\n%s", code, len(lines), out, errs)
	}
	if !strings.Contains(lines[0], `"onednn_ms":0.`) || !strings.Contains(lines[0], `"ratio":`) ||
		!strings.Contains(lines[0], `"onednn_plain_ms":`) || !strings.Contains(lines[0], `"onednn_any_ms":`) || !strings.Contains(lines[0], `"ratio_plain":`) {
		t.Errorf("the matmul case (oneDNN at its plain and its best layout): %s", lines[0])
	}
	if !strings.Contains(lines[1], "oneDNN's result differs from loom's") {
		t.Errorf("the wrong case: %s", lines[1])
	}
	// The batched matmul and reduction kinds, checked the same way.
	other := t.TempDir()
	bmm := `{"name": "bmm", "inputs": [{"name": "A", "dtype": "float32", "shape": [3, 8, 16]}, {"name": "B", "dtype": "float32", "shape": [3, 16, 24]}],
  "nodes": [{"op": "matmul", "inputs": ["A", "B"], "output": "Y"}], "outputs": ["Y"]}`
	colsum := `{"name": "colsum", "inputs": [{"name": "X", "dtype": "float32", "shape": [40, 24]}],
  "nodes": [{"op": "reduce_sum", "inputs": ["X"], "output": "Y", "attrs": {"axes": [0]}}], "outputs": ["Y"]}`
	os.WriteFile(filepath.Join(other, "bmm.json"), []byte(bmm), 0o644)
	os.WriteFile(filepath.Join(other, "bmm.onednn"), []byte("bmm 3 8 16 24\n"), 0o644)
	os.WriteFile(filepath.Join(other, "colsum.json"), []byte(colsum), 0o644)
	os.WriteFile(filepath.Join(other, "colsum.onednn"), []byte("reduce sum 1 1 40 24 1 1 1 24\n"), 0o644)
	code, out, errs = runLoom(t, "bench", "-suite", other, "-trials", "1", "-threads", "1", "-db", filepath.Join(other, "db.jsonl"), "-onednn", bin)
	if code != 0 || strings.Count(out, `"ratio":`) != 2 {
		t.Errorf("bmm and reduce: exit %d: %s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "1 threads: 2 cases against oneDNN, geometric mean of oneDNN ms / loom ms") {
		t.Errorf("no summary of the ratios on stderr: %s", errs)
	}
}

// TestBenchSuiteLayout: a case with a convolution runs with its channels
// last, as oneDNN's best layout may: the kernels that convert the graph's
// NCHW input, weights and output are timed apart (convert_ms), not
// tuned, and not counted in loom_ms.
func TestBenchSuiteLayout(t *testing.T) {
	dir := t.TempDir()
	graph := `{"name": "dw", "inputs": [{"name": "X", "dtype": "float32", "shape": [1, 16, 9, 9]}, {"name": "W", "dtype": "float32", "shape": [16, 1, 3, 3]}],
  "nodes": [{"op": "conv2d", "inputs": ["X", "W"], "output": "C", "attrs": {"groups": 16, "pads": [1, 1, 1, 1]}},
            {"op": "relu", "inputs": ["C"], "output": "Y"}], "outputs": ["Y"]}`
	if err := os.WriteFile(filepath.Join(dir, "dw.json"), []byte(graph), 0o644); err != nil {
		t.Fatal(err)
	}
	// One trial: the layout and the conversions' timing are what is
	// checked here, not the search (TestBenchSuite's).
	code, out, errs := runLoom(t, "bench", "-suite", dir, "-trials", "1", "-threads", "1", "-db", filepath.Join(dir, "db.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	var line struct {
		Kernels   int       `json:"kernels"`
		LoomMs    float64   `json:"loom_ms"`
		KernelMs  []float64 `json:"kernel_ms"`
		Layout    string    `json:"layout"`
		ConvertMs float64   `json:"convert_ms"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &line); err != nil {
		t.Fatal(err)
	}
	if line.Layout != "NHWC" || line.ConvertMs <= 0 || line.Kernels != 1 || len(line.KernelMs) != 1 || line.LoomMs != line.KernelMs[0] {
		t.Errorf("want the convolution alone timed in NHWC, its conversions apart: %s", out)
	}
}

// TestTraceStepsAfterPostprocNoted: loom replays a trace file up to its
// enter_postproc mark and derives the steps after it, so a step written
// there by hand does not run: lower and build say so on stderr, and say
// nothing for a trace whose steps after the mark are the derived ones.
func TestTraceStepsAfterPostprocNoted(t *testing.T) {
	dir := t.TempDir()
	fn := filepath.Join(dir, "scale.loom")
	src := `func scale(X: float32[64, 64], Y: float32[64, 64]) {
  ScheduleBlock(root) {
    serial for (i, 0, 64) {
      serial for (j, 0, 64) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 64), vj = spatial(0, 64))
          reads(X[vi, vj])
          writes(Y[vi, vj])
          Y[vi, vj] = X[vi, vj] * 3.0f
        }
      }
    }
  }
}
`
	if err := os.WriteFile(fn, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	derived := "b0 = get_block(\"Y\")\nl1, l2 = get_loops(b0)\nvectorize(l2)\nenter_postproc()\n"
	handWritten := derived + "l3 = get_loop(\"i\")\nl4, l5 = split(l3, [-1, 4])\n"
	for _, c := range []struct {
		name, trace string
		noted       bool
	}{
		{"derived", derived, false},
		{"hand-written", handWritten, true},
	} {
		path := filepath.Join(dir, c.name+".txt")
		if err := os.WriteFile(path, []byte(c.trace), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range [][]string{
			{"lower", "-func", fn, "-trace", path},
			{"build", "-func", fn, "-trace", path, "-out", filepath.Join(dir, "out-"+c.name)},
		} {
			code, out, errs := runLoom(t, cmd...)
			if code != 0 {
				t.Fatalf("%s %s: exit %d: %s\n%s", cmd[0], c.name, code, errs, out)
			}
			if noted := strings.Contains(errs, "steps after enter_postproc() were replaced"); noted != c.noted {
				t.Errorf("%s with the %s trace: noted %v, want %v; stderr:\n%s", cmd[0], c.name, noted, c.noted, errs)
			}
		}
	}
}
