package autotune

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/golden"
	"github.com/loom-go/loom/internal/schedgen"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestDecideTile: a decided tile is a perfect tile (its factors multiply
// to the extent), its innermost factor within the limit and the largest
// divisor there, for every extent, level count and limit tried.
func TestDecideTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tg := Target{VectorLanes: 16, Threads: 2}
	for range 2000 {
		ext := 1 + rng.Int64N(1200)
		n := 1 + rng.IntN(4)
		limit := rng.IntN(70)
		r := tileRole(rng.IntN(4))
		got := decideTile(ext, n, limit, r, tg)
		p := int64(1)
		for _, f := range got {
			if f < 1 {
				t.Fatalf("decideTile(%d, %d, %d, %d) = %v: a factor below 1", ext, n, limit, r, got)
			}
			p *= f
		}
		inner := got[n-1]
		if p != ext || (n > 1 && limit > 0 && inner > int64(limit) && r != tileSpatialAbove) {
			t.Fatalf("decideTile(%d, %d, %d, %d) = %v: not a perfect tile within the limit", ext, n, limit, r, got)
		}
	}
	// gemm 512 on AVX-512: 8 rows of the register tile, 64 tiles left:
	// 16 of them in the cache tile (4 in its deepest level), 4 for the
	// threads.
	if got, want := decideTile(512, 4, 8, tileSpatial, tg), []int64{4, 4, 4, 8}; !equalInts(got, want) {
		t.Errorf("gemm rows: got %v, want %v", got, want)
	}
	if got, want := decideTile(768, 2, 256, tileReduce, tg), []int64{3, 256}; !equalInts(got, want) {
		t.Errorf("reduction of 768: got %v, want %v", got, want)
	}
	// 56 rows of a depthwise convolution, one a register tile: the
	// outermost level (the parallel loop) in iterations the two threads
	// share evenly (8, not 7: one thread would run 4 of 7).
	for _, ext := range []int64{56, 28, 112} {
		if got := decideTile(ext, 4, 1, tileSpatial, tg); unevenShares(got[0], 2) {
			t.Errorf("%d rows on two threads: got %v, whose outermost %d the threads do not share evenly", ext, got, got[0])
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// defaultCase is a function whose default schedule the tests check: its
// sizes (those it is given and the edges, see edgeSizes) and how to make
// its arguments.
type defaultCase struct {
	name  string
	f     *ast.Func
	sizes []map[string]int64
	args  func(sizes map[string]int64, seed uint64) map[string]any
}

// defaultCases returns every function of the adversarial corpus, the
// standard workloads, and every kernel of every fusion golden with sizes
// (symbolic, and not multiples of any tile).
func defaultCases(t testing.TB) []defaultCase {
	t.Helper()
	corpus, err := schedgen.Load("../testdata/schedgen")
	if err != nil {
		t.Fatal(err)
	}
	var out []defaultCase
	for _, c := range append(corpus, schedgen.Workloads()...) {
		out = append(out, defaultCase{c.Name, c.Func, distinctSizes(append(slices.Clone(c.Sizes), edgeSizes(c.Func)...)), c.Args})
	}
	files, err := filepath.Glob("../testdata/fusion/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fusion golden files: %v", err)
	}
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := golden.Section(ar, "graph.json")
		sizes, ok := golden.Section(ar, "sizes")
		if !ok {
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
		for _, kern := range p.Kernels {
			f := kern.Func
			var at []map[string]int64
			bindings, err := golden.Sizes(sizes)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for _, b := range bindings {
				m := map[string]int64{} // the kernel's own symbols
				for name, n := range b {
					if slices.ContainsFunc(f.Sizes, func(x *ast.Var) bool { return x.Name == name }) {
						m[name] = n
					}
				}
				at = append(at, m)
			}
			out = append(out, defaultCase{filepath.Base(file) + ": " + f.Name, f, at, func(sizes map[string]int64, seed uint64) map[string]any {
				return workload.Case{Name: f.Name, Func: f, Sizes: sizes}.Args(seed)
			}})
		}
	}
	return out
}

// TestDefaultMatchesInterpreter: the default schedule of every function
// of defaultCases (the adversarial corpus, the standard workloads, the
// fusion goldens' kernels), compiled to native code, computes what the
// interpreter computes for the unscheduled function at each of the case's
// sizes and at the edges (every symbolic size 0, 1, or 13: not divisible
// by any tile); it is the same schedule every time (checked on every
// other case, every case with -long), and its trace replays to the same
// function.
func TestDefaultMatchesInterpreter(t *testing.T) {
	longInParallel(t)
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	tg := Target{VectorLanes: llvm.Host().VectorBits() / 32, Threads: 2}
	for i, c := range defaultCases(t) {
		s := deterministicDefault(t, c, tg, i%2 == 0) // every case twice with -long
		matchesInterpreter(t, cache, c.name, c.f, s, c.sizes, c.args)
	}
}

// deterministicDefault returns the default schedule of c for tg, after
// checking that its trace replays to it and, when twice is set (or with
// -long), that a second Default gives the same.
func deterministicDefault(t *testing.T, c defaultCase, tg Target, twice bool) *schedule.Schedule {
	t.Helper()
	s, err := Default(c.f, tg)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	if twice || *long {
		again, err := Default(c.f, tg)
		if err != nil || again.Trace().String() != s.Trace().String() {
			t.Fatalf("%s: a second Default differs (%v):\n%s\nthen\n%s", c.name, err, s.Trace(), again.Trace())
		}
	}
	replayed, err := Replay(c.f, s.Trace())
	if err != nil || ast.Print(replayed.Func()) != ast.Print(s.Func()) {
		t.Fatalf("%s: the default's trace does not replay to it (%v)\n%s", c.name, err, s.Trace())
	}
	return s
}

// distinctSizes returns sizes without the bindings that repeat an earlier
// one (a corpus case's own sizes often hold the edges already).
func distinctSizes(sizes []map[string]int64) []map[string]int64 {
	var out []map[string]int64
	for _, m := range sizes {
		if !slices.ContainsFunc(out, func(o map[string]int64) bool { return maps.Equal(o, m) }) {
			out = append(out, m)
		}
	}
	return out
}

// edgeSizes returns the bindings of f's symbolic sizes all to 0, all to 1
// and all to 13 (no tile's multiple) at which every buffer of f has a
// shape (none below 0).
func edgeSizes(f *ast.Func) []map[string]int64 {
	if len(f.Sizes) == 0 {
		return nil
	}
	var out []map[string]int64
	for _, v := range []int64{0, 1, 13} {
		m := map[string]int64{}
		for _, x := range f.Sizes {
			m[x.Name] = v
		}
		if !slices.ContainsFunc(f.Params, func(p *ast.Buffer) bool { _, err := ast.NewData(p, m); return err != nil }) {
			out = append(out, m)
		}
	}
	return out
}

// matchesInterpreter compiles schedule s of f and checks that at each
// binding of the sizes it computes what the interpreter computes for f,
// from the same arguments (args makes them, from a seed).
func matchesInterpreter(t *testing.T, cache *native.Cache, name string, f *ast.Func, s *schedule.Schedule, sizes []map[string]int64, args func(map[string]int64, uint64) map[string]any) {
	t.Helper()
	k, err := cache.Compile(s.Func(), llvm.Options{})
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, s.Trace())
	}
	for i, at := range sizes {
		want := args(at, uint64(i))
		if err := ast.Interpret(f, at, want); err != nil {
			t.Fatalf("%s at %v: %v", name, at, err)
		}
		got := args(at, uint64(i))
		if err := k.Run(at, got); err != nil {
			t.Fatalf("%s at %v: %v", name, at, err)
		}
		for _, p := range f.Params {
			if e := check.MaxRelErr(got[p.Name], want[p.Name]); e > 1e-4 {
				t.Fatalf("%s at %v: %s differs from the interpreter by %g\n%s", name, at, p.Name, e, s.Trace())
			}
		}
	}
}

