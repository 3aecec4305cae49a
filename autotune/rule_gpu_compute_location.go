package autotune

import (
	"errors"
	"slices"

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
	return computeUnderConsumerBlock(s, t, b, bi)
}

// computeUnderConsumerBlock samples whether b goes under the innermost
// block-bound loop of its first consumer, and moves it there. Under
// Default it goes there only when no block recomputes another's part: each
// of the consumer's block loops indexes what the consumer reads of b (a
// row max under a block of rows goes; a column sum under the same block
// loop would be summed again by every block, and stays at the root). A
// move compute_at refuses leaves b at the root.
func computeUnderConsumerBlock(s *schedule.Schedule, t Target, b schedule.Block, bi *blockInfo) error {
	if bi.output || bi.reads == 0 || blockBound(s, bi) {
		return nil
	}
	at, consumer, ok := consumerBlockLoop(s, bi)
	if !ok {
		return nil
	}
	preferred := 0
	if partitions(s, consumer, bi.blk) &&
		!(bi.hasReduce() && indexedBy(s, consumer, bi.blk, func(k ast.ForKind) bool { return k.IsGPUThread() })) {
		// (A reduction whose consumer's threads read different results
		// of it would run, under the block loop, one block-wide
		// reduction after the other: a triangle's 256 rows in turn.)
		preferred = 1
	}
	v, err := choose(s, t, []int64{0, 1}, preferred)
	if err != nil || v.Int() == 0 {
		return err
	}
	var se *schedule.Error
	if err := s.ComputeAt(b, at); err != nil && !errors.As(err, &se) {
		return err
	}
	return nil
}

// partitions reports whether every block-bound loop of consumer indexes
// what it reads of producer's outputs: blocks then read disjoint parts
// (along those loops), and computing the producer per block repeats no
// work of another block.
func partitions(s *schedule.Schedule, consumer *ast.ScheduleBlock, producer *ast.ScheduleBlock) bool {
	return everyIndexes(s, consumer, producer, func(k ast.ForKind) bool { return k.IsGPUBlock() }, true)
}

// indexedBy reports whether some loop of consumer of a kind that bound
// accepts indexes what it reads of producer's outputs.
func indexedBy(s *schedule.Schedule, consumer *ast.ScheduleBlock, producer *ast.ScheduleBlock, bound func(ast.ForKind) bool) bool {
	return everyIndexes(s, consumer, producer, bound, false)
}

// everyIndexes reports whether every (all) or some (!all) loop of
// consumer of a kind that bound accepts indexes what consumer reads of
// producer's outputs; with all and no such loop, true.
func everyIndexes(s *schedule.Schedule, consumer *ast.ScheduleBlock, producer *ast.ScheduleBlock, bound func(ast.ForKind) bool, all bool) bool {
	h, err := s.GetBlock(consumer.Name)
	if err != nil {
		return false
	}
	loops, err := s.GetLoops(h)
	if err != nil {
		return false
	}
	for _, l := range loops {
		if !bound(loopKind(s, l)) {
			continue
		}
		indexed := false
		for _, r := range consumer.Reads {
			if !slices.ContainsFunc(producer.Writes, func(w ast.Region) bool { return w.Buffer.Name == r.Buffer.Name }) {
				continue
			}
			for _, it := range consumer.Iters {
				if !ast.Mentions(it.Binding, l.Name()) {
					continue
				}
				for _, rg := range r.Ranges {
					if ast.Mentions(rg.Min, it.Var.Name) {
						indexed = true
					}
				}
			}
		}
		if all && !indexed {
			return false
		}
		if !all && indexed {
			return true
		}
	}
	return all
}

// consumerBlockLoop returns the innermost block-bound loop of the first
// block that reads what bi writes, and that block.
func consumerBlockLoop(s *schedule.Schedule, bi *blockInfo) (schedule.Loop, *ast.ScheduleBlock, bool) {
	for _, x := range s.Func().Blocks() {
		if x == bi.blk || !readsAny(x, bi.blk) {
			continue
		}
		h, err := s.GetBlock(x.Name)
		if err != nil {
			return schedule.Loop{}, nil, false
		}
		ls, err := s.GetLoops(h)
		if err != nil {
			return schedule.Loop{}, nil, false
		}
		for i := len(ls) - 1; i >= 0; i-- {
			if loopKind(s, ls[i]).IsGPUBlock() {
				return ls[i], x, true
			}
		}
		return schedule.Loop{}, nil, false
	}
	return schedule.Loop{}, nil, false
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
