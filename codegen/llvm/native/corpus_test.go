package native

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/golden"
	"github.com/loom-go/loom/internal/hand"
	"github.com/loom-go/loom/internal/schedgen"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
	"golang.org/x/tools/txtar"
)

// agree compiles f with opts, runs it and the interpreter on the same
// random data, and fails t unless every buffer agrees within the
// tolerance of its type.
func agree(t *testing.T, f *ast.Func, sizes map[string]int64, opts llvm.Options, seed uint64) {
	t.Helper()
	c := workload.Case{Name: f.Name, Func: f, Sizes: sizes}
	got := c.Args(seed)
	want := check.Clone(got)
	if err := ast.Interpret(f, sizes, want); err != nil {
		t.Fatalf("interpret %s: %s", f.Name, ast.Explain(f, err))
	}
	k, err := Compile(f, opts)
	if err != nil {
		t.Fatalf("compile %s: %v", f.Name, err)
	}
	if err := k.Run(sizes, got); err != nil {
		t.Fatalf("run %s: %v", f.Name, err)
	}
	for _, p := range f.Params {
		tol := check.Tolerance(p.DType)
		if opts.FastMath {
			tol *= 100
		}
		if e := check.MaxRelErr(got[p.Name], want[p.Name]); e > tol {
			t.Fatalf("%s: buffer %s differs from the interpreter's by %g (tolerance %g)\n%s\nIR:\n%s", f.Name, p.Name, e, tol, ast.Print(f), k.Module)
		}
	}
}

// TestWorkloads: every workload, unscheduled, under each option (under
// rerunSubset under one, each option in turn).
func TestWorkloads(t *testing.T) {
	for i, c := range schedgen.Corpus() {
		for _, opts := range pick(i, []llvm.Options{{}, {NoFMA: true}, {FastMath: true}}) {
			agree(t, c.Func, c.Sizes, opts, 1)
		}
	}
}

// TestASTGoldens: every function of the ast package's printer goldens
// (all the expression and statement forms, every type).
func TestASTGoldens(t *testing.T) {
	files, err := filepath.Glob("../../../testdata/ast/print/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no ast goldens: %v", err)
	}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, fl := range ar.Files {
			if !strings.HasSuffix(fl.Name, ".loom") {
				continue
			}
			f, err := ast.Parse(string(fl.Data))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			sizes := map[string]int64{}
			for _, s := range f.Sizes {
				sizes[s.Name] = 6
			}
			t.Run(filepath.Base(file), func(t *testing.T) {
				t.Parallel()
				for _, p := range f.Params {
					if n, err := elements(p, sizes); err != nil || n > 1<<16 {
						t.Skipf("buffer %s is too large for the interpreter in a test", p.Name)
					}
				}
				if err := ast.Interpret(f, sizes, workload.Case{Func: f, Sizes: sizes}.Args(1)); err != nil {
					t.Skipf("the interpreter refuses this input: %v", err)
				}
				agree(t, f, sizes, llvm.Options{}, 2)
			})
		}
	}
}

// TestScheduleGoldens: the result of every golden test of the schedule
// primitives, symbolic sizes set to a few values.
func TestScheduleGoldens(t *testing.T) {
	files, err := filepath.Glob("../../../testdata/schedule/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schedule goldens: %v", err)
	}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, fl := range ar.Files {
			if fl.Name != "want.loom" && fl.Name != "input.loom" {
				continue
			}
			f, err := ast.Parse(string(fl.Data))
			if err != nil {
				t.Fatalf("%s: %s: %v", file, fl.Name, err)
			}
			for _, v := range []int64{1, 5, 13} {
				sizes := map[string]int64{}
				for _, s := range f.Sizes {
					sizes[s.Name] = v
				}
				t.Run(fmt.Sprintf("%s/%s/%d", filepath.Base(file), fl.Name, v), func(t *testing.T) {
					t.Parallel()
					if err := ast.Interpret(f, sizes, workload.Case{Func: f, Sizes: sizes}.Args(1)); err != nil {
						t.Skipf("the interpreter refuses this input (it is only scheduled, never run): %v", err)
					}
					agree(t, f, sizes, llvm.Options{}, uint64(v))
				})
				if len(f.Sizes) == 0 {
					break
				}
			}
		}
	}
}

