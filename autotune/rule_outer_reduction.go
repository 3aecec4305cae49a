package autotune

import (
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// OuterReduction vectorizes a reduction over outer axes (a column sum,
// a mean over a batch: the reduced index is not the contiguous one)
// across the axis it keeps: the innermost spatial loop, the one that
// indexes the contiguous dimension of what the block reads, is split by
// a sampled whole number of vectors up to MaxVectors, and that inner part
// goes innermost, under the reduce loops. Each step of the reduction then
// adds a contiguous vector of inputs to a vector of accumulators, with
// no partial results to combine (VectorRFactor's way, for a row), and
// ParallelVectorizeUnroll, applied after, vectorizes it and parallelizes
// the outer part of the kept axis. A kept axis narrower than a vector
// goes innermost whole; one that no whole number of vectors divides is
// split by one vector, its tail guarded.
type OuterReduction struct {
	MaxVectors int
}

func (OuterReduction) Name() string { return "outer-reduction" }

func (r OuterReduction) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || !bi.hasReduce() || reuses(bi) || len(bi.loops) < 2 || t.VectorLanes < 2 || t.GPU != nil {
		return errSkip
	}
	last := len(bi.loops) - 1
	if bi.roles[last] != roleReduce {
		return errSkip
	}
	sp := -1
	for i := last; i >= 0; i-- {
		if bi.roles[i] == roleSpatial {
			sp = i
			break
		}
	}
	if sp < 0 || !indexesContiguous(bi, bi.loops[sp]) {
		return errSkip
	}
	n, ok := s.Extent(bi.loops[sp])
	if !ok {
		return errSkip
	}
	var chunks []int64
	for v := 1; v <= max(r.MaxVectors, 1); v *= 2 {
		if c := int64(v * t.VectorLanes); n%c == 0 {
			chunks = append(chunks, c)
		}
	}
	if len(chunks) == 0 && n > int64(t.VectorLanes) {
		// No whole number of vectors divides the kept axis (24
		// columns): vectors of it, the last one's tail guarded.
		chunks = []int64{int64(t.VectorLanes)}
	}
	if len(chunks) == 0 {
		if n < 2 {
			return errSkip
		}
		// A kept axis narrower than a vector (six columns): the whole
		// of it innermost, one partial vector of accumulators.
		order := append([]schedule.Loop{}, bi.loops[sp+1:]...)
		return internal(s.Reorder(append(order, bi.loops[sp])...))
	}
	preferred := 1 // Default: two vectors where the row has them
	if share, ok := l1Share(n, r.MaxVectors, t); ok {
		chunks = append(chunks, share)
		preferred = len(chunks) - 1
	}
	chunk, err := choose(s, t, chunks, preferred)
	if err != nil {
		return err
	}
	parts, err := s.SplitBy(bi.loops[sp], []schedule.Value{{}, chunk})
	if err != nil {
		return internal(err)
	}
	// Only the loops from the kept axis in move: the ones above it keep
	// their places, and may hold other statements (a consumer's loop
	// beside the reduction's, in a fused kernel).
	order := append([]schedule.Loop{parts[0]}, bi.loops[sp+1:]...)
	return internal(s.Reorder(append(order, parts[1])...))
}

// l1Share returns the part of a kept axis of n elements each thread
// takes whole, accumulators and all, when that is more than maxVectors
// vectors and its accumulators fill at most half the L1D: every step of
// the reduction then reads a long contiguous run of the input (a row of
// an NHWC image, of a matrix) and adds it to accumulators that stay in
// the L1D, where a few vectors of accumulators in registers read the
// input a few lines at a time down a column, across as many pages as
// the reduction has steps, which the hardware prefetchers do not follow.
// Measured (one thread, Zen 5, default schedules): ResNet-50's global
// average pool, 2048 channels over 7x7 pixels, 0.0082 -> 0.0030 ms
// (oneDNN 0.0030-0.0037); a column sum of a 4096 x 4096 matrix 7.5 ->
// 1.9-3.2 ms. ok is false where the threads do not share the axis in
// whole vectors, or its accumulators would not fit.
func l1Share(n int64, maxVectors int, t Target) (share int64, ok bool) {
	lanes, threads := int64(t.VectorLanes), int64(max(t.Threads, 1))
	if n%(threads*lanes) != 0 {
		return 0, false
	}
	share = n / threads
	return share, share > int64(max(maxVectors, 1))*lanes && share*4 <= t.Caches.orDefault().L1D/2
}

// indexesContiguous reports whether loop l indexes, through a spatial
// iteration variable, the last (contiguous) dimension of every buffer the
// block reads besides its own output.
func indexesContiguous(bi *blockInfo, l schedule.Loop) bool {
	iv := iterOf(bi, l)
	if iv == nil || iv.Kind != ast.Spatial {
		return false
	}
	found := false
	for _, r := range bi.blk.Reads {
		if isWritten(bi.blk, r.Buffer) || len(r.Ranges) == 0 {
			continue
		}
		if !ast.Mentions(r.Ranges[len(r.Ranges)-1].Min, iv.Var.Name) {
			return false
		}
		found = true
	}
	return found
}

func isWritten(b *ast.ScheduleBlock, buf *ast.Buffer) bool {
	for _, w := range b.Writes {
		if w.Buffer == buf {
			return true
		}
	}
	return false
}
