package native

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/workload"
)

// testPool returns the build workers of this run's LLVM, in a fresh
// directory, or skips when no worker runs here.
func testPool(t *testing.T) (*Toolchain, *workerPool) {
	t.Helper()
	if os.Getenv(BuildEnv) == "process" {
		t.Skipf("%s=process", BuildEnv)
	}
	tc, err := FindToolchain()
	if err != nil {
		t.Skipf("no LLVM toolchain to build with: %v", err)
	}
	p := tc.workers(t.TempDir())
	if p == nil {
		t.Skipf("no LLVM build worker for %s here", tc.Opt)
	}
	return tc, p
}

// TestWorkerMatchesOptAndLLC: the build worker writes the very object
// file opt -O3 | llc -O3 writes, byte for byte, with and without LLVM's
// unrolling, for the host's CPU and for a named one, and without llc's
// loop strength reduction (-disable-lsr, llvm.NoLSRKey) and with it,
// each from a worker of its kind. The flag reaches the worker: gemm's
// object differs with it.
func TestWorkerMatchesOptAndLLC(t *testing.T) {
	tc, p := testPool(t)
	dir := t.TempDir()
	cases := []struct {
		name string
		c    workload.Case
		opts llvm.Options
		lsr  bool // llc's loop strength reduction on (no LLCFlags)
	}{
		{"gemm", workload.Matmul(32, 48, 16), llvm.Options{}, false},
		{"softmax unrolled", workload.Softmax(7, 33), llvm.Options{LLVMUnroll: true}, false},
		{"chain x86-64-v2", workload.Chain(3, 5, 17), llvm.Options{Target: llvm.Target{Triple: "x86_64-unknown-linux-gnu", CPU: "x86-64-v2"}}, false},
		{"gemm with loop strength reduction", workload.Matmul(32, 48, 16), llvm.Options{}, true},
		{"gemm again", workload.Matmul(32, 48, 16), llvm.Options{}, false},
	}
	for i, c := range cases {
		if c.opts.Target.Triple != "" && runtime.GOARCH != "amd64" {
			continue
		}
		m, err := llvm.Lower(c.c.Func, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		ir, args := m.String(), buildArgs(m)
		if !c.lsr {
			args.LLCFlags = []string{"-disable-lsr"} // as llvm.NoLSRKey asks
		}
		viaProcess := filepath.Join(dir, "p"+string(rune('0'+i))+".o")
		viaWorker := filepath.Join(dir, "w"+string(rune('0'+i))+".o")
		if err := tc.compile(context.Background(), ir, args, viaProcess); err != nil {
			t.Fatal(err)
		}
		if err := p.compile(context.Background(), tc.forLLVM(ir), args, viaWorker); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a, _ := os.ReadFile(viaProcess)
		b, _ := os.ReadFile(viaWorker)
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: the worker's object (%d bytes) differs from opt and llc's (%d bytes)", c.name, len(b), len(a))
		}
	}
	without, _ := os.ReadFile(filepath.Join(dir, "w0.o"))
	with, _ := os.ReadFile(filepath.Join(dir, "w3.o"))
	if bytes.Equal(without, with) {
		t.Errorf("gemm's object is the same with llc's loop strength reduction and without it")
	}
}

