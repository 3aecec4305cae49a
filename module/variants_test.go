package module

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
)

// TestBucketVariants: a kernel the database holds bucket records for
// runs, from Go and from the C library, the schedule of the bucket that
// holds the call's sizes (chosen once per binding; the C code by the same
// test), the default elsewhere; each computes the graph; a second compile
// finds the variants in the disk cache.
func TestBucketVariants(t *testing.T) {
	g, err := fusion.ParseJSON([]byte(`{"name": "gv", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 8]}],
  "nodes": [{"op": "exp", "inputs": ["X"], "output": "Y"}], "outputs": ["Y"]}`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := plan.Kernels[0].Func
	dir := t.TempDir()
	db, err := autotune.OpenDatabase(filepath.Join(dir, "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	threads := 1
	key := autotune.TargetKey(llvm.Host(), threads)
	sp := &autotune.Space{Rules: autotune.DefaultRules(), Target: autotune.HostTarget(threads)}
	var traces []string
	for seed := uint64(1); len(traces) < 2; seed++ {
		s, err := sp.Sample(f, seed)
		if err != nil {
			continue
		}
		if len(traces) == 0 || s.Trace().String() != traces[0] {
			traces = append(traces, s.Trace().String())
			rec := &autotune.Record{Workload: ast.Hash(f).String(), Name: f.Name, Target: key, Trace: s.Trace(), Median: 1e-3, Seconds: []float64{1e-3},
				Bucket: map[string][2]int64{"N": {int64(1 + 8*len(traces) - 8), int64(8 * len(traces))}}, Sizes: map[string]int64{"N": 1}}
			if err := db.Append(rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	cache, err := native.NewCache(filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Compile(g, Options{Threads: threads, Database: db, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	k := m.kernels[0]
	if len(k.variants) != 2 || m.Kernels()[0][1] != "default and 2 buckets" {
		t.Fatalf("kernel: %d variants, %q", len(k.variants), m.Kernels()[0][1])
	}
	for _, c := range []struct {
		n       int64
		variant int
	}{{1, 0}, {8, 0}, {9, 1}, {16, 1}, {17, -1}, {40, -1}} {
		b, err := m.bindingAt(map[string]int64{"N": c.n})
		if err != nil {
			t.Fatal(err)
		}
		want := k.entry
		if c.variant >= 0 {
			want = k.variants[c.variant].entry
		}
		if b.calls[0].entry != want {
			t.Errorf("N=%d: not the entry of variant %d", c.n, c.variant)
		}
		x := make([]float32, 8*c.n)
		for i := range x {
			x[i] = float32(i%13)/7 - 1
		}
		y := make([]float32, 8*c.n)
		if err := m.Run(map[string]Tensor{"X": {Data: x, Shape: []int64{c.n, 8}}}, map[string]Tensor{"Y": {Data: y, Shape: []int64{c.n, 8}}}); err != nil {
			t.Fatal(err)
		}
		for i := range y {
			if math.Abs(float64(y[i])-math.Exp(float64(x[i]))) > 1e-5*math.Exp(float64(x[i])) {
				t.Fatalf("N=%d: Y[%d] = %g, want exp(%g)", c.n, i, y[i], x[i])
			}
		}
	}
	again, err := Compile(g, Options{Threads: threads, Database: db, Cache: cache})
	if err != nil || len(again.kernels[0].variants) != 2 {
		t.Fatalf("a second compile: %v", err)
	}
	memoryCache.Lock() // forget the module in memory: the disk cache answers
	clear(memoryCache.m)
	memoryCache.Unlock()
	before := decided.Load()
	fromDisk, err := Compile(g, Options{Threads: threads, Database: db, Cache: cache})
	if err != nil || len(fromDisk.kernels[0].variants) != 2 || decided.Load() != before {
		t.Fatalf("from the disk cache: %v (%d schedules decided again)", err, decided.Load()-before)
	}

	// The C library picks the same way.
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	lib := filepath.Join(dir, "lib")
	if _, err := m.Build(lib, "gv"); err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile(filepath.Join(lib, "gv_graph.c"))
	for _, want := range []string{"if (sz[0] >= 1 && sz[0] <= 8)\n\t\t\tfn = gv_k0_b0_packed;", "else if (sz[0] >= 9 && sz[0] <= 16)\n\t\t\tfn = gv_k0_b1_packed;"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("the C source lacks %q", want)
		}
	}
	prog := `#include <math.h>
#include <stdio.h>
#include "gv.h"
int main(void) {
	static float x[8 * 40], y[8 * 40];
	const int64_t ns[] = {1, 8, 9, 16, 17, 40};
	for (int c = 0; c < 6; c++) {
		int64_t s[2] = {ns[c], 8};
		for (int i = 0; i < 8 * ns[c]; i++) x[i] = (float)(i % 13) / 7 - 1;
		loom_status st;
		if (gv(x, s, y, s, 1, &st)) { printf("failed: %s\n", st.message); return 1; }
		for (int i = 0; i < 8 * ns[c]; i++)
			if (fabsf(y[i] - expf(x[i])) > 1e-5f * expf(x[i])) { printf("N=%lld: y[%d] = %g\n", (long long)ns[c], i, y[i]); return 1; }
	}
	printf("ok\n");
	return 0;
}
`
	os.WriteFile(filepath.Join(lib, "prog.c"), []byte(prog), 0o644)
	cc := exec.Command("cc", "-std=c11", "-I", lib, "prog.c", "-o", "prog", filepath.Join(lib, "libgv.a"), "-lm", "-pthread")
	cc.Dir = lib
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(lib, "prog")).CombinedOutput(); err != nil || string(out) != "ok\n" {
		t.Errorf("%v: %s", err, out)
	}
}
