package autotune

import (
	"github.com/loom-go/loom/schedule"
)

// VectorRFactor vectorizes a reduction along its innermost loop (a row
// of rmsnorm, softmax or a sum): the loop is split by a sampled number of
// partial results, a whole number of vectors up to MaxVectors, and that
// inner part is factored out with rfactor, so that the partial results
// are vector lanes reduced by independent chains of adds; the partial
// results are summed at the end. The inits of both steps are moved
// before their reduction loops (so that the partial results stay in
// registers). It applies to reductions without reuse (those are
// MultiLevelTiling's) whose innermost loop is a reduce loop longer than a
// vector. A chunk that divides a constant extent is preferred; one that
// does not (or any chunk, for a symbolic extent: a row of N elements)
// leaves a tail, which rfactor handles with a separate init of the
// partial results and the vector loop handles with a mask.
type VectorRFactor struct {
	MaxVectors int
}

func (VectorRFactor) Name() string { return "vector-rfactor" }

func (r VectorRFactor) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || !bi.hasReduce() || reuses(bi) || len(bi.loops) == 0 || t.VectorLanes < 2 {
		return errSkip
	}
	last := bi.loops[len(bi.loops)-1]
	if bi.roles[len(bi.loops)-1] != roleReduce {
		return errSkip
	}
	last = fuseForWholeVectors(s, bi, t, last)
	n, known := s.Extent(last)
	var dividing, all []int64
	for v := 1; v <= max(r.MaxVectors, 1); v *= 2 {
		c := int64(v * t.VectorLanes)
		if known && c >= n {
			break
		}
		all = append(all, c)
		if known && n%c == 0 {
			dividing = append(dividing, c)
		}
	}
	chunks := all
	if len(dividing) > 0 {
		chunks = dividing // no tail: no mask, no separate init
	}
	if len(chunks) == 0 {
		return errSkip
	}
	chunk, err := choose(s, t, chunks, 1) // Default: two vectors where the row has them
	if err != nil {
		return err
	}
	parts, err := s.SplitBy(last, []schedule.Value{{}, chunk})
	if err != nil {
		return err
	}
	rf, err := s.RFactor(parts[1])
	if err != nil {
		return err
	}
	rfLoops, err := s.GetLoops(rf)
	if err != nil {
		return err
	}
	// With a tail, rfactor already made the partial results' init a block
	// of its own, before the reduction.
	init, err := s.GetBlock(rf.Name() + "_init")
	if err != nil {
		if init, err = s.DecomposeReduction(rf, rfLoops[len(rfLoops)-2]); err != nil {
			return err
		}
	}
	if err := s.Vectorize(rfLoops[len(rfLoops)-1]); err != nil {
		return err
	}
	if err := vectorizeInnermost(s, init); err != nil {
		return err
	}
	// The write-back sums the partial results: its init goes before
	// that sum.
	wb, err := s.GetLoops(b)
	if err != nil {
		return err
	}
	_, err = s.DecomposeReduction(b, wb[len(wb)-1])
	return err
}

// fuseForWholeVectors returns the innermost loop of the reduction to
// vectorize: last, or last fused with the reduce loop around it where
// last's constant extent is no multiple of a vector and the fused one is
// (a mean over a 28x28 image in NCHW: 784 elements in whole vectors
// where each row of 28 would leave a masked tail, whose masked store of
// the partial results the next step's load cannot forward from). The
// fused loop reads the row-major buffer as contiguously as the two did:
// the index's floordiv and floormod by the row's length recombine.
func fuseForWholeVectors(s *schedule.Schedule, bi *blockInfo, t Target, last schedule.Loop) schedule.Loop {
	k := len(bi.loops) - 1
	n, ok := s.Extent(last)
	lanes := int64(t.VectorLanes)
	if k == 0 || !ok || n%lanes == 0 || bi.roles[k-1] != roleReduce {
		return last
	}
	if m, ok := s.Extent(bi.loops[k-1]); !ok || m*n%lanes != 0 {
		return last
	}
	fused, err := s.Fuse(bi.loops[k-1], last)
	if err != nil {
		return last // not perfectly nested
	}
	return fused
}

// vectorizeInnermost vectorizes the innermost loop of b, if it has one.
func vectorizeInnermost(s *schedule.Schedule, b schedule.Block) error {
	ls, err := s.GetLoops(b)
	if err != nil || len(ls) == 0 {
		return err
	}
	return s.Vectorize(ls[len(ls)-1])
}
