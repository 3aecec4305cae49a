package autotune

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/schedgen"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestDispatch: the records of two buckets' tunings (and an older,
// slower record of the first) give a dispatch that runs the best
// record's schedule of the bucket holding the sizes, the default for
// sizes no bucket holds, each computing what the interpreter does, at
// the buckets' edges and at sizes no tile divides (each size once: those
// Check runs are not run again before it, T=300 only with -long).
func TestDispatch(t *testing.T) {
	longInParallel(t)
	src, err := os.ReadFile("../testdata/fusion/mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	f := fusedKernel(t, string(src)) // a matmul with a GELU epilogue over T rows
	tg := Target{VectorLanes: llvm.Host().VectorBits() / 32, Threads: 2}
	sp := &Space{Rules: DefaultRules(), Target: tg}
	var traces []*Record
	for seed := uint64(1); len(traces) < 3; seed++ {
		s, err := sp.Sample(f, seed)
		if err != nil {
			continue
		}
		traces = append(traces, &Record{Trace: s.Trace()})
	}
	db, err := OpenDatabase(filepath.Join(t.TempDir(), "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	small, large := map[string][2]int64{"T": {1, 15}}, map[string][2]int64{"T": {16, 128}}
	for i, r := range []struct {
		bucket map[string][2]int64
		median float64
	}{{small, 2e-3}, {small, 1e-3}, {large, 5e-3}} {
		rec := &Record{Workload: ast.Hash(f).String(), Name: f.Name, Target: "t", Trace: traces[i].Trace, Median: r.median, Seconds: []float64{r.median}, Bucket: r.bucket, Sizes: map[string]int64{"T": r.bucket["T"][0]}}
		if err := db.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	// A record of exact sizes is no bucket's.
	db.Append(&Record{Workload: ast.Hash(f).String(), Name: f.Name, Target: "t", Trace: traces[0].Trace, Median: 1e-9, Seconds: []float64{1e-9}, Sizes: map[string]int64{"T": 4}})
	choices, err := db.Buckets(f, "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(choices) != 2 || choices[0].Record.Median != 1e-3 || choices[1].Record.Median != 5e-3 {
		t.Fatalf("buckets: %+v", choices)
	}
	if best, _ := db.Best(ast.Hash(f).String(), map[string]int64{"T": 1}, "t"); best != nil {
		t.Errorf("an exact-size lookup took a bucket's record: %+v", best)
	}
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	d, err := DispatchFromDatabase(f, db, "t", tg, cache, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// What loom tune checks after tuning buckets: every bucket at its
	// bounds and at sizes drawn inside it, and the fallback past them.
	sets, err := d.CheckSizes(nil, 3, 7)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range sets {
		keys = append(keys, sizesKey(s))
	}
	for _, c := range []struct {
		t      int64
		bucket int
	}{{1, 0}, {7, 0}, {15, 0}, {16, 1}, {37, 1}, {128, 1}, {129, -1}, {300, -1}, {0, -1}} {
		if got := d.Pick([]int64{c.t}); got != c.bucket {
			t.Errorf("T=%d: bucket %d, want %d", c.t, got, c.bucket)
		}
		sizes := map[string]int64{"T": c.t}
		if !*long && (c.t == 300 || slices.Contains(keys, sizesKey(sizes))) {
			// d.Check below runs the dispatch against the interpreter
			// at the buckets' bounds and T=129 past them (most of the
			// interpreter's time here); every size here with -long.
			continue
		}
		want := workload.Case{Name: f.Name, Func: f, Sizes: sizes}.Args(uint64(c.t))
		if err := ast.Interpret(f, sizes, want); err != nil {
			t.Fatal(err)
		}
		got := workload.Case{Name: f.Name, Func: f, Sizes: sizes}.Args(uint64(c.t))
		if err := d.Run(sizes, got); err != nil {
			t.Fatalf("T=%d: %v", c.t, err)
		}
		for _, p := range f.Params {
			if e := check.MaxRelErr(got[p.Name], want[p.Name]); e > 1e-4 {
				t.Errorf("T=%d: %s differs from the interpreter by %g", c.t, p.Name, e)
			}
		}
	}
	if _, _, err := d.Kernel(map[string]int64{}); err == nil {
		t.Error("a call without the size's value was taken")
	}
	if !slices.Equal(d.Sizes(), []string{"T"}) {
		t.Errorf("sizes %v", d.Sizes())
	}
	for _, want := range []string{"T=1", "T=15", "T=16", "T=128", "T=129"} {
		if !slices.Contains(keys, want) {
			t.Errorf("check sizes %v lack %s", keys, want)
		}
	}
	odd := 0
	for _, s := range sets {
		if v := s["T"]; v%2 != 0 && v%3 != 0 && v != 1 {
			odd++
		}
	}
	if odd < 2 {
		t.Errorf("check sizes %v: want a size no tile divides in each bucket", keys)
	}
	if err := d.Check(sets, cache, llvm.Options{}); err != nil {
		t.Error(err)
	}
}

// TestDispatchCheckFindsWrongBucket: a bucket whose kernel computes
// something else is caught by Check, which names the bucket and sizes;
// the buckets' values come from others where a bucket does not range
// over a size, and a size with no value is an error.
func TestDispatchCheckFindsWrongBucket(t *testing.T) {
	exp := fusedKernel(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", "C"]}],
  "nodes": [{"op": "exp", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`)
	neg := fusedKernel(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", "C"]}],
  "nodes": [{"op": "neg", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`)
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	choices := []BucketChoice{
		{Bucket: map[string][2]int64{"N": {1, 7}}, Func: exp},
		{Bucket: map[string][2]int64{"N": {8, 64}}, Func: neg},
	}
	d, err := NewDispatch(exp, choices, nil, cache, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CheckSizes(nil, 2, 1); err == nil || !strings.Contains(err.Error(), "no value for size C") {
		t.Errorf("check sizes without C: %v", err)
	}
	sets, err := d.CheckSizes(map[string]int64{"C": 5}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Check(sets, cache, llvm.Options{})
	if err == nil || !strings.Contains(err.Error(), "bucket N=8..64") || !strings.Contains(err.Error(), "Y differs") {
		t.Errorf("a wrong bucket checked: %v", err)
	}
	if err := d.Check(sets[:2], cache, llvm.Options{}); err != nil {
		t.Errorf("the right bucket: %v", err)
	}
	// A bucket up to a billion rows is checked at the sizes whose
	// arguments fit in memory only.
	huge, err := NewDispatch(exp, []BucketChoice{{Bucket: map[string][2]int64{"N": {8, 1e9}}, Func: exp}}, nil, cache, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sets, err = huge.CheckSizes(map[string]int64{"C": 5}, 3, 1)
	if err != nil || len(sets) == 0 {
		t.Fatalf("check sizes of a huge bucket: %v, %v", sets, err)
	}
	for _, s := range sets {
		if s["N"]*5*4*2 > maxCheckBytes {
			t.Errorf("a check at N=%d", s["N"])
		}
	}
}

// BenchmarkDispatchPick: what choosing a kernel among five buckets of
// two sizes costs a call (issue 23: under 100 ns).
func BenchmarkDispatchPick(b *testing.B) {
	d := &Dispatch{names: []string{"M", "N"}}
	for i := range int64(5) {
		lo := int64(1) << (3 * i)
		d.buckets = append(d.buckets, dispatchBucket{lo: []int64{lo, 1}, hi: []int64{lo*8 - 1, 4096}})
	}
	sizes := []int64{3000, 768}
	n := 0
	for b.Loop() {
		n += d.Pick(sizes)
	}
	if n != 3*b.N {
		b.Fatalf("picked %d over %d calls: want the fourth bucket each time", n, b.N)
	}
}

// TestMergeBuckets: neighbouring buckets of one size whose schedules
// build the same function become one bucket (the faster record's);
// others stay apart.
func TestMergeBuckets(t *testing.T) {
	a := fusedKernel(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 8]}],
  "nodes": [{"op": "exp", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`)
	b := fusedKernel(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 8]}],
  "nodes": [{"op": "neg", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`)
	choice := func(lo, hi int64, f *ast.Func, median float64) BucketChoice {
		return BucketChoice{Bucket: map[string][2]int64{"N": {lo, hi}}, Func: f, Record: &Record{Median: median}}
	}
	got := mergeBuckets([]BucketChoice{choice(16, 31, a, 3), choice(1, 7, a, 1), choice(8, 15, a, 2), choice(32, 63, b, 1), choice(65, 99, b, 1)})
	var text []string
	for _, c := range got {
		text = append(text, fmt.Sprintf("%s %g", bucketKey(c.Bucket), c.Record.Median))
	}
	want := []string{"N=1..31 1", "N=32..63 1", "N=65..99 1"}
	if !slices.Equal(text, want) {
		t.Errorf("merged: %v, want %v", text, want)
	}
}

// TestBucketsSkipRecordsThatDoNotReplay: a bucket whose only record does
// not replay on the function (another loom's decisions) is left out, not
// an error: its sizes take the fallback.
func TestBucketsSkipRecordsThatDoNotReplay(t *testing.T) {
	f := fusedKernel(t, `{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 8]}],
  "nodes": [{"op": "exp", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`)
	db, err := OpenDatabase(filepath.Join(t.TempDir(), "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	bad, err := schedule.ParseTraceText(`b0 = get_block("nothing")`)
	if err != nil {
		t.Fatal(err)
	}
	db.Append(&Record{Workload: ast.Hash(f).String(), Name: f.Name, Target: "t", Trace: bad, Median: 1e-3, Seconds: []float64{1e-3}, Bucket: map[string][2]int64{"N": {1, 8}}})
	choices, err := db.Buckets(f, "t")
	if err != nil || len(choices) != 0 {
		t.Errorf("buckets %v, %v; want none and no error", choices, err)
	}
}

// TestDispatchSymbolicCorpus: for every function of the schedule corpus
// with symbolic sizes (triangular, skewed and in-place nests among them),
// schedules sampled for two buckets of its first size (tiles bounded by
// the bucket's end, parallel loops chosen by its ends, as a bucket's
// tuning draws them) make a dispatch that
// computes what the interpreter does from its entry point at every
// bucket's bounds, at sizes drawn inside (one no tile factor divides) and
// past the last bucket: every other function (skewed_sym and
// triangular_matvec always), every function with -long.
func TestDispatchSymbolicCorpus(t *testing.T) {
	corpus, err := schedgen.Load("../testdata/schedgen")
	if err != nil {
		t.Fatal(err)
	}
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	checked, n := 0, 0
	for _, c := range corpus {
		if len(c.Func.Sizes) == 0 {
			continue
		}
		always := c.Name == "skewed_sym" || c.Name == "triangular_matvec"
		if n++; testing.Short() && !always || !*long && n%2 == 0 && !always {
			continue
		}
		name := c.Func.Sizes[0].Name
		others := maps.Clone(c.Sizes[0])
		var choices []BucketChoice
		for _, b := range [][2]int64{{1, 4}, {5, 37}} {
			most, least := maps.Clone(others), maps.Clone(others)
			least[name], most[name] = b[0], b[1]
			sp := &Space{Rules: DefaultRules(), Target: Target{VectorLanes: llvm.Host().VectorBits() / 32, Threads: 2, Bounds: &SizeBounds{Max: most, Min: least}}}
			for seed := uint64(1); seed <= 8; seed++ {
				s, err := sp.Sample(c.Func, seed+uint64(b[0]))
				if err != nil {
					continue
				}
				choices = append(choices, BucketChoice{Bucket: map[string][2]int64{name: b}, Func: s.Func(), Record: &Record{Trace: s.Trace()}})
				break
			}
		}
		if len(choices) != 2 {
			t.Errorf("%s: samples for %d of 2 buckets", c.Name, len(choices))
			continue
		}
		d, err := NewDispatch(c.Func, choices, nil, cache, llvm.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		sets, err := d.CheckSizes(others, 2, 5)
		if err != nil || len(sets) < 5 {
			t.Fatalf("%s: check sizes %v, %v", c.Name, sets, err)
		}
		if err := d.Check(sets, cache, llvm.Options{}); err != nil {
			for _, ch := range choices {
				t.Logf("%s bucket %s:\n%s", c.Name, bucketKey(ch.Bucket), ch.Record.Trace)
			}
			t.Errorf("%s: %v", c.Name, err)
		}
		checked++
	}
	if checked < 2 {
		t.Errorf("checked %d functions of the corpus", checked)
	}
}

// TestDispatchClose: a closed dispatch's runs fail with native.ErrClosed.
func TestDispatchClose(t *testing.T) {
	c := workload.Chain(2, 3, 32)
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDispatch(c.Func, nil, nil, cache, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(c.Sizes, c.Args(1)); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(c.Sizes, c.Args(1)); !errors.Is(err, native.ErrClosed) {
		t.Errorf("a run after Close: %v, want native.ErrClosed", err)
	}
}
