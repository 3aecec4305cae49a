package partition_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/internal/compact"
	"github.com/loom-go/loom/codegen/partition"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/golden"
	"github.com/loom-go/loom/internal/instances"
	"github.com/loom-go/loom/internal/schedgen"
	"github.com/loom-go/loom/internal/workload"
)

// same checks that g computes what f computes at sizes (random inputs,
// every buffer compared).
func same(t *testing.T, name string, f, g *ast.Func, sizes map[string]int64) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(len(sizes)), 9))
	a, b := map[string]any{}, map[string]any{}
	for _, p := range f.Params {
		d, err := ast.NewData(p, sizes)
		if err != nil {
			t.Fatalf("%s at %v: %v", name, sizes, err)
		}
		check.FillRandom(d, r)
		if v, ok := d.([]int32); ok {
			for i := range v {
				v[i] = int32(r.IntN(5))
			}
		}
		a[p.Name], b[p.Name] = d, clone(d)
	}
	errA := ast.Interpret(f, sizes, a)
	errB := ast.Interpret(g, sizes, b)
	if (errA == nil) != (errB == nil) {
		t.Fatalf("%s at %v: before %v, after %v", name, sizes, errA, errB)
	}
	for _, p := range f.Params {
		if e := check.MaxRelErr(b[p.Name], a[p.Name]); e != 0 {
			t.Errorf("%s at %v: %s differs by %g after partitioning\n%s", name, sizes, p.Name, e, ast.Print(g))
		}
	}
}

// clone copies a Go slice of buffer data.
func clone(d any) any {
	switch d := d.(type) {
	case []float32:
		return append([]float32(nil), d...)
	case []float64:
		return append([]float64(nil), d...)
	case []int32:
		return append([]int32(nil), d...)
	case []int64:
		return append([]int64(nil), d...)
	case []bool:
		return append([]bool(nil), d...)
	case []uint16:
		return append([]uint16(nil), d...)
	}
	panic("unknown data")
}

