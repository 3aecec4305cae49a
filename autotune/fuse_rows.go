package autotune

import (
	"math/bits"
	"slices"

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

// vectorFill is the share of vector instructions' lanes that do work
// when a loop of n iterations is vectorized as splitVector splits it, by
// its best inner factor (vectorFactors); where it has none, by n's best
// perfect factor under maxInner.
func vectorFill(n, lanes int64, maxInner int) float64 {
	best := 0.0
	for _, d := range vectorFactors(n, lanes, maxInner) {
		best = max(best, fillOf(n, d, lanes))
	}
	if best > 0 {
		return best
	}
	for d := min(n, int64(max(maxInner, 1))); d >= 1; d-- {
		if n%d == 0 {
			return fillOf(n, d, lanes)
		}
	}
	return fillOf(n, 1, lanes)
}

// vectorFactors returns the inner factors, ascending, that splitVector
// offers a vectorized loop of constant extent n: its divisors from half
// a vector up to maxInner (0: any), only the whole vectors among them
// where there are some; where there are none, also one to four whole
// vectors with a tail (the split guards the last tile, which the code
// generator partitions off): 50257 columns are better run in tiles of 32
// and a last one of 17 than in tiles of 29, each of which takes four
// vector instructions (16 + 8 + 4 + 1).
func vectorFactors(n, lanes int64, maxInner int) []int64 {
	var inner, whole []int64
	fits := func(d int64) bool { return d <= n && (maxInner <= 0 || d <= int64(maxInner)) }
	for d := max(lanes/2, 2); fits(d); d++ {
		if n%d == 0 {
			inner = append(inner, d)
			if lanes > 0 && d%lanes == 0 {
				whole = append(whole, d)
			}
		}
	}
	if len(whole) > 0 {
		return whole
	}
	return withTails(inner, n, lanes, maxInner)
}

// withTails adds to inner (innermost factors of a vectorized loop of n
// iterations) one to four whole vectors, those the loop and maxInner
// allow, whether or not they divide n (the split guards the tail), and
// returns them ascending.
func withTails(inner []int64, n, lanes int64, maxInner int) []int64 {
	for k := int64(1); k <= 4 && lanes > 1 && k*lanes <= n && (maxInner <= 0 || k*lanes <= int64(maxInner)); k++ {
		if !slices.Contains(inner, k*lanes) {
			inner = append(inner, k*lanes)
		}
	}
	slices.Sort(inner)
	return inner
}

// vectorChunks is the number of vector instructions a run of d lanes of a
// vectorized loop takes: whole vectors, then the rest in narrower
// vectors of powers of two, the last odd lane alone (as codegen/llvm
// emits it: 14 lanes of 16 are 8 + 4 + 2, three registers).
func vectorChunks(d, lanes int64) int64 {
	if lanes < 1 {
		return d
	}
	return d/lanes + int64(bits.OnesCount64(uint64(d%lanes)))
}

// fillOf is the share of lanes that do work when a loop of n iterations
// is vectorized in tiles of d, the last one n mod d.
func fillOf(n, d, lanes int64) float64 {
	chunks := n/d*vectorChunks(d, lanes) + vectorChunks(n%d, lanes)
	return float64(n) / float64(chunks*max(lanes, 1))
}
