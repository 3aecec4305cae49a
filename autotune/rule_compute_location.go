package autotune

import (
	"github.com/loom-go/loom/schedule"
)

// RandomComputeLocation moves a block that is not an output under a
// sampled loop of its consumer (or leaves it at the root). A block that
// MultiLevelTiling tiled stays with its tiles.
type RandomComputeLocation struct{}

func (RandomComputeLocation) Name() string { return "random-compute-location" }

func (RandomComputeLocation) Apply(s *schedule.Schedule, b schedule.Block, _ Target) error {
	bi, err := info(s, b)
	if err != nil || bi.output || bi.reads == 0 {
		return errSkip
	}
	if _, tiled := bi.blk.Annotations[tiledKey]; tiled {
		return errSkip
	}
	l, err := s.SampleComputeLocation(b)
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
