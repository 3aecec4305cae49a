package autotune

import (
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// AutoInline inlines blocks that compute cheap element-wise values into
// their consumers (MetaSchedule's auto-inline): not outputs, not
// reductions, read by some other block. A block that calls a math
// intrinsic (exp, tanh, ...) and is read by more than one block stays:
// inlined, each reader would compute it again.
type AutoInline struct{}

func (AutoInline) Name() string { return "auto-inline" }

func (AutoInline) Apply(s *schedule.Schedule, b schedule.Block, _ Target) error {
	bi, err := info(s, b)
	if err != nil || bi.output || bi.hasReduce() || bi.reads == 0 {
		return errSkip
	}
	if bi.reads > 1 && callsIntrinsic(bi.blk) {
		return errSkip
	}
	if s.ComputeInline(b) != nil {
		return errSkip // not inlinable here: leave it
	}
	return nil
}

func callsIntrinsic(b *ast.ScheduleBlock) bool {
	found := false
	ast.Inspect(b.Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.Call); ok {
			found = true
		}
		return !found
	})
	return found
}
