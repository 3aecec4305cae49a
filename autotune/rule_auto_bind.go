package autotune

import (
	"errors"

	"github.com/loom-go/loom/schedule"
)

// AutoBind binds what the other GPU rules left on serial loops
// (MetaSchedule's AutoBind): every kernel needs block loops, and its work
// thread loops.
//
//   - A block at the root: its leading spatial loops run over blocks and
//     threads. The innermost is split by a sampled thread count, the inner
//     part bound to threadIdx.x (neighbouring threads touch neighbouring
//     elements). When there are several loops and the innermost has at
//     least a warp's worth of iterations, the others are bound to
//     blockIdx (x the innermost, then y, then z), so a block covers whole
//     rows and its threads loop over them; otherwise the innermost's outer
//     part is a block loop too. Loops of constant extents whose innermost
//     is shorter than a warp are fused first. (Fusing loops of symbolic
//     extents would index by a floor division by a symbol, which the
//     polyhedral model cannot follow.)
//   - A block whose outer loops it shares with other blocks (a row loop
//     the fusion lowering shares among a row's blocks, as in softmax):
//     only the perfect nest above the shared body can be block loops;
//     they are bound to blockIdx, and the block's innermost spatial loop
//     is split over threads.
//   - A block under a block loop (moved under its consumer's, or bound by
//     a block sharing it) with no thread loop: its innermost spatial loop
//     is split the same way over threads.
//
// A block none of whose loops may be bound (a nest whose every loop
// carries a dependence) runs in one thread of one block: its outermost
// loop is split by 1 and the outer part of one iteration bound to
// blockIdx.x.
//
// Under Default a block has 256 threads (8 warps), or as many as the loop
// has iterations when it has fewer.
type AutoBind struct {
	ThreadCounts []int64
}

func (AutoBind) Name() string { return "auto-bind" }

func (a AutoBind) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	if t.GPU == nil {
		return errSkip
	}
	err := a.apply(s, b, t)
	var se *schedule.Error
	if err != nil && !errors.Is(err, errSkip) && !errors.As(err, &se) {
		return err
	}
	// A nest with no loop that may run in parallel (an in-place update
	// carried by every loop) still runs, as one thread of one block.
	if bi, ierr := info(s, b); ierr == nil && !blockBound(s, bi) && len(bi.loops) > 0 {
		one, serr := s.Split(bi.loops[0], 1, -1)
		if serr != nil {
			return serr
		}
		return s.Bind(one[0], "blockIdx.x")
	}
	return err
}

func (a AutoBind) apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || threadBound(s, bi) {
		return errSkip
	}
	if blockBound(s, bi) {
		// Its innermost spatial loop that is not a block loop goes over
		// the threads.
		last := -1
		for i := len(bi.loops) - 1; i >= 0; i-- {
			if bi.roles[i] == roleSpatial && !loopKind(s, bi.loops[i]).IsGPUBlock() {
				last = i
				break
			}
		}
		if last < 0 {
			return errSkip
		}
		_, err := a.overThreads(s, t, bi.loops[last])
		return err
	}
	lead := 0
	for lead < len(bi.loops) && bi.roles[lead] == roleSpatial {
		lead++
	}
	if lead == 0 {
		return errSkip
	}
	if p := perfectNest(s, bi.loops); p < lead {
		// The loops from p on run other blocks' statements too (a row
		// loop the fusion shares): the perfect nest above them runs
		// over blocks, this block's innermost spatial loop over threads.
		if _, err := bindAxes(s, bi.loops[:p], "blockIdx"); err != nil {
			return err
		}
		_, err := a.overThreads(s, t, bi.loops[lead-1])
		return err
	}
	spatial := bi.loops[:lead]
	inner := spatial[lead-1]
	n, constant := s.Extent(inner)
	if constant && n < int64(t.GPU.WarpSize) && lead > 1 && allConstant(s, spatial) {
		// Too few for a block's threads: fused with the loops above
		// (of constant extents, so the fused index stays affine).
		fused, err := s.Fuse(spatial...)
		if err != nil {
			return err
		}
		spatial, inner, lead = []schedule.Loop{fused}, fused, 1
	}
	counts := a.ThreadCounts
	if constant {
		counts = fitting(counts, max(n, int64(t.GPU.WarpSize)))
	}
	innerDepends := dependsOnOthers(s, inner, bi.loops)
	v, err := choose(s, t, counts, preferredCount(counts, 256)) // Default: 256 threads, 8 warps
	if err != nil {
		return err
	}
	parts, err := s.SplitBy(inner, []schedule.Value{{}, v})
	if err != nil {
		return err
	}
	if err := s.Bind(parts[1], "threadIdx.x"); err != nil {
		return err
	}
	// A block covers whole rows when the innermost loop fills a block;
	// otherwise its outer part is a block loop too.
	// A grid is a box: the block loops stop at the first loop whose
	// bounds depend on another (a triangle's inner loop, and the outer
	// part of its split), which stays serial in the block.
	var rows []schedule.Loop
	for _, l := range spatial[:lead-1] {
		if dependsOnOthers(s, l, bi.loops) {
			break
		}
		rows = append(rows, l)
	}
	if len(rows) == lead-1 && (lead == 1 || !constant || n < int64(t.GPU.WarpSize)) && !innerDepends {
		rows = append(rows, parts[0])
	}
	if len(rows) == 0 {
		return errSkip // bound as one block by Apply
	}
	_, err = bindAxes(s, rows, "blockIdx")
	return err
}

// allConstant reports whether every loop has a constant extent.
func allConstant(s *schedule.Schedule, loops []schedule.Loop) bool {
	for _, l := range loops {
		if _, ok := s.Extent(l); !ok {
			return false
		}
	}
	return true
}

// overThreads splits l by a sampled thread count (under Default 256, or
// the most below) (at most its extent,
// when that is constant) and binds the inner part to threadIdx.x.
func (a AutoBind) overThreads(s *schedule.Schedule, t Target, l schedule.Loop) (schedule.Loop, error) {
	counts := a.ThreadCounts
	if ext, ok := s.Extent(l); ok {
		counts = fitting(a.ThreadCounts, ext)
	}
	v, err := choose(s, t, counts, preferredCount(counts, 256))
	if err != nil {
		return schedule.Loop{}, err
	}
	parts, err := s.SplitBy(l, []schedule.Value{{}, v})
	if err != nil {
		return schedule.Loop{}, err
	}
	return parts[1], s.Bind(parts[1], "threadIdx.x")
}