// TestWorkerErrors: bad IR is opt's error with the IR line, as from opt
// itself; a fatal error inside LLVM (a selection failure, which ends the
// process) is a BuildError with LLVM's message, and the next build starts
// a fresh worker and succeeds.
func TestWorkerErrors(t *testing.T) {
	tc, p := testPool(t)
	dir := t.TempDir()
	ir := "define void @f() {\nentry:\n  ret i32 0\n}\n"
	err := p.compile(context.Background(), tc.forLLVM(ir), targetArgs{}, filepath.Join(dir, "bad.o"))
	var be *BuildError
	if !errors.As(err, &be) || be.Tool != "opt" || be.Line != 3 || !strings.Contains(be.IRLine, "ret i32 0") {
		t.Fatalf("bad IR: got %#v", err)
	}
	if runtime.GOARCH == "amd64" {
		// An AVX-512 intrinsic on a CPU without AVX-512: a fatal error in code generation.
		fatal := `declare <16 x float> @llvm.x86.avx512.rsqrt14.ps.512(<16 x float>, <16 x float>, i16)
define <16 x float> @g(<16 x float> %x) {
  %r = call <16 x float> @llvm.x86.avx512.rsqrt14.ps.512(<16 x float> %x, <16 x float> %x, i16 -1)
  ret <16 x float> %r
}
`
		args := targetArgs{Triple: "x86_64-unknown-linux-gnu", CPU: "x86-64", OptFlags: []string{"-disable-loop-unrolling"}}
		err := p.compile(context.Background(), tc.forLLVM(fatal), args, filepath.Join(dir, "fatal.o"))
		if !errors.As(err, &be) || !strings.Contains(be.Stderr, "LLVM ERROR") {
			t.Errorf("a fatal LLVM error: got %v", err)
		}
	}
	m, err := llvm.Lower(workload.Chain(2, 2, 8).Func, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.compile(context.Background(), tc.forLLVM(m.String()), buildArgs(m), filepath.Join(dir, "good.o")); err != nil {
		t.Errorf("the build after the failures: %v", err)
	}
}

// TestWorkerStartFailure: a libLLVM the worker cannot load sends the
// builds to opt and llc, not to an error.
func TestWorkerStartFailure(t *testing.T) {
	tc, p := testPool(t)
	bad := &workerPool{exe: p.exe, lib: "/nonexistent/libLLVM-0.so", arch: p.arch, idle: idleQueues(1)}
	m, err := llvm.Lower(workload.Chain(2, 2, 8).Func, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = bad.compile(context.Background(), tc.forLLVM(m.String()), buildArgs(m), filepath.Join(t.TempDir(), "x.o"))
	if err != errNoWorker || bad.failed() == nil || !strings.Contains(bad.failed().Error(), "libLLVM-0.so") {
		t.Errorf("got %v, broken: %v", err, bad.failed())
	}
}

// TestIdleWorkersStop: a worker left idle longer than its pool's idleFor is
// stopped; the next build starts another.
func TestIdleWorkersStop(t *testing.T) {
	tc, p := testPool(t)
	p.idleFor = 150 * time.Millisecond
	m, err := llvm.Lower(workload.Chain(2, 2, 8).Func, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	build := func() {
		if err := p.compile(context.Background(), tc.forLLVM(m.String()), buildArgs(m), filepath.Join(t.TempDir(), "x.o")); err != nil {
			t.Fatal(err)
		}
	}
	build()
	if len(p.idle[0]) != 1 {
		t.Fatalf("%d idle workers after a build, want 1", len(p.idle[0]))
	}
	w := <-p.idle[0]
	p.idle[0] <- w
	deadline := time.Now().Add(10 * time.Second)
	for w.cmd.Process.Signal(syscall.Signal(0)) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if w.cmd.Process.Signal(syscall.Signal(0)) == nil {
		t.Fatalf("the idle worker was not stopped (%d idle)", len(p.idle[0]))
	}
	build()
}

// TestDeadIdleWorker: an idle worker that died meanwhile (killed from
// outside) costs the next build a fresh worker, not an error.
func TestDeadIdleWorker(t *testing.T) {
	tc, p := testPool(t)
	m, err := llvm.Lower(workload.Chain(2, 2, 8).Func, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	build := func() error {
		return p.compile(context.Background(), tc.forLLVM(m.String()), buildArgs(m), filepath.Join(t.TempDir(), "x.o"))
	}
	if err := build(); err != nil {
		t.Fatal(err)
	}
	w := <-p.idle[0]
	w.cmd.Process.Kill()
	w.cmd.Process.Wait()
	p.idle[0] <- w
	if err := build(); err != nil {
		t.Errorf("the build after an idle worker died: %v", err)
	}
}