// TestTuneMeasuresTheDefault: the schedule the rules decide without
// measurement is among the first round's measured candidates, so that
// tuning never ends below it; Result.Default is its record.
func TestTuneMeasuresTheDefault(t *testing.T) {
	task := newTask()
	d, err := task.Space.Decide(task.Func)
	if err != nil {
		t.Fatal(err)
	}
	want := d.Trace().String()
	res, err := Tune(context.Background(), task, fakeBuilder{}, fakeRunner{}, Options{Trials: 4, Batch: 4, Population: 8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Default == nil || !slices.Contains(res.Records, res.Default) {
		t.Fatalf("Result.Default is %v, not one of the records", res.Default)
	}
	if s, err := res.Default.Schedule(task.Func); err != nil || s.Trace().String() != want {
		t.Fatalf("Result.Default is not the decided schedule (%v):\n%s", err, res.Default.Trace)
	}
	// Confirming the leaders measures the default again beside them.
	res, err = Tune(context.Background(), task, fakeBuilder{}, fakeRunner{}, Options{Trials: 8, Batch: 4, Population: 8, Seed: 3, Confirm: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Default == nil || res.Default.Confirmed == 0 || !slices.Contains(res.Confirmed, res.Default) {
		t.Fatalf("with Confirm, Result.Default is not a confirmed record: %+v", res.Default)
	}
}

// BenchmarkDefaultCost measures what deciding a default schedule costs
// (issue 21 wants the median well under 50 ms): one iteration decides the
// default of every function of the corpus, every fusion golden kernel and
// the full-size workloads, and reports the median and the worst in ms.
//
//	go test ./autotune -run '^$' -bench DefaultCost -benchtime 1x
func BenchmarkDefaultCost(b *testing.B) {
	cases := defaultCases(b)
	for _, w := range []workload.Case{workload.Matmul(512, 512, 512), workload.Conv2D(1, 64, 56, 56, 64), workload.Softmax(1024, 1024), workload.RMSNorm(16384, 768)} {
		cases = append(cases, defaultCase{name: w.Name + " (full size)", f: w.Func})
	}
	tg := HostTarget(2)
	var costs []time.Duration
	worst := ""
	for b.Loop() {
		costs = costs[:0]
		var most time.Duration
		for _, c := range cases {
			start := time.Now()
			if _, err := Default(c.f, tg); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			d := time.Since(start)
			costs = append(costs, d)
			if d > most {
				most, worst = d, c.name
			}
		}
	}
	slices.Sort(costs)
	b.ReportMetric(float64(costs[len(costs)/2])/1e6, "median-ms")
	b.ReportMetric(float64(costs[len(costs)-1])/1e6, "worst-ms")
	b.Logf("%d functions: median %v, worst %v (%s)", len(costs), costs[len(costs)/2], costs[len(costs)-1], worst)
}

// BenchmarkDefaultSpeedup times every kernel of every graph of
// testdata/fusion (each symbol 256, as a batch or a sequence of a few
// hundred) with its default schedule and unscheduled, both compiled, one
// thread, and logs the table of issue 21 (default against unscheduled:
// at least 10x, never slower); it reports the geometric mean and the
// least of the ratios. Beside each kernel it logs the bytes its buffers
// hold (inputs read once, outputs written once) over the default's time,
// as a fraction of the copy bandwidth measured in the same run: a kernel
// near 1 there moves its data as fast as memory does, and no schedule
// makes it much faster (its unscheduled nest, when that is already
// within 10x of the bound, cannot be beaten 10x).
//
//	go test ./autotune -run '^$' -bench DefaultSpeedup -benchtime 1x -v
func BenchmarkDefaultSpeedup(b *testing.B) {
	files, err := filepath.Glob("../testdata/fusion/*.txtar")
	if err != nil || len(files) == 0 {
		b.Fatalf("no fusion goldens: %v", err)
	}
	more, _ := filepath.Glob("../testdata/fusion/*.json")
	files = append(files, more...)
	cache, err := native.NewCache(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := native.SetThreads(1); err != nil {
		b.Fatal(err)
	}
	best := func(f *ast.Func, sizes map[string]int64) time.Duration {
		k, err := cache.Compile(f, llvm.Options{})
		if err != nil {
			b.Fatalf("%s: %v", f.Name, err)
		}
		args := workload.Case{Name: f.Name, Func: f, Sizes: sizes}.Args(1)
		c, err := k.Bind(sizes, args)
		if err != nil {
			b.Fatalf("%s: %v", f.Name, err)
		}
		defer c.Release()
		c.Run() // warm
		start := time.Now()
		c.Run()
		reps := max(1, int(5*time.Millisecond/max(time.Since(start), time.Microsecond)))
		fastest := time.Duration(1 << 62)
		for range 5 {
			start := time.Now()
			for range reps {
				c.Run()
			}
			fastest = min(fastest, time.Since(start)/time.Duration(reps))
		}
		return fastest
	}
	for b.Loop() {
		copyGBps := copyBandwidth()
		var logs []string
		sumLog, n, least, leastName := 0.0, 0, math.Inf(1), ""
		for _, file := range files {
			var src []byte
			if filepath.Ext(file) == ".json" {
				src, err = os.ReadFile(file)
			} else {
				ar, err2 := txtar.ParseFile(file)
				err = err2
				if err == nil {
					s, _ := golden.Section(ar, "graph.json")
					src = []byte(s)
				}
			}
			if err != nil {
				b.Fatal(err)
			}
			g, err := fusion.ParseJSON(src)
			if err != nil {
				continue // an error golden
			}
			p, err := fusion.Compile(g, fusion.Options{})
			if err != nil {
				continue
			}
			for _, k := range p.Kernels {
				sizes := map[string]int64{}
				for _, s := range k.Func.Sizes {
					sizes[s.Name] = 256
				}
				s, err := Default(k.Func, HostTarget(1))
				if err != nil {
					b.Fatalf("%s: %v", k.Name, err)
				}
				plain, dflt := best(k.Func, sizes), best(s.Func(), sizes)
				r := float64(plain) / float64(dflt)
				sumLog += math.Log(r)
				n++
				name := filepath.Base(file) + " " + k.Name
				if r < least {
					least, leastName = r, name
				}
				gbps := float64(workload.Case{Func: k.Func, Sizes: sizes}.Bytes()) / float64(dflt)
				logs = append(logs, fmt.Sprintf("| %s | %s | %.4f | %.4f | %.1fx | %.1f | %.2f |", name, strings.Join(k.Nodes, " "), float64(plain)/1e6, float64(dflt)/1e6, r, gbps, gbps/copyGBps))
			}
		}
		b.ReportMetric(math.Exp(sumLog/float64(n)), "geomean-x")
		b.ReportMetric(least, "least-x")
		b.Logf("%d kernels, every symbol 256, one thread: geometric mean %.1fx, least %.2fx (%s); copy bandwidth %.1f GB/s\n| kernel | nodes | unscheduled ms | default ms | speed-up | default GB/s | of copy |\n|---|---|---|---|---|---|---|\n%s",
			n, math.Exp(sumLog/float64(n)), least, leastName, copyGBps, strings.Join(logs, "\n"))
	}
}

// copyBandwidth returns the bytes a second one thread moves copying a
// buffer far larger than the caches (bytes read plus bytes written, as
// STREAM's copy counts them), the best of a few copies.
func copyBandwidth() float64 {
	const n = 256 << 20
	src, dst := make([]byte, n), make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	fastest := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		copy(dst, src)
		fastest = min(fastest, time.Since(start))
	}
	return 2 * n / float64(fastest)
}

// TestDefaultLeavesTinyKernelsSerial: on two threads the default spreads
// a copy of 128x768 floats over them, but not one of 768 (an embedding
// row of one decoding step), which threads only slow down.
func TestDefaultLeavesTinyKernelsSerial(t *testing.T) {
	for _, c := range []struct {
		rows     int
		parallel bool
	}{{1, false}, {4, false}, {128, true}} {
		f, err := ast.Parse(fmt.Sprintf(`func copy(A: float32[%[1]d, 768], B: float32[%[1]d, 768]) {
  ScheduleBlock(root) {
    serial for (i, 0, %[1]d) {
      serial for (j, 0, 768) {
        ScheduleBlock(B) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, %[1]d), vj = spatial(0, 768))
          reads(A[vi, vj])
          writes(B[vi, vj])
          B[vi, vj] = A[vi, vj] * 2.0f
        }
      }
    }
  }
}`, c.rows))
		if err != nil {
			t.Fatal(err)
		}
		s, err := Default(f, Target{VectorLanes: 16, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(ast.Print(s.Func()), "parallel for")
		if got != c.parallel {
			t.Errorf("%d rows: a parallel loop %v, want %v:\n%s", c.rows, got, c.parallel, ast.Print(s.Func()))
		}
	}
}
