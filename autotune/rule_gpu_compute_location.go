package autotune

import (
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// GPUComputeLocation moves a producer that stays (not inlined, not an
// output) under its consumer's innermost block loop, or leaves it at the
// root, its own kernel: a sampled choice. Under the block loop a block
// computes what its threads then read, in its shared or global memory,
// with no launch in between.
type GPUComputeLocation struct{}

func (GPUComputeLocation) Name() string { return "gpu-compute-location" }

func (GPUComputeLocation) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	if t.GPU == nil {
		return errSkip
	}
	bi, err := info(s, b)
	if err != nil || bi.hasReduce() || threadBound(s, bi) {
		return errSkip
	}
	return computeUnderConsumerBlock(s, b, bi)
}

// computeUnderConsumerBlock samples whether b goes under the innermost
// block-bound loop of its first consumer, and moves it there.
func computeUnderConsumerBlock(s *schedule.Schedule, b schedule.Block, bi *blockInfo) error {
	if bi.output || bi.reads == 0 || blockBound(s, bi) {
		return nil
	}
	at, ok := consumerBlockLoop(s, bi)
	if !ok {
		return nil
	}
	v, err := sampleAmong(s, []int64{0, 1})
	if err != nil || v.Int() == 0 {
		return err
	}
	return s.ComputeAt(b, at)
}

// consumerBlockLoop returns the innermost block-bound loop of the first
// block that reads what bi writes.
func consumerBlockLoop(s *schedule.Schedule, bi *blockInfo) (schedule.Loop, bool) {
	for _, x := range s.Func().Blocks() {
		if x == bi.blk || !readsAny(x, bi.blk) {
			continue
		}
		h, err := s.GetBlock(x.Name)
		if err != nil {
			return schedule.Loop{}, false
		}
		ls, err := s.GetLoops(h)
		if err != nil {
			return schedule.Loop{}, false
		}
		for i := len(ls) - 1; i >= 0; i-- {
			if loopKind(s, ls[i]).IsGPUBlock() {
				return ls[i], true
			}
		}
		return schedule.Loop{}, false
	}
	return schedule.Loop{}, false
}

// readsAny reports whether x reads a buffer w writes.
func readsAny(x, w *ast.ScheduleBlock) bool {
	for _, r := range x.Reads {
		for _, wr := range w.Writes {
			if r.Buffer.Name == wr.Buffer.Name {
				return true
			}
		}
	}
	return false
}
