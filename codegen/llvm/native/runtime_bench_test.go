package native

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// poolDriver times loom_parallel_for on a region with almost no work (the
// fork-join overhead) and on one with ~20 us of work per thread, from the
// command line: driver REPS.
const poolDriver = `#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
void loom_set_num_threads(int32_t n);
void loom_parallel_for(void (*task)(void *, int64_t, int64_t), void *ctx, int64_t n, int64_t work);

static void tiny(void *ctx, int64_t lo, int64_t hi) { ((volatile int64_t *)ctx)[lo] = hi; }
static void work(void *ctx, int64_t lo, int64_t hi) {
	volatile double *x = ctx;
	for (int64_t i = lo; i < hi; i++)
		for (int k = 0; k < 20000; k++)
			x[i * 8] += 1e-9;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }

int main(int argc, char **argv) {
	int reps = atoi(argv[1]);
	static double buf[1024];
	loom_set_num_threads(2);
	for (int i = 0; i < 100; i++) loom_parallel_for(tiny, buf, 2, 0);
	double t0 = now();
	for (int i = 0; i < reps; i++) loom_parallel_for(tiny, buf, 2, 0);
	double t1 = now();
	for (int i = 0; i < reps / 10; i++) loom_parallel_for(work, buf, 2, 0);
	double t2 = now();
	printf("%f %f\n", (t1 - t0) / reps, (t2 - t1) / (reps / 10));
	return 0;
}
`

// BenchmarkParallelRuntime compares loom's thread pool with the same
// interface on GCC's OpenMP runtime (libgomp), which is how the pool was
// chosen: the ns of an empty two-thread region, and of one with 20 us of
// work per thread.
//
//	go test ./codegen/llvm/native -run '^$' -bench ParallelRuntime
func BenchmarkParallelRuntime(b *testing.B) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		b.Skip("no C compiler")
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "loomrt.c"), RuntimeSource(), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "driver.c"), []byte(poolDriver), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct{ name, def, lib string }{{"loom", "-DLOOM_RT_LOOM", "-lm"}, {"gomp", "-DLOOM_RT_GOMP", "-lgomp"}} {
		bin := filepath.Join(dir, v.name)
		out, err := exec.Command(cc, "-O2", "-pthread", v.def, "-o", bin, filepath.Join(dir, "driver.c"), filepath.Join(dir, "loomrt.c"), v.lib).CombinedOutput()
		if err != nil {
			b.Logf("%s: cannot build: %v\n%s", v.name, err, out)
			continue
		}
		b.Run(v.name, func(b *testing.B) {
			out, err := exec.Command(bin, strconv.Itoa(max(b.N, 1000))).Output()
			if err != nil {
				b.Fatal(err)
			}
			f := strings.Fields(string(out))
			empty, _ := strconv.ParseFloat(f[0], 64)
			busy, _ := strconv.ParseFloat(f[1], 64)
			b.ReportMetric(empty, "ns/empty-region")
			b.ReportMetric(busy, "ns/busy-region")
		})
	}
}
