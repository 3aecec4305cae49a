package cuda_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/cudaemu"
	"github.com/loom-go/loom/internal/workload"
)

// TestRun runs every representative kernel through the launcher (NVRTC
// and the driver API: compile, load, allocate, copy in, launch, copy out,
// time, unload) and checks what it computes against the interpreter. On
// a machine with a GPU it runs there; elsewhere it runs again in a child
// process that loads the stand-in driver of package cudaemu in place of
// CUDA, so that the launcher's own calls are exercised everywhere, with
// the kernels run on the CPU: three of the kernels, every one with -long
// (onStandIn).
func TestRun(t *testing.T) {
	dev, err := cuda.Open()
	if err != nil {
		if !errors.Is(err, cuda.ErrNoCUDA) {
			t.Fatalf("Open without CUDA: %v, want an error wrapping ErrNoCUDA", err)
		}
		if os.Getenv(cuda.DriverEnv) != "" {
			t.Fatalf("the driver in $%s does not open: %v", cuda.DriverEnv, err)
		}
		runOnStandIn(t, "^TestRun$")
		return
	}
	t.Logf("device: compute capability %s", dev.Arch())
	standIn := os.Getenv(cuda.DriverEnv) != ""
	for _, gc := range gpuCases() {
		if standIn && !*long && !onStandIn[gc.name] {
			continue // TestEmulate runs its kernel on the CPU; the launcher's calls are the same
		}
		t.Run(gc.name, func(t *testing.T) {
			m := lowered(t, gc)
			if m.Arch != dev.Arch() {
				m = relowered(t, m, dev.Arch())
			}
			p, err := dev.Compile(m)
			if err != nil {
				t.Fatalf("%v\n%s", err, m.Source)
			}
			defer p.Close()
			got, want := gc.c.Args(1), gc.c.Args(1)
			call, err := p.Bind(gc.c.Sizes, got)
			if err != nil {
				t.Fatal(err)
			}
			defer call.Release()
			if err := call.Launch(); err != nil {
				t.Fatal(err)
			}
			if err := call.Read(); err != nil {
				t.Fatal(err)
			}
			if err := ast.Interpret(gc.c.Func, gc.c.Sizes, want); err != nil {
				t.Fatal(err)
			}
			for _, b := range gc.c.Func.Params {
				if e := check.MaxRelErr(got[b.Name], want[b.Name]); e > 1e-4 {
					t.Errorf("%s differs from the interpreter's by %g", b.Name, e)
				}
			}
			if s, err := call.Time(2); err != nil || s <= 0 {
				t.Errorf("Time: %g s, %v", s, err)
			}
		})
	}
	// 16-bit floats cross the launcher as their encodings ([]uint16):
	// a Tensor Core gemm of float16 factors (the launcher once copied
	// them from a nil pointer).
	t.Run("float16", func(t *testing.T) {
		s := tensorCoreGemm(t, "float16", 32, 16, 32)
		m, err := cuda.Lower(s.Func(), cuda.Options{Arch: dev.Arch()})
		if err != nil {
			t.Fatal(err)
		}
		p, err := dev.Compile(m)
		if err != nil {
			t.Fatalf("%v\n%s", err, m.Source)
		}
		defer p.Close()
		c := workload.Case{Func: s.Func()}
		got, want := c.ArgsPoisoning(1, map[string]bool{"C": true}), c.Args(1)
		if err := p.Run(nil, got); err != nil {
			t.Fatal(err)
		}
		if err := ast.Interpret(s.Func(), nil, want); err != nil {
			t.Fatal(err)
		}
		if e := check.MaxRelErr(got["C"], want["C"]); e > 1e-4 {
			t.Errorf("C differs from the interpreter's by %g", e)
		}
	})
	t.Run("errors", func(t *testing.T) {
		gc := gpuCases()[0]
		m := lowered(t, gc)
		if m.Arch != dev.Arch() {
			m = relowered(t, m, dev.Arch())
		}
		bad := *m
		bad.Source += "\nthis is not CUDA C;\n"
		if _, err := dev.Compile(&bad); err == nil || !strings.Contains(err.Error(), "NVRTC rejects the source of "+m.Func.Name) {
			t.Errorf("compiling broken source: %v, want NVRTC's rejection with its log", err)
		}
		p, err := dev.Compile(m)
		if err != nil {
			t.Fatal(err)
		}
		args := gc.c.Args(1)
		delete(args, m.Func.Params[0].Name)
		if _, err := p.Bind(gc.c.Sizes, args); err == nil || !strings.Contains(err.Error(), "no data for parameter "+m.Func.Params[0].Name) {
			t.Errorf("binding without a parameter: %v", err)
		}
		call, err := p.Bind(gc.c.Sizes, gc.c.Args(1))
		if err != nil {
			t.Fatal(err)
		}
		defer call.Release()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := call.Launch(); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("launching a closed program: %v", err)
		}
	})
}

// relowered lowers m's function again for arch.
func relowered(t *testing.T, m *cuda.Module, arch string) *cuda.Module {
	t.Helper()
	m, err := cuda.Lower(m.Func, cuda.Options{Arch: arch})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runOnStandIn builds the stand-in driver and runs the tests that match
// pattern in a child process (this test binary) that loads it.
func runOnStandIn(t *testing.T, pattern string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lib, err := cudaemu.BuildDriver(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.run=" + pattern, "-test.v"}
	if *long {
		args = append(args, "-long")
	}
	child := exec.CommandContext(ctx, os.Args[0], args...)
	child.Env = append(os.Environ(), cuda.DriverEnv+"="+lib, cuda.NVRTCEnv+"="+lib)
	out, err := child.CombinedOutput()
	if err != nil {
		t.Fatalf("on the stand-in driver: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "device: compute capability sm_80") || strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("the child process did not run on the stand-in driver:\n%s", out)
	}
	t.Logf("on the stand-in driver:\n%s", out)
}

// onStandIn are the kernels of gpuCases TestRun runs on the stand-in
// driver without -long: one thread per element, cp.async's pipeline,
// warp shuffles.
var onStandIn = map[string]bool{"scale": true, "gemm_pipelined3": true, "chain": true}

var long = flag.Bool("long", false, "run every representative kernel on the stand-in driver too")