// partitionedDefault returns f's default schedule for an AVX2 machine
// of the given threads, before and after partitioning (checked well
// formed).
func partitionedDefault(t *testing.T, f *ast.Func, threads int) (before, after *ast.Func) {
	t.Helper()
	s, err := autotune.Default(f, autotune.Target{VectorLanes: 8, Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	before = s.Func()
	after = partition.Func(before)
	if err := ast.Verify(after); err != nil {
		t.Fatalf("%v\n%s", err, ast.Print(after))
	}
	return before, after
}

// predicates counts the blocks with a predicate.
func predicates(f *ast.Func) int {
	n := 0
	ast.Inspect(f, func(x ast.Node) bool {
		if b, ok := x.(*ast.ScheduleBlock); ok && b.Predicate != nil {
			n++
		}
		return true
	})
	return n
}

// matmulOfSymbolicRows is C[S, n] = A[S, k] B[k, n], its rows S a
// symbolic size, unscheduled.
func matmulOfSymbolicRows(t *testing.T, k, n int) *ast.Func {
	return matmulOfRows(t, "S", k, n)
}

// matmulOfRows is C[m, n] = A[m, k] B[k, n], unscheduled; rows m is a
// number or the name of a symbolic size.
func matmulOfRows(t *testing.T, m string, k, n int) *ast.Func {
	t.Helper()
	sizes := ""
	if _, err := strconv.Atoi(m); err != nil {
		sizes = "[" + m + ": int32]"
	}
	f, err := ast.Parse(fmt.Sprintf(`func mm%[4]s(A: float32[%[3]s, %[1]d], B: float32[%[1]d, %[2]d], C: float32[%[3]s, %[2]d]) {
  ScheduleBlock(root) {
    serial for (i, 0, %[3]s) {
      serial for (j, 0, %[2]d) {
        serial for (k, 0, %[1]d) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, %[3]s), vj = spatial(0, %[2]d), vk = reduce(0, %[1]d))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0f
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
}`, k, n, m, sizes))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMatmulOfSymbolicRows: the default schedule of a matmul of S rows
// tiles S by a constant with a predicated tail; partitioned, the main
// part has no predicate left (only the tail's copy keeps it), and the
// results are the same at every S, multiples of the tile or not.
func TestMatmulOfSymbolicRows(t *testing.T) {
	f := matmulOfSymbolicRows(t, 64, 48)
	before, after := partitionedDefault(t, f, 1)
	if predicates(before) == 0 {
		t.Fatalf("the default schedule has no predicate to partition:\n%s", ast.Print(before))
	}
	if !strings.Contains(ast.Print(after), "_tail") || predicates(after) != predicates(before) {
		t.Errorf("want one main part without predicates and a tail with them (%d predicated blocks before, %d after):\n%s", predicates(before), predicates(after), ast.Print(after))
	}
	for _, n := range []int64{0, 1, 5, 8, 9, 16, 23} {
		same(t, "mm", before, after, map[string]int64{"S": n})
	}
}

// TestParallelLoopOfConstantExtentStaysWhole: a matrix product of 49
// rows on two threads, whose default schedule runs its rows in two
// parallel tiles of 25, the second guarded: the parallel loop is not
// split (its parts, one iteration each, would each run serially); its
// body is versioned instead, the first tile without predicates and the
// second, narrowed, without them either, and the result is the same.
func TestParallelLoopOfConstantExtentStaysWhole(t *testing.T) {
	f := matmulOfRows(t, "49", 160, 96)
	before, after := partitionedDefault(t, f, 2)
	parallel := func(f *ast.Func) (n int) {
		ast.Inspect(f.Body, func(x ast.Node) bool {
			if l, ok := x.(*ast.For); ok && l.Kind == ast.Parallel {
				if e, ok := ast.ConstIntValue(ast.Simplify(l.Extent)); ok && e >= 2 {
					n++
				}
			}
			return true
		})
		return n
	}
	if predicates(before) == 0 || parallel(before) != 1 {
		t.Fatalf("want a parallel loop over a guarded tile in the default schedule:\n%s", ast.Print(before))
	}
	if parallel(after) != 1 {
		t.Errorf("the parallel loop was split:\n%s", ast.Print(after))
	}
	if !strings.Contains(ast.Print(after), "_tail") {
		t.Errorf("no loop inside the parallel one was partitioned:\n%s", ast.Print(after))
	}
	versioned := false
	ast.Inspect(after.Body, func(x ast.Node) bool {
		if l, ok := x.(*ast.For); ok && l.Kind == ast.Parallel {
			_, versioned = l.Body.(*ast.IfThenElse)
		}
		return true
	})
	if !versioned || predicates(after) != 0 {
		t.Errorf("want the parallel loop's body versioned, no predicate left (%d):\n%s", predicates(after), ast.Print(after))
	}
	same(t, "mm49", before, after, nil)
}

// TestTailNarrowed: 49 pixels in tiles of 32 (a 1x1 convolution over a
// 7x7 image): the main part runs one whole tile, the tail is not split
// again, and its loop of 32 lanes becomes one of the 17 its predicate
// keeps, with no predicate left anywhere. Where two blocks under the
// loop keep different numbers of lanes, the loop keeps the larger (8 of
// 16, the 5 of the other block's then partitioned off in turn); a block
// without a predicate under it leaves it whole.
func TestTailNarrowed(t *testing.T) {
	f, err := ast.Parse(`func conv(X: float32[8, 49], W: float32[4, 8], Y: float32[4, 49]) {
  ScheduleBlock(root) {
    serial for (j, 0, 4) {
      serial for (p0, 0, 2) {
        serial for (rc, 0, 8) {
          vectorized for (p1, 0, 32) {
            ScheduleBlock(Y) {
              vj, vp, vrc = axis.bind(j, p0 * 32 + p1, rc)
              axis.domain(vj = spatial(0, 4), vp = spatial(0, 49), vrc = reduce(0, 8))
              predicate(p0 * 32 + p1 < 49)
              reads(Y[vj, vp], X[vrc, vp], W[vj, vrc])
              writes(Y[vj, vp])
              init {
                Y[vj, vp] = 0.0f
              }
              Y[vj, vp] = Y[vj, vp] + X[vrc, vp] * W[vj, vrc]
            }
          }
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	g := partition.Func(f)
	if err := ast.Verify(g); err != nil {
		t.Fatalf("%v\n%s", err, ast.Print(g))
	}
	text := ast.Print(g)
	if strings.Contains(text, "_tail_tail") || !strings.Contains(text, "vectorized for (p1, 0, 17)") || predicates(g) != 0 {
		t.Errorf("want one main tile and one tail of 17 lanes, no predicate:\n%s", text)
	}
	same(t, "conv", f, g, nil)

	for _, tc := range []struct {
		name, src, want string
	}{
		{"two bounds", `func f(A: float32[40], B: float32[40]) { ScheduleBlock(root) {
  serial for (i0, 0, 3) { serial for (i1, 0, 16) {
    ScheduleBlock(S) { vi = axis.bind(i0 * 16 + i1) axis.domain(vi = spatial(0, 40))
      predicate(i0 * 16 + i1 < 40) reads(A[vi]) writes(A[vi]) A[vi] = A[vi] + 1.0f }
    ScheduleBlock(T) { vi = axis.bind(i0 * 16 + i1) axis.domain(vi = spatial(0, 40))
      predicate(i0 * 16 + i1 < 37) reads(B[vi]) writes(B[vi]) B[vi] = B[vi] * 2.0f } } } } }`, "serial for (i1_tail, 5, 3)"},
		{"unguarded block", `func f(A: float32[40], B: float32[48]) { ScheduleBlock(root) {
  serial for (i0, 0, 3) { serial for (i1, 0, 16) {
    ScheduleBlock(S) { vi = axis.bind(i0 * 16 + i1) axis.domain(vi = spatial(0, 40))
      predicate(i0 * 16 + i1 < 40) reads(A[vi]) writes(A[vi]) A[vi] = A[vi] + 1.0f }
    ScheduleBlock(T) { vi = axis.bind(i0 * 16 + i1) axis.domain(vi = spatial(0, 48))
      reads(B[vi]) writes(B[vi]) B[vi] = B[vi] * 2.0f } } } } }`, "serial for (i1, 0, 16)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ast.Parse(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			g := partition.Func(f)
			if err := ast.Verify(g); err != nil {
				t.Fatalf("%v\n%s", err, ast.Print(g))
			}
			if text := ast.Print(g); !strings.Contains(text, tc.want) {
				t.Errorf("want %q in the tail:\n%s", tc.want, text)
			}
			same(t, tc.name, f, g, nil)
		})
	}
}

// TestEdgeCases: predicates partitioning must leave alone (a lower bound,
// a division) and ones it may use (an inner loop's own, a loop that
// starts elsewhere, two symbols; under an inner loop of symbolic range,
// only that loop's own conjunct).
func TestEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name      string
		src       string
		partition bool
		sizes     []map[string]int64
	}{
		{"lower bound", `func f[N: int32](A: float32[16]) { ScheduleBlock(root) {
  serial for (i0, 0, 4) { serial for (i1, 0, 4) {
    ScheduleBlock(S) { vi = axis.bind(i0 * 4 + i1) axis.domain(vi = spatial(0, 16))
      predicate(i0 * 4 + i1 >= N) reads(A[vi]) writes(A[vi]) A[vi] = A[vi] + 1.0f } } } } }`, false,
			[]map[string]int64{{"N": 0}, {"N": 5}, {"N": 17}}},
		{"division", `func f[N: int32](A: float32[16]) { ScheduleBlock(root) {
  serial for (i0, 0, 4) { serial for (i1, 0, 4) {
    ScheduleBlock(S) { vi = axis.bind(i0 * 4 + i1) axis.domain(vi = spatial(0, 16))
      predicate(floordiv(i0 * 4 + i1, 3) < N) reads(A[vi]) writes(A[vi]) A[vi] = A[vi] + 1.0f } } } } }`, false,
			[]map[string]int64{{"N": 0}, {"N": 2}, {"N": 9}}},
		{"inner loop only", `func f[N: int32](A: float32[16]) { ScheduleBlock(root) {
  serial for (i0, 0, 4) { serial for (i1, 0, 4) {
    ScheduleBlock(S) { vi = axis.bind(i0 * 4 + i1) axis.domain(vi = spatial(0, 16))
      predicate(i1 < 3) reads(A[vi]) writes(A[vi]) A[vi] = A[vi] + 1.0f } } } } }`, true,
			[]map[string]int64{{"N": 0}}},
		{"symbolic inner loop", `func f[N: int32, M: int32](A: float32[64]) { ScheduleBlock(root) {
  serial for (i0, 0, 8) { serial for (i1, 0, M) {
    ScheduleBlock(S) { vi = axis.bind(min(i0 * 8 + i1, 63)) axis.domain(vi = spatial(0, 64))
      predicate(i0 * 8 + i1 < N && i1 < 8) reads(A[vi]) writes(A[vi]) A[vi] = A[vi] + 1.0f } } } } }`, true,
			[]map[string]int64{{"N": 0, "M": 8}, {"N": 13, "M": 3}, {"N": 20, "M": 11}}},
		{"offset loop", `func f[N: int32](A: float32[40]) { ScheduleBlock(root) {
  serial for (i0, 2, floordiv(N + 3, 4)) { serial for (i1, 0, 4) {
    ScheduleBlock(S) { vi = axis.bind(min(i0 * 4 + i1, 39)) axis.domain(vi = spatial(0, 40))
      predicate(i0 * 4 + i1 < N + 8) reads(A[vi]) writes(A[vi]) A[vi] = A[vi] * 2.0f + 1.0f } } } } }`, true,
			[]map[string]int64{{"N": 0}, {"N": 1}, {"N": 9}, {"N": 20}, {"N": 23}}},
		{"two symbols", `func f[N: int32, M: int32](A: float32[N, M]) { ScheduleBlock(root) {
  serial for (i0, 0, floordiv(N + 3, 4)) { serial for (j0, 0, floordiv(M + 7, 8)) {
    serial for (i1, 0, 4) { serial for (j1, 0, 8) {
      ScheduleBlock(S) { vi, vj = axis.bind(i0 * 4 + i1, j0 * 8 + j1) axis.domain(vi = spatial(0, N), vj = spatial(0, M))
        predicate(i0 * 4 + i1 < N && j0 * 8 + j1 < M) reads(A[vi, vj]) writes(A[vi, vj]) A[vi, vj] = A[vi, vj] * 3.0f } } } } } } }`, true,
			[]map[string]int64{{"N": 0, "M": 0}, {"N": 1, "M": 1}, {"N": 5, "M": 9}, {"N": 8, "M": 16}, {"N": 13, "M": 7}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ast.Parse(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			g := partition.Func(f)
			if err := ast.Verify(g); err != nil {
				t.Fatalf("%v\n%s", err, ast.Print(g))
			}
			if got := g != f; got != tc.partition {
				t.Errorf("partitioned: %v, want %v\n%s", got, tc.partition, ast.Print(g))
			}
			for _, sizes := range tc.sizes {
				same(t, tc.name, f, g, sizes)
			}
		})
	}
}

// TestDefaultsOfFusionKernels: every kernel of every fusion golden with
// sizes, under its default schedule (two threads), computes the same
// after partitioning and versioning its borders, at the golden's sizes and with every symbol 1 and
// 13 (those of up to 250,000 block instances: the interpreter runs both).
func TestDefaultsOfFusionKernels(t *testing.T) {
	files, err := filepath.Glob("../../testdata/fusion/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fusion goldens: %v", err)
	}
	more, _ := filepath.Glob("../../testdata/graphs/*.txtar")
	files = append(files, more...)
	parted := 0
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := golden.Section(ar, "graph.json")
		lines, ok := golden.Section(ar, "sizes")
		if !ok {
			continue
		}
		g, err := fusion.ParseJSON([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		bindings, err := golden.Sizes(lines)
		if err != nil {
			t.Fatal(err)
		}
		if syms := g.Symbols(); len(syms) > 0 {
			for _, v := range []int64{1, 13} {
				m := map[string]int64{}
				for _, s := range syms {
					m[s] = v
				}
				bindings = append(bindings, m)
			}
		}
		p, err := fusion.Compile(g, fusion.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range p.Kernels {
			s, err := autotune.Default(k.Func, autotune.Target{VectorLanes: 8, Threads: 2})
			if err != nil {
				t.Fatalf("%s: %v", k.Name, err)
			}
			before := s.Func()
			after := partition.Borders(partition.Func(before))
			if after == before {
				continue
			}
			parted++
			if err := ast.Verify(after); err != nil {
				t.Fatalf("%s: %v\n%s", k.Name, err, ast.Print(after))
			}
			for _, sizes := range bindings {
				if len(sizes) == 0 && len(k.Func.Sizes) > 0 {
					continue
				}
				limit := int64(250_000) // the interpreter runs both; -short: 100,000
				if testing.Short() {
					limit = 100_000
				}
				if instances.Count(before, sizes) > limit {
					continue
				}
				same(t, filepath.Base(file)+" "+k.Name, before, after, sizes)
			}
		}
	}
	if parted == 0 {
		t.Error("no kernel was partitioned: the test checks nothing")
	}
	t.Logf("%d kernels partitioned", parted)
}

// adversarialSeeds is how many sequences per function TestAdversarialSchedules
// runs; by default one, its seed 1 or 2 in turn along the corpus (so both
// seeds of the old default still run, each on half the functions).
// long runs the tests at full size: TestBordersOfWindows at one and two
// threads for every window, TestAdversarialSchedules' sequences of the
// costliest functions at full length.
var long = flag.Bool("long", false, "run TestBordersOfWindows at one and two threads for every window and TestAdversarialSchedules' costliest sequences at full length")

var adversarialSeeds = flag.Uint64("seeds", 0, "sequences per corpus function in TestAdversarialSchedules (default: one, seeds 1 and 2 in turn along the corpus)")

// TestAdversarialSchedules: the schedule generator's sequences over the
// corpus (skewed, triangular, in-place, symbolic functions), every
// accepted schedule partitioned (its borders versioned too) and run by
// the interpreter in place of a compiled kernel: the runner compares it
// with the unpartitioned schedule's results (conv_grouped_strided_0's
// sequences at half length without -long).
func TestAdversarialSchedules(t *testing.T) {
	corpus, err := schedgen.Load("../../testdata/schedgen")
	if err != nil {
		t.Fatal(err)
	}
	parted := 0
	cfg := schedgen.Config{NoValidation: true, NativeEvery: 1, Native: func(f *ast.Func, sizes map[string]int64, args map[string]any) error {
		g := partition.Borders(partition.Func(f))
		if g != f {
			parted++
			if err := ast.Verify(g); err != nil {
				return err
			}
		}
		return ast.Interpret(g, sizes, args)
	}}
	for i, c := range append(corpus, schedgen.Workloads()...) {
		first, last := uint64(1), *adversarialSeeds
		if last == 0 {
			first = 1 + uint64(i)%2
			last = first
		}
		cfg := cfg
		if c.Name == "conv_grouped_strided_0" && !*long {
			// Every accepted schedule of its deep nests interpreted twice
			// costs a third of the test's time at 20 steps: 10 (20 with
			// -long).
			cfg.Steps = 10
		}
		for seed := first; seed <= last; seed++ {
			if _, f := schedgen.Run(c, seed, cfg); f != nil {
				t.Errorf("%s, seed %d:\n%s", c.Name, seed, f.Report())
			}
		}
	}
	if parted == 0 {
		t.Error("no schedule was partitioned: the test checks nothing")
	}
	t.Logf("%d schedules partitioned", parted)
}

// TestTailOwnsItsTemporaries: a matrix product of 197 (or 56) rows with
// its bias and ReLU, at one and two threads, whose default schedule tiles
// the rows with a guarded tail and keeps the product in a temporary per
// tile: partitioned, the tail gets a temporary of its own, so that each
// part's still compacts to a tile (one buffer used by two sibling loops
// compacted at neither), and so do the tail's own versions; the result
// is the same. A temporary that
// carries a value from one iteration of the split loop to the next (a
// running sum) is shared.
func TestTailOwnsItsTemporaries(t *testing.T) {
	// At two threads the main part of 56 rows' tiles ends where the
	// parallel tile does (min(a, b - c*j0)), which the compaction must
	// hold exactly.
	for _, rows := range []int{197, 56} {
		for _, threads := range []int{1, 2} {
			f := workload.MatmulBiasReLU(rows, 64, 32).Func
			before, after := partitionedDefault(t, f, threads)
			allowed := func(*ast.Buffer, []*ast.For) bool { return true }
			allocs := 0
			ast.Inspect(after, func(n ast.Node) bool {
				if _, ok := n.(*ast.Alloc); ok {
					allocs++
				}
				return true
			})
			if n, m := len(compact.Plan(before, allowed)), len(compact.Plan(after, allowed)); n == 0 || m < 2*n || m != allocs {
				t.Errorf("%d rows, %d threads: %d temporaries compact before partitioning, %d of %d after; want every one, at least twice as many:\n%s", rows, threads, n, m, allocs, ast.Print(after))
			}
			same(t, "mm", before, after, nil)
		}
	}

	running, err := ast.Parse(`func running[S: int32](A: float32[S], B: float32[S]) {
  ScheduleBlock(root) {
    alloc T: float32[1]
    ScheduleBlock(zero) {
      writes(T[0])
      T[0] = 0.0f
    }
    serial for (i0, 0, floordiv(S + 3, 4)) {
      serial for (i1, 0, 4) {
        ScheduleBlock(sum) {
          vi = axis.bind(i0 * 4 + i1)
          axis.domain(vi = spatial(0, S))
          predicate(i0 * 4 + i1 < S)
          reads(T[0], A[vi])
          writes(T[0], B[vi])
          T[0] = T[0] + A[vi]
          B[vi] = T[0]
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	after := partition.Func(running)
	if !strings.Contains(ast.Print(after), "i0_tail") {
		t.Errorf("the running sum's loop was not partitioned:\n%s", ast.Print(after))
	}
	if strings.Contains(ast.Print(after), "T_tail") {
		t.Errorf("a running sum's temporary was split between the main part and the tail:\n%s", ast.Print(after))
	}
	for _, n := range []int64{0, 1, 5, 8, 11} {
		same(t, "running", running, after, map[string]int64{"S": n})
	}
}

// TestSymbolicTailsCompactTheSameEachTime: a matrix product of symbolic
// rows (tiles of 8 rows with a tail versioned per row count) at one and
// two threads, partitioned: every temporary compacts, and planning the
// compaction again gives the same plan (the buffers are planned in the
// order they are declared: a map's order once decided which of them got
// the dependence analysis's budget).
func TestSymbolicTailsCompactTheSameEachTime(t *testing.T) {
	mm, err := workload.NewMatmul(16, 256, 32, "M")
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 2} {
		_, after := partitionedDefault(t, mm.Func, threads)
		allowed := func(*ast.Buffer, []*ast.For) bool { return true }
		plan := func() string {
			var lines []string
			for b, c := range compact.Plan(after, allowed) {
				lines = append(lines, fmt.Sprintf("%s at %s: %v from %v", b.Name, c.Loop.Var.Name, c.Shape, c.Origin))
			}
			slices.Sort(lines)
			return strings.Join(lines, "\n")
		}
		first := plan()
		allocs := 0
		ast.Inspect(after, func(n ast.Node) bool {
			if _, ok := n.(*ast.Alloc); ok {
				allocs++
			}
			return true
		})
		if got := strings.Count(first, "\n") + 1; first == "" || got != allocs {
			t.Errorf("%d threads: %d of %d temporaries compact:\n%s\n%s", threads, got, allocs, first, ast.Print(after))
		}
		for range 3 {
			if again := plan(); again != first {
				t.Fatalf("%d threads: the plan changed:\n%s\nthen\n%s", threads, first, again)
			}
		}
	}
}
