package native

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/hand"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// gemmModule lowers the benchmark's hand-scheduled 1024^3 gemm.
func gemmModule(b testing.TB) *llvm.Module {
	c := workload.Matmul(1024, 1024, 1024)
	s, err := schedule.New(c.Func)
	if err != nil {
		b.Fatal(err)
	}
	if err := hand.Gemm(s, hand.Config{Threads: 1, VectorBits: llvm.Host().VectorBits()}); err != nil {
		b.Fatal(err)
	}
	m, err := llvm.Lower(s.Func(), llvm.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// reportMedian adds the median of the samples as a metric.
func reportMedian(b *testing.B, samples []time.Duration) {
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1e3, "median-ms")
}

// BenchmarkBuild times a cold build of the gemm kernel, IR to loaded
// function: opt and llc (piped), or LLVM in process with -tags loomcapi;
// the linker; dlopen.
//
//	go test [-tags loomcapi] ./codegen/llvm/native -run '^$' -bench Build -benchtime 20x
func BenchmarkBuild(b *testing.B) {
	m := gemmModule(b)
	c, err := DefaultCache()
	if err != nil {
		b.Fatal(err)
	}
	var samples []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		k, err := c.Build(m)
		if err != nil {
			b.Fatal(err)
		}
		samples = append(samples, time.Since(start))
		if k.Stats.Cached {
			b.Fatal("the kernel was in the cache")
		}
		os.Remove(k.Path) // cold again for the next build
	}
	reportMedian(b, samples)
}
