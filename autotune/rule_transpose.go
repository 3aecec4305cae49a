package autotune

import (
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// TransposeTiling tiles a block that moves data across axes (a
// transpose: what it reads contiguously it writes with a stride): the
// innermost loop and the loop that indexes the read's contiguous
// dimension are each split by a sampled tile and the tiles go innermost,
// so that a tile of rows is read and a tile of columns written while both
// are in cache. ParallelVectorizeUnroll, applied after, vectorizes the
// innermost loop and parallelizes the outer ones.
type TransposeTiling struct {
	MaxTile int
}

func (TransposeTiling) Name() string { return "transpose-tiling" }

func (r TransposeTiling) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || bi.hasReduce() || len(bi.loops) < 2 || t.GPU != nil {
		return errSkip
	}
	last := len(bi.loops) - 1
	inner := iterOf(bi, bi.loops[last])
	if bi.roles[last] != roleSpatial || inner == nil {
		return errSkip
	}
	// The read whose contiguous dimension another loop indexes, and
	// another the innermost loop: it walks that read with a stride. (A
	// read the innermost loop does not index at all, a row's scale or
	// sum, is the same element all along the row: nothing to tile.)
	other := -1
	for _, rd := range bi.blk.Reads {
		if len(rd.Ranges) == 0 || ast.Mentions(rd.Ranges[len(rd.Ranges)-1].Min, inner.Var.Name) {
			continue
		}
		if !slices.ContainsFunc(rd.Ranges, func(rg ast.Range) bool { return ast.Mentions(rg.Min, inner.Var.Name) }) {
			continue
		}
		for i := 0; i < last; i++ {
			if it := iterOf(bi, bi.loops[i]); it != nil && bi.roles[i] == roleSpatial && ast.Mentions(rd.Ranges[len(rd.Ranges)-1].Min, it.Var.Name) {
				other = i
			}
		}
	}
	if other < 0 {
		return errSkip
	}
	split := func(l schedule.Loop) ([]schedule.Loop, error) {
		vals, err := perfectTile(s, t, l, 2, r.MaxTile, tileBlock)
		if err != nil {
			return nil, err
		}
		return s.SplitBy(l, vals)
	}
	a, err := split(bi.loops[other])
	if err != nil {
		return internal(err)
	}
	c, err := split(bi.loops[last])
	if err != nil {
		return internal(err)
	}
	var order []schedule.Loop
	for i := 0; i < last; i++ {
		if i == other {
			order = append(order, a[0])
			continue
		}
		order = append(order, bi.loops[i])
	}
	order = append(order, c[0], a[1], c[1])
	return internal(s.Reorder(order...))
}

// iterOf returns the iteration variable bound to loop l alone, or nil.
func iterOf(bi *blockInfo, l schedule.Loop) *ast.IterVar {
	var out *ast.IterVar
	for _, it := range bi.blk.Iters {
		if ast.Mentions(it.Binding, l.Name()) {
			if out != nil {
				return nil
			}
			out = it
		}
	}
	return out
}
