package autotune

import (
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// AutoInline inlines blocks that compute cheap element-wise values into
// their consumers (MetaSchedule's auto-inline): not outputs, not
// reductions, read by some other block. A block that calls a math
// intrinsic (exp, tanh, ...) and is read by more than one block, or more
// than once by one (a softplus of a GELU reads it four times), stays:
// inlined, each read would compute it again.
//
// With NoSelect, a block whose value has a select stays too (a padding,
// or any other conditional value, as TVM's CPU rules keep if-then-else):
// on a CPU, inlined into a convolution, a padding would test the bounds
// at every multiply-add of the vectorized inner loop. On a GPU the test
// is cheaper than a pass over memory.
type AutoInline struct {
	NoSelect bool
}

func (AutoInline) Name() string { return "auto-inline" }

func (a AutoInline) Apply(s *schedule.Schedule, b schedule.Block, _ Target) error {
	bi, err := info(s, b)
	if err != nil || bi.output || bi.hasReduce() || bi.reads == 0 {
		return errSkip
	}
	if (bi.reads > 1 || mostLoads(s, bi.blk) > 1) && contains[*ast.Call](bi.blk) || a.NoSelect && contains[*ast.Select](bi.blk) {
		return errSkip
	}
	if err := s.ComputeInline(b); err != nil {
		if err := internal(err); err != nil {
			return err
		}
		return errSkip // not inlinable here: leave it
	}
	return nil
}

// contains reports whether the body of block b has a node of type T
// (an *ast.Call: a math intrinsic; an *ast.Select).
func contains[T ast.Node](b *ast.ScheduleBlock) bool {
	found := false
	ast.Inspect(b.Body, func(n ast.Node) bool {
		if _, ok := n.(T); ok {
			found = true
		}
		return !found
	})
	return found
}

// mostLoads returns the most loads of what blk writes in one other
// block's body.
func mostLoads(s *schedule.Schedule, blk *ast.ScheduleBlock) int {
	most := 0
	for _, x := range s.Func().Blocks() {
		if x == blk {
			continue
		}
		n := 0
		ast.Inspect(x.Body, func(node ast.Node) bool {
			if ld, ok := node.(*ast.Load); ok {
				for _, w := range blk.Writes {
					if ld.Buffer.Name == w.Buffer.Name {
						n++
					}
				}
			}
			return true
		})
		most = max(most, n)
	}
	return most
}
