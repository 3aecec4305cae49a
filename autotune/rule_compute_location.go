package autotune

import (
	"errors"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// RandomComputeLocation moves a block that is not an output under a
// sampled loop of its consumer (or leaves it at the root). A block that
// MultiLevelTiling tiled stays with its tiles. Under Default it goes
// under its consumers' outermost loop.
type RandomComputeLocation struct{}

func (RandomComputeLocation) Name() string { return "random-compute-location" }

func (RandomComputeLocation) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || bi.output || bi.reads == 0 {
		return errSkip
	}
	if _, tiled := bi.blk.Annotations[tiledKey]; tiled {
		return errSkip
	}
	sample := s.SampleComputeLocation
	if t.decide && readThroughGroups(s, bi.blk) {
		if i, ok := cacheTileLocation(s, bi.blk); ok {
			l, err := s.SampleComputeLocationWith(b, i)
			if err != nil {
				return internal(err)
			}
			return s.ComputeAt(b, l)
		}
	}
	if t.decide {
		if i, ok := parallelPanelLocation(s, bi.blk); ok {
			if l, err := s.SampleComputeLocationWith(b, i); err == nil {
				if s.ComputeAt(b, l) == nil {
					return nil
				}
			}
			return errSkip // where compute_at refuses, at the root
		}
	}
	if t.decide && readThroughClamp(s, bi.blk) {
		// A consumer that reads it through a clamp, a division or a
		// gather (a pad's reader, an embedding's) leaves compute_at no
		// exact region: it would compute the whole producer again in
		// every iteration of the location (measured: an embedding's
		// kernel 12x slower than unscheduled). It stays at the root.
		return errSkip
	}
	if t.decide {
		// Under the consumers' outermost loop (a row of a softmax's
		// producers computed with the row, while it is in cache), or at
		// the root where there is none.
		sample = func(b schedule.Block) (schedule.Loop, error) {
			l, err := s.SampleComputeLocationWith(b, 0)
			if errors.Is(err, schedule.ErrArgument) {
				return s.SampleComputeLocationWith(b, -1)
			}
			return l, err
		}
	}
	l, err := sample(b)
	if err != nil {
		if err := internal(err); err != nil {
			return err
		}
		return errSkip
	}
	if t.decide && l.Name() != "" && !readAlong(s, bi.blk, l.Name()) {
		// What its consumers read of it does not change with the loop
		// (a broadcast row read by every row): computed there, it would
		// be computed again in every iteration. It stays at the root.
		return errSkip
	}
	// compute_at at the root keeps the block in place; it is recorded
	// all the same, so that a mutated decision moves the block on replay.
	return s.ComputeAt(b, l)
}

// readThroughClamp reports whether some block reads what blk writes at an
// index that is not affine in its iteration variables: a min or max (a
// pad's clamp), a division or remainder, a select, a load (a gather).
func readThroughClamp(s *schedule.Schedule, blk *ast.ScheduleBlock) bool {
	return anyRead(s, blk, func(_ *ast.ScheduleBlock, r ast.Region) bool {
		return slices.ContainsFunc(r.Ranges, func(rg ast.Range) bool { return notAffine(rg.Min) || notAffine(rg.Extent) })
	})
}

// readThroughGroups reports whether the one block that reads what blk
// writes (a grouped convolution reading its padded input at
// floordiv(c, G)*G + rc) does so at indices that are affine but for
// divisions of an iteration variable by a constant, with at least one
// such division, and MultiLevelTiling tiled it. Its cache tile's reads are then a box (the division of a
// range of c is a range), which cacheTileLocation computes blk for.
func readThroughGroups(s *schedule.Schedule, blk *ast.ScheduleBlock) bool {
	readers := 0
	grouped, divided := true, false
	anyRead(s, blk, func(x *ast.ScheduleBlock, r ast.Region) bool {
		readers++
		_, tiled := x.Annotations[tiledKey]
		grouped = grouped && tiled && !slices.ContainsFunc(r.Ranges, func(rg ast.Range) bool {
			return !groupDivisionsOnly(rg.Min) || notAffine(rg.Extent)
		})
		divided = divided || slices.ContainsFunc(r.Ranges, func(rg ast.Range) bool { return notAffine(rg.Min) })
		return false
	})
	// Affine reads (a dense convolution's pad) keep the location below.
	return readers == 1 && grouped && divided
}

