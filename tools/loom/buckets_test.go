package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseBuckets(t *testing.T) {
	name, got, err := parseBuckets("S=1,16,128,1024,4096")
	want := [][2]int64{{1, 15}, {16, 127}, {128, 1023}, {1024, 4096}}
	if err != nil || name != "S" || !reflect.DeepEqual(got, want) {
		t.Errorf("parseBuckets = %s %v %v, want S %v", name, got, err, want)
	}
	for _, bad := range []string{"", "S", "S=", "=1,2", "S=4", "S=4,2", "S=1,x", "S=0,4", "S=1,1"} {
		if _, _, err := parseBuckets(bad); err == nil {
			t.Errorf("parseBuckets(%q) took it", bad)
		}
	}
	for in, want := range map[string]string{
		"M=1..4096":  "M=1,2,4,8,16,64,256,1024,4096",
		"R=1..16384": "R=1,2,4,8,16,64,256,1024,4096,16384",
		"S=3..100":   "S=3,6,12,24,96,100",
		"S=20..30":   "S=20,30",
		"S=1..2":     "S=1,2",
	} {
		if spec, err := rangeBuckets(in); err != nil || spec != want {
			t.Errorf("rangeBuckets(%s) = %q, %v; want %q", in, spec, err, want)
		}
	}
	for _, bad := range []string{"M=4..4", "M=0..8", "M=1-8", "M", "M=a..b"} {
		if _, err := rangeBuckets(bad); err == nil {
			t.Errorf("rangeBuckets(%q) took it", bad)
		}
	}
	if name, b, err := specializeBucket("S=1"); err != nil || name != "S" || !reflect.DeepEqual(b, [][2]int64{{1, 1}}) {
		t.Errorf("specializeBucket = %s %v %v", name, b, err)
	}
	for _, bad := range []string{"S=0", "S", "=3", "S=x"} {
		if _, _, err := specializeBucket(bad); err == nil {
			t.Errorf("specializeBucket(%q) took it", bad)
		}
	}
	for b, want := range map[[2]int64][]int64{{1, 15}: {1, 4, 15}, {16, 16}: {16}, {1, 2}: {1, 2}} {
		if got := bucketSizes(b); !reflect.DeepEqual(got, want) {
			t.Errorf("bucketSizes(%v) = %v, want %v", b, got, want)
		}
	}
}

// TestTuneBuckets: loom tune -buckets tunes each bucket on its own and
// its records keep the bucket.
func TestTuneBuckets(t *testing.T) {
	dir := t.TempDir()
	graph := filepath.Join(dir, "g.json")
	os.WriteFile(graph, []byte(`{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 8]}],
  "nodes": [{"op": "exp", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`), 0o644)
	db := filepath.Join(dir, "db.jsonl")
	code, out, errs := runLoom(t, "tune", "-graph", graph, "-size", "N=4", "-buckets", "N=1,8,32", "-specialize", "N=3", "-trials", "2", "-confirm", "0", "-threads", "1", "-db", db, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, want := range []string{"g_0 N=3..3, 1 threads: ", "g_0 N=1..7, 1 threads: ", "g_0 N=8..32, 1 threads: "} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "g_0: the dispatch (") || !strings.Contains(errs, "computes what the reference does at ") {
		t.Errorf("no word of the dispatch's check:\n%s", errs)
	}
	data, _ := os.ReadFile(db)
	buckets := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Bucket map[string][2]int64 `json:"bucket"`
		}
		json.Unmarshal([]byte(line), &r)
		buckets[fmt.Sprint(r.Bucket)] = true
	}
	if !buckets["map[N:[1 7]]"] || !buckets["map[N:[8 32]]"] || !buckets["map[N:[3 3]]"] || len(buckets) != 3 {
		t.Errorf("records' buckets: %v", buckets)
	}
	// The sweep takes each size's bucket, the default past the last.
	for _, line := range sweepN(t, db, "-graph", graph, "-size", "N=4") {
		// Neighbours whose schedules agree are merged (Database.Buckets):
		// the bucket holds the size, the specialization N=3 first.
		n := line.Sizes["N"]
		var lo, hi int64
		fmt.Sscanf(line.Bucket, "N=%d..%d", &lo, &hi)
		switch {
		case n == 3 && line.Bucket != "N=3..3", n > 32 && line.Bucket != "", n <= 32 && (lo > n || hi < n):
			t.Errorf("N=%d: bucket %q", n, line.Bucket)
		}
	}
	if code, _, errs := runLoom(t, "tune", "-graph", graph, "-size", "N=4", "-buckets", "Q=1,8", "-trials", "1", "-db", db, "-q"); code != 1 || !strings.Contains(errs, "no function to tune has a size Q") {
		t.Errorf("a bucket of no size: exit %d, %s", code, errs)
	}
}

// TestSweepTwoSizes: a kernel with a second symbolic size (the chain's
// [S1, S2, 1024]) is tuned by buckets of one and swept over it, the other
// at its -size value (the sweep once asked the default for a kernel with
// the first size alone, and crashed).
func TestSweepTwoSizes(t *testing.T) {
	dir := t.TempDir()
	graph := filepath.Join(dir, "g.json")
	os.WriteFile(graph, []byte(`{"name": "g", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", "M", 8]}],
  "nodes": [{"op": "exp", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`), 0o644)
	db := filepath.Join(dir, "db.jsonl")
	code, out, errs := runLoom(t, "tune", "-graph", graph, "-size", "N=4", "-size", "M=3", "-buckets", "N=1,8,32", "-trials", "2", "-confirm", "0", "-threads", "1", "-db", db, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, "g_0 N=8..32,M=3, 1 threads: ") || !strings.Contains(errs, "computes what the reference does") {
		t.Errorf("tune:\n%s\n%s", out, errs)
	}
	for _, line := range sweepN(t, db, "-graph", graph, "-size", "N=4", "-size", "M=3") {
		if line.Sizes["M"] != 3 {
			t.Errorf("sweep line at %v: want M=3", line.Sizes)
		}
	}
}

