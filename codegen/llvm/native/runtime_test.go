package native

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// buildStress compiles testdata/runtime_stress.c with the runtime and
// extra flags; ok is false when the compiler refuses the flags.
func buildStress(t *testing.T, cc string, extra ...string) (bin string, out []byte, ok bool) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "loomrt.c"), RuntimeSource(), 0o644); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "stress")
	args := append([]string{"-std=c11", "-Wall", "-Werror", "-pthread"}, extra...)
	args = append(args, "-o", bin, "testdata/runtime_stress.c", filepath.Join(dir, "loomrt.c"), "-lm")
	out, err := exec.Command(cc, args...).CombinedOutput()
	return bin, out, err == nil
}

// TestRuntimeStress runs the runtime's C stress test (every iteration
// once, for n = 0..300 and 5,000 on 1..8 threads; nested loops serial;
// four concurrent callers; a small loop inline; a worker stopped inside a
// chunk holding back only that chunk), and again under ThreadSanitizer.
func TestRuntimeStress(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("no C compiler (cc) on PATH: the runtime needs one too; apt-get install gcc")
	}
	for _, v := range []struct {
		name  string
		flags []string
	}{{"plain", []string{"-O2"}}, {"tsan", []string{"-O1", "-g", "-fsanitize=thread"}}} {
		t.Run(v.name, func(t *testing.T) {
			bin, out, ok := buildStress(t, cc, v.flags...)
			if !ok {
				if v.name == "tsan" {
					t.Skipf("%s cannot build with -fsanitize=thread (libtsan missing?):\n%s", cc, out)
				}
				t.Fatalf("building the stress test: %s", out)
			}
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "TSAN_OPTIONS=halt_on_error=1 exitcode=66")
			out, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "ok" {
				t.Fatalf("the stress test: %v\n%s", err, out)
			}
		})
	}
}

// TestRuntimeGOMPBuilds: the libgomp variant of the runtime still
// compiles, warnings as errors.
func TestRuntimeGOMPBuilds(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("no C compiler (cc) on PATH")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "loomrt.c")
	if err := os.WriteFile(src, RuntimeSource(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cc, "-std=c11", "-Wall", "-Werror", "-O2", "-fPIC", "-DLOOM_RT_GOMP", "-c", "-o", filepath.Join(dir, "loomrt.o"), src).CombinedOutput()
	if err != nil {
		t.Fatalf("-DLOOM_RT_GOMP: %v\n%s", err, out)
	}
}

// TestParallelKernelConcurrent: eight goroutines run kernels with parallel
// loops at once (one region holds the pool, the others run serially), at
// sizes from 0 up, on 1 to 4 threads; every result is exact. Run it with
// -race too.
func TestParallelKernelConcurrent(t *testing.T) {
	// The row loop's work is known (decided at run time from N); the
	// column loop's is not (its extent depends on the row).
	f, err := ast.Parse(`func tri[N: int32](X: float32[N, 64], Y: float32[N, 64], Z: float32[64, 64]) {
  ScheduleBlock(root) {
    parallel for (i, 0, N) {
      serial for (j, 0, 64) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, N), vj = spatial(0, 64))
          reads(X[vi, vj])
          writes(Y[vi, vj])
          Y[vi, vj] = X[vi, vj] * 2.0f + 1.0f
        }
      }
    }
    parallel for (r, 0, 64) {
      serial for (c, 0, r + 1) {
        ScheduleBlock(Z) {
          vr, vc = axis.bind(r, c)
          axis.domain(vr = spatial(0, 64), vc = spatial(0, 64))
          writes(Z[vr, vc])
          Z[vr, vc] = float32(vr * 64 + vc)
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	k, err := Compile(f, llvm.Options{TrustLoopKinds: true}) // Z's triangle is not a proof the checker makes
	if err != nil {
		t.Fatal(err)
	}
	defer SetThreads(0)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for r := 0; r < 60; r++ {
				if g == 0 && r%10 == 0 {
					if err := SetThreads(1 + r/10%4); err != nil {
						errs <- err.Error()
						return
					}
				}
				n := (g*61 + r*17) % 300
				if r%7 == 0 {
					n = r % 3 // 0, 1 and 2
				}
				x, y, z := make([]float32, n*64), make([]float32, n*64), make([]float32, 64*64)
				for i := range x {
					x[i] = float32(i%1000) - 500
				}
				if err := k.Run(map[string]int64{"N": int64(n)}, map[string]any{"X": x, "Y": y, "Z": z}); err != nil {
					errs <- err.Error()
					return
				}
				for i := range y {
					if y[i] != x[i]*2+1 {
						errs <- "Y wrong"
						return
					}
				}
				for rr := 0; rr < 64; rr++ {
					for c := 0; c < 64; c++ {
						want := float32(0)
						if c <= rr {
							want = float32(rr*64 + c)
						}
						if z[rr*64+c] != want {
							errs <- "Z wrong"
							return
						}
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