// TestRandomSchedules: every function of the schedule corpus under random
// schedules (the primitives' property test's generator), compiled.
func TestRandomSchedules(t *testing.T) {
	seeds, steps := 3, 20
	if testing.Short() {
		seeds = 1
	}
	for _, c := range schedgen.Corpus() {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			r := rand.New(rand.NewPCG(seed, 7))
			s, err := schedule.New(c.Func, schedule.WithSeed(seed))
			if err != nil {
				t.Fatal(err)
			}
			var log []string
			for i := 0; i < steps; i++ {
				desc, err := schedgen.Step(r, s, func() {})
				if err == nil {
					log = append(log, desc)
				}
			}
			t.Run(fmt.Sprintf("%s/%d", c.Name, seed), func(t *testing.T) {
				t.Parallel()
				t.Logf("schedule: %v", log)
				agree(t, s.Func(), c.Sizes, llvm.Options{}, seed)
			})
		}
	}
}

// TestVectorWidths: the same vectorized schedule at every SIMD width,
// on rows of an even and an odd number of whole vectors plus a tail (under
// rerunSubset the odd one only).
func TestVectorWidths(t *testing.T) {
	for _, cols := range pick(1, []int{40, 55}) {
		c := workload.Softmax(5, cols)
		s, err := schedule.New(c.Func)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var vectorized []schedule.Loop
		for _, b := range s.Func().Blocks() {
			names = append(names, b.Name)
		}
		sort.Strings(names)
		for _, name := range names {
			b, err := s.GetBlock(name)
			if err != nil {
				continue
			}
			loops, err := s.GetLoops(b)
			if err != nil || len(loops) < 2 {
				continue
			}
			inner := loops[len(loops)-1]
			if err := s.Vectorize(inner); err != nil {
				t.Logf("%s: %v", name, err)
				continue
			}
			vectorized = append(vectorized, inner)
		}
		for _, bits := range []int{128, 256, 512} {
			agree(t, s.Func(), c.Sizes, llvm.Options{VectorBits: bits}, 3)
		}
		// 512-bit vectors narrowed to 256 bits loop by loop.
		for _, l := range vectorized {
			if err := s.AnnotateLoop(l, llvm.VectorBitsKey, 256); err != nil {
				t.Fatal(err)
			}
		}
		agree(t, s.Func(), c.Sizes, llvm.Options{VectorBits: 512}, 3)
	}
}

// TestHandSchedules: the benchmarks' hand schedules, on small versions of
// their workloads, at every vector width (under rerunSubset each at one,
// in turn, and the matrix product and softmax only in their versions with
// tails).
func TestHandSchedules(t *testing.T) {
	cases := []struct {
		c     workload.Case
		sched func(*schedule.Schedule, hand.Config) error
	}{
		{workload.Matmul(64, 64, 64), hand.Gemm},
		{workload.Matmul(40, 72, 24), hand.Gemm}, // tails everywhere
		{workload.MatmulBiasReLU(64, 64, 64), hand.GemmBiasReLU},
		{workload.RMSNorm(8, 96), hand.RMSNorm},
		{workload.Softmax(8, 96), hand.Softmax},
		{workload.Softmax(3, 50), hand.Softmax},
		{workload.Chain(2, 3, 96), hand.Chain},
		{workload.Conv2D(1, 4, 10, 10, 8), hand.Conv2D},
	}
	for i, tc := range cases {
		if rerunSubset() && (i == 0 || i == 4) {
			continue // the same schedules, with tails, in cases 1 and 5
		}
		for _, bits := range pick(i, []int{256, 512}) {
			t.Run(fmt.Sprintf("%s/%d", tc.c.Name, bits), func(t *testing.T) {
				t.Parallel()
				s, err := schedule.New(tc.c.Func)
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.sched(s, hand.Config{Threads: 2, VectorBits: bits}); err != nil {
					t.Fatal(schedule.Explain(err))
				}
				agree(t, s.Func(), tc.c.Sizes, llvm.Options{VectorBits: bits}, 5)
			})
		}
	}
}