// sweepN runs loom bench -sweep N=1..40 -one-size N=4 on one thread with
// the database db and the source flags, and returns its lines, each
// checked to have the bucketed and default times and the bucketed
// kernel's results equal to the default's.
func sweepN(t *testing.T, db string, source ...string) []sweepLine {
	t.Helper()
	args := append([]string{"bench"}, source...)
	code, out, errs := runLoom(t, append(args, "-sweep", "N=1..40", "-one-size", "N=4", "-threads", "1", "-db", db)...)
	if code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(sweepSizes(1, 40)) {
		t.Fatalf("sweep: %d lines, want %d:\n%s", len(lines), len(sweepSizes(1, 40)), out)
	}
	var all []sweepLine
	for _, l := range lines {
		var line sweepLine
		if err := json.Unmarshal([]byte(l), &line); err != nil || line.BucketedMs == nil || line.DefaultMs == nil || line.MaxRelErr > 1e-5 {
			t.Fatalf("sweep line %s: %v", l, err)
		}
		all = append(all, line)
	}
	return all
}

// TestTuneWorkloadBuckets: a built-in workload's dimension named by -sizes
// (loom tune) or -sweep (loom bench) becomes a symbolic size of its
// function, the others staying constants the bucket's shape shows; a
// dimension a workload cannot make symbolic, or has not, is refused by
// name.
func TestTuneWorkloadBuckets(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db.jsonl")
	code, out, errs := runLoom(t, "tune", "-workload", "rmsnorm", "-size", "R=4,D=64", "-sizes", "R=1..8", "-trials", "2", "-confirm", "0", "-threads", "1", "-db", db, "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, want := range []string{"rmsnorm R=1..1,D=64, 1 threads: ", "rmsnorm R=4..8,D=64, 1 threads: "} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "rmsnorm: the dispatch (") {
		t.Errorf("no word of the dispatch's check:\n%s", errs)
	}
	code, out, errs = runLoom(t, "bench", "-workload", "rmsnorm", "-size", "D=64", "-sweep", "R=1..8", "-threads", "1", "-db", db)
	if code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		var line sweepLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if line.Bucket == "" || line.Sizes["R"] < 1 || line.Sizes["R"] > 8 || line.MaxRelErr > 1e-5 {
			t.Errorf("sweep line %s", l)
		}
	}
	if len(lines) != len(sweepSizes(1, 8)) {
		t.Errorf("%d sweep lines:\n%s", len(lines), out)
	}
	// loom build -symbolic R keeps R a parameter of the kernel, which
	// dispatches on it to the buckets' schedules.
	code, out, errs = runLoom(t, "build", "-workload", "rmsnorm", "-size", "D=64", "-symbolic", "R", "-threads", "1", "-db", db, "-out", t.TempDir())
	if code != 0 || !strings.Contains(out, "bucket(s) of its sizes") {
		t.Errorf("build -symbolic R: exit %d: %s\n%s", code, out, errs)
	}
	for _, c := range []struct{ args, want string }{
		{"-workload conv2d -sizes B=1..4", "conv2d has constant dimensions only: B cannot be symbolic"},
		{"-workload chain -sizes D=1..4", "chain's D is a constant of its function: only S1 and S2 are symbolic"},
		{"-workload softmax -sizes Q=1..4", "softmax has no dimension Q to make symbolic (it has R, D)"},
	} {
		code, _, errs := runLoom(t, append(append([]string{"tune"}, strings.Fields(c.args)...), "-trials", "1", "-db", db, "-q")...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("tune %s: exit %d, %s", c.args, code, errs)
		}
	}
}

// TestBucketRate: a bucket job of a workload counting operations (gemm
// with M symbolic) rates a time by the geometric mean of its sizes'
// operation counts, not by the count at -size.
func TestBucketRate(t *testing.T) {
	src := source{workload: "gemm", size: sizeValue{symbols: sizeFlags{"N": 64, "K": 32, "M": 100}},
		symbolicDims: func() []string { return []string{"M"} }}
	jobs, err := src.jobs()
	if err != nil {
		t.Fatal(err)
	}
	if got := jobs[0].Shape; got != "M (symbolic), N=64, K=32" {
		t.Errorf("shape %q", got)
	}
	bj, err := bucketJobs(jobs, "M", [][2]int64{{1, 16}})
	if err != nil {
		t.Fatal(err)
	}
	j := bj[0]
	if j.Shape != "M=1..16,N=64,K=32" || len(j.SizeSets) != 3 {
		t.Fatalf("bucket job %q at %v", j.Shape, j.SizeSets)
	}
	// M = 1, 4 and 16: a geometric mean of 4 rows, 2*4*64*32 operations.
	if got, want := j.rate(1e-6), 2*4*64*32/1e-6/1e9; math.Abs(got-want) > 1e-9*want {
		t.Errorf("rate %g GFLOP/s, want %g", got, want)
	}
	if j.unit() != "GFLOP/s" {
		t.Errorf("unit %s", j.unit())
	}
}