// parallelPanelLocation returns the index, among blk's compute
// locations, of the parallel loop of its one reader when that reader is
// tiled, every loop above the parallel one runs once, and the parallel
// loop steps only the last index of the reader's reads of blk (a
// depthwise convolution's panels of channels over its padded input):
// each iteration then reads its own elements of blk, and blk computed
// there is written by the thread that reads it, a panel at a time.
func parallelPanelLocation(s *schedule.Schedule, blk *ast.ScheduleBlock) (int64, bool) {
	var reader *ast.ScheduleBlock
	var region ast.Region
	readers := 0
	anyRead(s, blk, func(x *ast.ScheduleBlock, r ast.Region) bool {
		reader, region = x, r
		readers++
		return false
	})
	if readers != 1 {
		return 0, false
	}
	if _, tiled := reader.Annotations[tiledKey]; !tiled {
		return 0, false
	}
	var loops []*ast.For
	eachBlock(s.Func(), func(b *ast.ScheduleBlock, ls []*ast.For) {
		if b == reader {
			loops = ls
		}
	})
	for i, l := range loops {
		if n, ok := ast.ConstIntValue(l.Extent); ok && n == 1 {
			continue
		}
		if l.Kind != ast.Parallel || len(region.Ranges) == 0 {
			return 0, false
		}
		var stepped []*ast.IterVar
		for _, it := range reader.Iters {
			if ast.Mentions(it.Binding, l.Var.Name) {
				stepped = append(stepped, it)
			}
		}
		if len(stepped) != 1 || stepped[0].Kind != ast.Spatial {
			return 0, false
		}
		last := len(region.Ranges) - 1
		for d, rg := range region.Ranges {
			if mentions := ast.Mentions(rg.Min, stepped[0].Var.Name); mentions != (d == last) || notAffine(rg.Min) {
				return 0, false
			}
		}
		return int64(i), true
	}
	return 0, false
}

// groupDivisionsOnly reports whether the only operations of e that are
// not affine are floordiv(v, G) of a variable by a positive constant.
func groupDivisionsOnly(e ast.Expr) bool { return !nonAffine(e, true) }

// cacheTileLocation returns the index, among blk's compute locations
// (the loops around its one reader, outermost first), of the innermost
// loop of the reader's first tile level (the loops down to the first
// one that steps a variable an outer loop stepped already: the cache
// tiles) such that the reader's region of blk moves along it and along
// every loop above it of more than one iteration (so that no part of
// blk is computed twice but where tiles overlap, a window's halo).
// Computed there, blk (a pad) writes each cache tile's inputs just
// before the tile reads them, while they are in cache, instead of all
// of them in a pass of its own. ResNeXt-50's 3x3 convolution over 256
// channels in groups of 8, stride 2 at 56x56, NHWC, one thread on an Ice
// Lake Xeon: 0.87-0.89 of the time with the pad at the root (paired
// calls). None where a loop of that level runs in parallel.
func cacheTileLocation(s *schedule.Schedule, blk *ast.ScheduleBlock) (int64, bool) {
	var reader *ast.ScheduleBlock
	anyRead(s, blk, func(x *ast.ScheduleBlock, _ ast.Region) bool {
		reader = x
		return true
	})
	if reader == nil {
		return 0, false
	}
	var loops []*ast.For
	eachBlock(s.Func(), func(b *ast.ScheduleBlock, ls []*ast.For) {
		if b == reader {
			loops = ls
		}
	})
	seen := map[*ast.IterVar]bool{}
	at := -1
	for i, l := range loops {
		var it *ast.IterVar
		for _, x := range reader.Iters {
			if ast.Mentions(x.Binding, l.Var.Name) {
				if it != nil {
					return 0, false // a loop of two variables (fused): no plain tile level
				}
				it = x
			}
		}
		if it != nil && (seen[it] || it.Kind == ast.Reduce) || l.Kind == ast.Vectorized {
			break // the next tile level, or the reduction, begins
		}
		if l.Kind != ast.Serial {
			// Under a parallel loop the tiles' inputs overlap (a
			// window's halo), and threads would write the same
			// elements of blk: compute_at refuses it. At the root.
			return 0, false
		}
		if it != nil {
			seen[it] = true
		}
		if n, ok := ast.ConstIntValue(l.Extent); ok && n == 1 {
			continue // one iteration: nothing computed again
		}
		if !readAlong(s, blk, l.Var.Name) || it != nil && rereadInGroups(s, blk, reader, it, l) {
			// What the reader reads of blk does not move with this
			// loop (a matrix product's row tiles all read one panel),
			// or not with each of its steps: under it, blk would be
			// computed again in each iteration.
			break
		}
		at = i
	}
	return int64(at), at >= 0
}

