package autotune

import (
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/workload"
)

// TestGPUSpaceLowers samples the GPU space of each workload and lowers
// every sample to CUDA C: a sample the rules keep must make a kernel (the
// few a rule drops, for too many threads or too much shared memory, are
// counted apart). conv2d is not in the corpus yet: its batch axis of one
// is a constant index, which reverse_compute_at refuses for the local
// write cache.
func TestGPUSpaceLowers(t *testing.T) {
	seeds := uint64(8)
	if testing.Short() {
		seeds = 4
	}
	sp := &Space{Rules: GPURules(), Target: CUDATarget()}
	for _, c := range []workload.Case{
		workload.Matmul(128, 128, 128),
		workload.MatmulBiasReLU(128, 128, 128),
		workload.Softmax(64, 256),
		workload.RMSNorm(64, 256),
		workload.Chain(4, 8, 256),
	} {
		lowered, dropped := 0, 0
		for seed := uint64(1); seed <= seeds; seed++ {
			s, err := sp.Sample(c.Func, seed)
			if err != nil {
				dropped++
				continue
			}
			f := Finish(s)
			if _, err := cuda.Lower(f, cuda.Options{}); err != nil {
				t.Errorf("%s seed %d: %v\n%s\n%s", c.Name, seed, err, s.Trace(), ast.Print(f))
				continue
			}
			lowered++
		}
		t.Logf("%s: %d of %d samples lower, %d dropped", c.Name, lowered, seeds, dropped)
		if lowered < int(seeds)/2 {
			t.Errorf("%s: only %d of %d samples lower", c.Name, lowered, seeds)
		}
	}
}
