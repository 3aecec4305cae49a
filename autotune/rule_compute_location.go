package autotune

import (
	"errors"

	"github.com/loom-go/loom/schedule"
)

// RandomComputeLocation moves a block that is not an output under a
// sampled loop of its consumer (or leaves it at the root). A block that
// MultiLevelTiling tiled stays with its tiles. Under Default it goes
// under its consumers' outermost loop.
type RandomComputeLocation struct{}

func (RandomComputeLocation) Name() string { return "random-compute-location" }

func (RandomComputeLocation) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || bi.output || bi.reads == 0 {
		return errSkip
	}
	if _, tiled := bi.blk.Annotations[tiledKey]; tiled {
		return errSkip
	}
	sample := s.SampleComputeLocation
	if t.decide {
		// Under the consumers' outermost loop (a row of a softmax's
		// producers computed with the row, while it is in cache), or at
		// the root where there is none.
		sample = func(b schedule.Block) (schedule.Loop, error) {
			l, err := s.SampleComputeLocationWith(b, 0)
			if errors.Is(err, schedule.ErrArgument) {
				return s.SampleComputeLocationWith(b, -1)
			}
			return l, err
		}
	}
	l, err := sample(b)
	if err != nil {
		if err := internal(err); err != nil {
			return err
		}
		return errSkip
	}
	// compute_at at the root keeps the block in place; it is recorded
	// all the same, so that a mutated decision moves the block on replay.
	return s.ComputeAt(b, l)
}