// rereadInGroups reports whether the reader reads blk at floordiv(v,
// G) of the variable it that loop l steps, by a step that is not a
// multiple of G: neighbouring iterations of l then read the same group
// (four heads' tiles of one a grouped-query attention's keys), and blk
// computed under l would be computed once for each.
func rereadInGroups(s *schedule.Schedule, blk, reader *ast.ScheduleBlock, it *ast.IterVar, l *ast.For) bool {
	coefs, ok := ast.AffineCoefs(it.Binding)
	step := coefs[l.Var.Name]
	if !ok || step == 0 {
		return true
	}
	return anyRead(s, blk, func(x *ast.ScheduleBlock, r ast.Region) bool {
		return x == reader && slices.ContainsFunc(r.Ranges, func(rg ast.Range) bool {
			g := groupOf(rg.Min, it.Var.Name)
			return g > 1 && step%g != 0
		})
	})
}

// readAlong reports whether some block reads what blk writes at an index
// that moves with loop (an iteration variable bound to the loop).
func readAlong(s *schedule.Schedule, blk *ast.ScheduleBlock, loop string) bool {
	return anyRead(s, blk, func(x *ast.ScheduleBlock, r ast.Region) bool {
		return slices.ContainsFunc(x.Iters, func(it *ast.IterVar) bool {
			return ast.Mentions(it.Binding, loop) && regionIndexedBy(r, it.Var)
		})
	})
}

// anyRead reports whether f holds for some read region, of what blk
// writes, of some other block x.
func anyRead(s *schedule.Schedule, blk *ast.ScheduleBlock, f func(x *ast.ScheduleBlock, r ast.Region) bool) bool {
	for _, x := range s.Func().Blocks() {
		if x == blk {
			continue
		}
		for _, r := range x.Reads {
			if slices.ContainsFunc(blk.Writes, func(w ast.Region) bool { return w.Buffer.Name == r.Buffer.Name }) && f(x, r) {
				return true
			}
		}
	}
	return false
}

// notAffine reports whether e holds an operation that is not affine.
func notAffine(e ast.Expr) bool { return nonAffine(e, false) }

// nonAffine reports whether e holds an operation that is not affine,
// floordiv(v, G) of a variable by a positive constant excepted when
// groups is set.
func nonAffine(e ast.Expr, groups bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Binary:
			switch n.Op {
			case ast.OpFloorDiv:
				_, isVar := n.A.(*ast.Var)
				d, c := ast.ConstIntValue(n.B)
				if groups && isVar && c && d > 0 {
					return false // v as floordiv(v, G): nothing inside to look at
				}
				found = true
			case ast.OpMin, ast.OpMax, ast.OpDiv, ast.OpMod, ast.OpFloorMod:
				found = true
			}
		case *ast.Select, *ast.Load:
			found = true
		}
		return !found
	})
	return found
}
