package autotune

import (
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// fuseRows fuses a block's two innermost spatial loops into one before it
// is tiled, where the block reads and writes them as one contiguous run
// and the fused loop fills vectors better. A 1x1 convolution over a 7x7
// image is the case in point: vectorized along its rows, seven of
// sixteen lanes work; along the 49 pixels of the image, which every
// buffer holds in a row, 49 of 64 do. The code generator sees the fused
// indices (floordiv(f, 7), floormod(f, 7)) as the one offset f again.
//
// It returns the block's new info when it fused, else bi.
func fuseRows(s *schedule.Schedule, b schedule.Block, bi *blockInfo, t Target, maxInner int) (*blockInfo, error) {
	v := lastSpatial(bi)
	if v < 1 || bi.roles[v-1] != roleSpatial || t.VectorLanes < 2 {
		return bi, nil
	}
	outer, inner := bi.loops[v-1], bi.loops[v]
	itK, itL := iterOf(bi, outer), iterOf(bi, inner)
	if itK == nil || itL == nil || !isVar(itK.Binding, outer.Name()) || !isVar(itL.Binding, inner.Name()) {
		return bi, nil
	}
	k, okK := s.Extent(outer)
	l, okL := s.Extent(inner)
	if !okK || !okL || !contiguousRows(bi.blk, itK.Var, itL.Var, l) {
		return bi, nil
	}
	lanes := int64(t.VectorLanes)
	if vectorFill(k*l, lanes, maxInner) < vectorFill(l, lanes, maxInner)+0.1 {
		return bi, nil
	}
	if _, err := s.Fuse(outer, inner); err != nil {
		return bi, err
	}
	return info(s, b)
}

// isVar reports whether e is the variable named name.
func isVar(e ast.Expr, name string) bool {
	x, ok := e.(*ast.Var)
	return ok && x.Name == name
}

// contiguousRows reports whether every access of blk indexes the
// variables k and l, if at all, as two neighbouring dimensions (k, then
// l, each alone) whose inner one holds exactly rows of l elements: then
// k*L + l walks the buffer's elements in order.
func contiguousRows(blk *ast.ScheduleBlock, k, l *ast.Var, rowLen int64) bool {
	for _, rs := range [][]ast.Region{blk.Reads, blk.Writes} {
		for _, r := range rs {
			at := -1
			for d, rg := range r.Ranges {
				mk, ml := ast.Mentions(rg.Min, k.Name), ast.Mentions(rg.Min, l.Name)
				switch {
				case !mk && !ml:
					continue
				case mk && isVar(rg.Min, k.Name) && at < 0:
					at = d
				case ml && isVar(rg.Min, l.Name) && at >= 0 && d == at+1:
				default:
					return false
				}
				if n, ok := ast.ConstIntValue(ast.Simplify(rg.Extent)); !ok || n != 1 {
					return false
				}
			}
			if at < 0 {
				continue
			}
			if at+1 >= len(r.Ranges) || !isVar(r.Ranges[at+1].Min, l.Name) {
				return false
			}
			n, ok := ast.ConstIntValue(ast.Simplify(r.Buffer.Shape[at+1]))
			if !ok || n != rowLen {
				return false
			}
		}
	}
	return true
}

// vectorFill is the share of vector lanes that do work when a loop of n
// iterations is vectorized as splitVector splits it: its best inner
// factor among the divisors of n from half a vector up to maxInner, or
// n's own best perfect factor under maxInner where it has none.
func vectorFill(n, lanes int64, maxInner int) float64 {
	fill := func(d int64) float64 { return float64(d) / float64((d+lanes-1)/lanes*lanes) }
	best, found := 0.0, false
	for d := max(lanes/2, 2); d <= n && (maxInner <= 0 || d <= int64(maxInner)); d++ {
		if n%d == 0 {
			best, found = max(best, fill(d)), true
		}
	}
	if found {
		return best
	}
	for d := min(n, int64(max(maxInner, 1))); d >= 1; d-- {
		if n%d == 0 {
			return fill(d)
		}
	}
	return fill(1)
}