// TestNestedParallel: a parallel loop inside a parallel loop runs
// serially inside each outer iteration (the threads do not multiply), and
// says so in the module's remarks.
func TestNestedParallel(t *testing.T) {
	f, err := ast.Parse(`func nest(X: float32[8, 4096], Y: float32[8, 4096]) {
  ScheduleBlock(root) {
    parallel for (i, 0, 8) {
      parallel for (j, 0, 4096) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 8), vj = spatial(0, 4096))
          reads(X[vi, vj])
          writes(Y[vi, vj])
          Y[vi, vj] = X[vi, vj] + 1.0f
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	m, err := llvm.Lower(f, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Remarks) != 1 || !strings.Contains(m.Remarks[0], "parallel loop j runs serially") {
		t.Errorf("remarks: %q", m.Remarks)
	}
	if n := strings.Count(m.String(), "call void @loom_parallel_for"); n != 1 {
		t.Errorf("%d calls of the runtime, want 1", n)
	}
	agree(t, f, nil, llvm.Options{}, 1)
}

// TestFusionGoldens: every kernel the fusion goldens produce, compiled.
func TestFusionGoldens(t *testing.T) {
	files, err := filepath.Glob("../../../testdata/fusion/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fusion goldens: %v", err)
	}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		src, ok := golden.Section(ar, "graph.json")
		if _, bad := golden.Section(ar, "error"); bad || !ok {
			continue
		}
		g, err := fusion.ParseJSON([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		p, err := fusion.Compile(g, fusion.Options{})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, k := range p.Kernels {
			t.Run(filepath.Base(file)+"/"+k.Name, func(t *testing.T) {
				t.Parallel()
				sizes := map[string]int64{}
				for i, s := range k.Func.Sizes {
					sizes[s.Name] = int64(3 + 2*i)
				}
				agree(t, k.Func, sizes, llvm.Options{}, 1)
			})
		}
	}
}

// TestCastOfIndexProductWraps: an int32 product of iteration variables
// cast to int64 wraps before the cast, in native code as in the
// interpreter; a cast of a bare variable is index arithmetic and widens.
func TestCastOfIndexProductWraps(t *testing.T) {
	f, err := ast.Parse(`func wrap(Y: int64[4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 4))
        writes(Y[vi])
        Y[vi] = int64((vi + 1) * 1000000000) + int64(vi)
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	agree(t, f, nil, llvm.Options{}, 1)
}

// TestLongLoopNames: two loops whose names are longer than LLVM's limit
// on local names (1024 bytes) and share their first 1024 bytes, as a loop
// fused and split a dozen times gets. LLVM cut both to one name and
// refused the module ("multiple definition of local value").
func TestLongLoopNames(t *testing.T) {
	long := strings.Repeat("j_fused_", 200)
	f, err := ast.Parse(`func long(X: float32[6], Y: float32[6]) {
  ScheduleBlock(root) {
    serial for (` + long + `0, 0, 2) {
      serial for (` + long + `1, 0, 3) {
        ScheduleBlock(Y) {
          vi = axis.bind(` + long + `0 * 3 + ` + long + `1)
          axis.domain(vi = spatial(0, 6))
          reads(X[vi])
          writes(Y[vi])
          Y[vi] = X[vi] * 2.0f
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	agree(t, f, nil, llvm.Options{}, 1)
}
