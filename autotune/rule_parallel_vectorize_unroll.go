package autotune

import (
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// ParallelVectorizeUnroll parallelizes a block's outermost spatial loop
// that does some work (loops of one iteration above it, as a batch of one
// leaves, change nothing),
// vectorizes its innermost loop when that is spatial with a constant
// extent, and unrolls the loop above it when a sampled limit allows (0
// never unrolls).
type ParallelVectorizeUnroll struct {
	MaxUnroll []int64
}

func (ParallelVectorizeUnroll) Name() string { return "parallel-vectorize-unroll" }

func (p ParallelVectorizeUnroll) Apply(s *schedule.Schedule, b schedule.Block, t Target) error {
	bi, err := info(s, b)
	if err != nil || len(bi.loops) == 0 {
		return errSkip
	}
	if t.Threads > 1 {
		if l, ok := parallelLoop(s, bi); ok {
			_ = s.Parallel(l) // refused when illegal: stays serial
		}
	}
	last := len(bi.loops) - 1
	if bi.roles[last] == roleSpatial && last > 0 {
		_ = s.Vectorize(bi.loops[last])
	}
	if len(p.MaxUnroll) > 0 && last > 0 && bi.roles[last-1] != roleMixed {
		probs := make([]float64, len(p.MaxUnroll))
		for i := range probs {
			probs[i] = 1
		}
		v, err := s.SampleCategorical(p.MaxUnroll, probs)
		if err != nil {
			return err
		}
		// The limit is an annotation, so a mutated decision takes effect
		// on replay; unrollAnnotated applies it before building.
		return s.AnnotateLoopBy(bi.loops[last-1], unrollKey, v)
	}
	return nil
}

// unrollKey annotates a loop with the largest extent it is unrolled at.
const unrollKey = "autotune.unroll_max"

// unrollAnnotated unrolls the serial loops whose constant extent is
// within their unrollKey annotation (always legal: unrolling keeps the
// order of iterations).
func unrollAnnotated(f *ast.Func) *ast.Func {
	var fix func(s ast.Stmt) ast.Stmt
	fix = func(s ast.Stmt) ast.Stmt {
		s = ast.MapChildren(s, fix, func(e ast.Expr) ast.Expr { return e })
		lp, ok := s.(*ast.For)
		if !ok || lp.Kind != ast.Serial {
			return s
		}
		limit, ok := lp.Annotations[unrollKey]
		n, isInt := limit.(int64)
		ext, isConst := ast.ConstIntValue(ast.Simplify(lp.Extent))
		if !ok || !isInt || !isConst || n == 0 || ext > n {
			return s
		}
		c := *lp
		c.Kind = ast.Unrolled
		return &c
	}
	g := *f
	g.Body = fix(f.Body)
	return &g
}

// parallelLoop returns the first loop of the block with more than one
// iteration, if it is spatial and every loop above it has one iteration.
func parallelLoop(s *schedule.Schedule, bi *blockInfo) (schedule.Loop, bool) {
	for i, l := range bi.loops {
		if n, ok := s.Extent(l); ok && n == 1 {
			continue // binds nothing that varies, whatever its role
		}
		return l, bi.roles[i] == roleSpatial
	}
	return schedule.Loop{}, false
}
