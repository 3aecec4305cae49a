package autotune

import (
	"slices"

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
//   - A block under a block loop (moved under its consumer's) with no
//     thread loop: its innermost spatial loop is split the same way over
//     threads.
type AutoBind struct {
	ThreadCounts []int64
}

func (AutoBind) Name() string { return "auto-bind" }

func (a AutoBind) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	if t.GPU == nil {
		return errSkip
	}
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
		_, err := a.overThreads(s, bi.loops[last])
		return err
	}
	lead := 0
	for lead < len(bi.loops) && bi.roles[lead] == roleSpatial {
		lead++
	}
	if lead == 0 {
		return errSkip
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
	v, err := sampleAmong(s, counts)
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
	rows := slices.Clone(spatial[:lead-1])
	if lead == 1 || !constant || n < int64(t.GPU.WarpSize) {
		rows = append(rows, parts[0])
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

// overThreads splits l by a sampled thread count (at most its extent,
// when that is constant) and binds the inner part to threadIdx.x.
func (a AutoBind) overThreads(s *schedule.Schedule, l schedule.Loop) (schedule.Loop, error) {
	counts := a.ThreadCounts
	if ext, ok := s.Extent(l); ok {
		counts = fitting(a.ThreadCounts, ext)
	}
	v, err := sampleAmong(s, counts)
	if err != nil {
		return schedule.Loop{}, err
	}
	parts, err := s.SplitBy(l, []schedule.Value{{}, v})
	if err != nil {
		return schedule.Loop{}, err
	}
	return parts[1], s.Bind(parts[1], "threadIdx.x")
}
