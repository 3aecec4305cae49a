package autotune

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm/native"
)

// TestMain lets the test binary serve as the runner's worker process.
func TestMain(m *testing.M) {
	if os.Getenv("LOOM_AUTOTUNE_WORKER") == "1" {
		if err := ServeWorker(os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

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

// TestRunnerIsolation: a correct candidate is timed; one that crashes,
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
	for i, want := range map[int]string{1: "wrong result", 2: "worker failed", 3: "timed out"} {
		if runs[i].Err == nil || !strings.Contains(runs[i].Err.Error(), want) {
			t.Errorf("candidate %d: %v, want an error containing %q", i, runs[i].Err, want)
		}
	}
}
