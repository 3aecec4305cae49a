package schedgen

import (
	"math/rand/v2"

	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// Corpus is the standard computations at sizes the interpreter runs
// quickly, as workload cases (with their Go references): the functions
// other packages' property tests schedule with Step. The adversarial
// corpus is Load's files and Workloads.
func Corpus() []workload.Case {
	return []workload.Case{
		workload.Matmul(12, 10, 8),
		workload.MatmulBiasReLU(8, 12, 10),
		workload.Conv2D(1, 2, 5, 5, 3),
		workload.Softmax(4, 24),
		workload.RMSNorm(3, 32),
		workload.LayerNorm(3, 32),
		workload.Chain(1, 2, 1024),
	}
}

// Step applies one op to s, chosen by a uniform generator (Uniform) with
// r's randomness (never a transform_layout, whose draws would need a
// stream of their own), and returns its description and the primitive's
// error.
// It calls snap just before the primitive (after the getters, and again
// after a sampling step). Run is the full runner; Step serves tests that
// only need random schedules.
func Step(r *rand.Rand, s *schedule.Schedule, snap func()) (string, error) {
	g := &Gen{r: r, mode: Uniform}
	op := g.Next(s.Func())
	if op.Prim == "" {
		return "none", nil
	}
	resolved, err := op.Apply(s, snap)
	return resolved.String(), err
}
