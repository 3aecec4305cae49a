package hand

import "github.com/loom-go/loom/schedule"

// RowTile schedules the matrix multiply's block C (workload.Matmul) the
// way a register tile's code runs, without the caches' tiles: i split
// into rows-high tiles (the part inside a tile unrolled when unroll is
// set), the reduction k between the two parts, the columns j innermost
// and vectorized. It returns the loop over the tiles and k, for the
// annotations a test puts on them (a prefetch distance on k, parallel
// tiles).
func RowTile(s *schedule.Schedule, rows int, unroll bool) (tiles, k schedule.Loop, err error) {
	h := &sched{s: s}
	loops := h.loops(h.block("C")) // i, j, k
	if h.err != nil {
		return schedule.Loop{}, schedule.Loop{}, h.err
	}
	is := h.split(loops[0], -1, rows)
	h.do(func() error { return s.Reorder(is[0], loops[2], is[1], loops[1]) })
	h.do(func() error { return s.Vectorize(loops[1]) })
	if unroll {
		h.do(func() error { return s.Unroll(is[1]) })
	}
	if h.err != nil {
		return schedule.Loop{}, schedule.Loop{}, h.err
	}
	return is[0], loops[2], nil
}
