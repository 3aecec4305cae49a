package autotune

import (
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// CrossThreadReduction schedules a reduction that multi-level tiling left
// alone (a row sum or max, no data reuse) for a GPU: it may go under its
// consumer's block loop (GPUComputeLocation's sampled choice), so that a
// block computes the rows its threads then use; otherwise its spatial
// loops are bound to blockIdx. Its reduce loops (fused when
// more than one) are split by a sampled thread count, the outer part bound
// to threadIdx.x: each thread folds a contiguous chunk, and the code
// generator combines the threads' partial results by warp shuffles. Under
// Default each thread folds at least 8 elements (32 to 512 threads; 256
// when the length is symbolic).
type CrossThreadReduction struct {
	ThreadCounts []int64
}

func (CrossThreadReduction) Name() string { return "cross-thread-reduction" }

func (c CrossThreadReduction) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	if t.GPU == nil {
		return errSkip
	}
	bi, err := info(s, b)
	if err != nil || !bi.hasReduce() || threadBound(s, bi) {
		return errSkip
	}
	if err := computeUnderConsumerBlock(s, t, b, bi); err != nil {
		return err
	}
	if bi, err = info(s, b); err != nil {
		return err
	}
	// The reduce loops must be the innermost ones, after the spatial
	// loops (a block's loops as written); those after the bound ones.
	first := slices.IndexFunc(bi.roles, func(r role) bool { return r == roleReduce })
	if first < 0 {
		return errSkip // no loop runs the reduction (its axes are of one element)
	}
	for _, r := range bi.roles[first:] {
		if r != roleReduce {
			return errSkip
		}
	}
	// Its reduce loops must run it alone: threads that split a loop the
	// fusion shares among several reductions (column sums of one input)
	// would combine only one block's values.
	if !aloneUnder(s, bi.loops[len(bi.loops)-1], bi.blk) {
		return errSkip
	}
	if !blockBound(s, bi) {
		spatial := bi.loops[:first]
		if len(spatial) == 0 {
			return errSkip // a reduction to one value: one block would do it all
		}
		if _, err := bindAxes(s, spatial, "blockIdx"); err != nil {
			return err
		}
		if bi, err = info(s, b); err != nil {
			return err
		}
		// bindAxes fuses the block loops beyond three.
		first = slices.IndexFunc(bi.roles, func(r role) bool { return r == roleReduce })
	}
	reduce, err := fuseAll(s, bi.loops[first:])
	if err != nil {
		return err
	}
	// The reduce loop's outer part has as many iterations as threads,
	// its inner part the rest (a predicated tail when they do not
	// divide it, a symbolic extent included).
	counts, want := c.ThreadCounts, int64(256)
	if n, ok := s.Extent(reduce); ok {
		counts, want = fitting(c.ThreadCounts, n), n/8
	}
	v, err := choose(s, t, counts, preferredCount(counts, want))
	if err != nil {
		return err
	}
	parts, err := s.SplitBy(reduce, []schedule.Value{v, {}})
	if err != nil {
		return err
	}
	return s.Bind(parts[0], "threadIdx.x")
}

// preferredCount returns the index in counts (ascending) of the largest
// at most want, or 0 when none is.
func preferredCount(counts []int64, want int64) int {
	best := 0
	for i, c := range counts {
		if c <= want {
			best = i
		}
	}
	return best
}

// fitting returns the thread counts no larger than n (the smallest if
// none is).
func fitting(counts []int64, n int64) []int64 {
	var out []int64
	for _, c := range counts {
		if c <= n {
			out = append(out, c)
		}
	}
	if len(out) == 0 && len(counts) > 0 {
		out = counts[:1]
	}
	return out
}

// blockBound reports whether one of the block's loops is bound to
// blockIdx; threadBound whether one is bound to threadIdx.
func blockBound(s *schedule.Schedule, bi *blockInfo) bool {
	return slices.ContainsFunc(bi.loops, func(l schedule.Loop) bool { return loopKind(s, l).IsGPUBlock() })
}

func threadBound(s *schedule.Schedule, bi *blockInfo) bool {
	return slices.ContainsFunc(bi.loops, func(l schedule.Loop) bool { return loopKind(s, l).IsGPUThread() })
}

// aloneUnder reports whether blk is the whole body of loop l.
func aloneUnder(s *schedule.Schedule, l schedule.Loop, blk *ast.ScheduleBlock) bool {
	lp := loopNode(s, l)
	if lp == nil {
		return false
	}
	b, ok := soleStmt(lp).(*ast.ScheduleBlock)
	return ok && b.Name == blk.Name
}
