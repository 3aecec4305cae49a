package autotune

import (
	"github.com/loom-go/loom/schedule"
)

// DecomposeReduction moves the init of a reduction block before its
// outermost reduce loop (MetaSchedule's RewriteReductionBlock): otherwise
// the init runs under a condition inside the reduction's loops, and the
// accumulators of a register tile cannot stay in registers. The init's
// innermost loop is vectorized when it is spatial. It is the last rule,
// applied after the block found its loops and its place.
type DecomposeReduction struct{}

func (DecomposeReduction) Name() string { return "decompose-reduction" }

func (DecomposeReduction) Apply(s *schedule.Schedule, b schedule.Block, _ Target) error {
	bi, err := info(s, b)
	if err != nil || bi.blk.Init == nil {
		return errSkip
	}
	for i, l := range bi.loops {
		if bi.roles[i] != roleReduce {
			continue
		}
		init, err := s.DecomposeReduction(b, l)
		if err != nil {
			return err
		}
		ls, err := s.GetLoops(init)
		if err != nil {
			return err
		}
		// The init's loops beyond the i loops above l are its own; the
		// innermost of them is vectorized (refused when not legal).
		if len(ls) > i {
			return internal(s.Vectorize(ls[len(ls)-1]))
		}
		return nil
	}
	return errSkip
}
