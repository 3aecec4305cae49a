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
func notAffine(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Binary:
			switch n.Op {
			case ast.OpMin, ast.OpMax, ast.OpDiv, ast.OpMod, ast.OpFloorDiv, ast.OpFloorMod:
				found = true
			}
		case *ast.Select, *ast.Load:
			found = true
		}
		return !found
	})
	return found
}
