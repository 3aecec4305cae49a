package autotune

import (
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/schedule"
)

// ParallelVectorizeUnroll parallelizes a block's outermost spatial loop
// that does some work (loops of one iteration above it, as a batch of one
// leaves, change nothing), vectorizes its innermost loop when that is
// spatial with a constant extent, and samples an unroll limit for the
// loops under its outermost loop (0 never unrolls; see unrollAnnotated).
// On a GPU only the unroll limit applies: the loops are bound to blocks
// and threads.
//
// With HalfVectors, on a target whose vectors are wider than 256 bits, it
// also samples whether the vectorized loops under the outermost loop use
// the whole vector or half of it (see vectorBitsAnnotated): on AMD Zen 4 a
// loop streaming through memory moves more bytes a second in 256-bit
// halves, a register tile computes faster in whole vectors.
type ParallelVectorizeUnroll struct {
	MaxUnroll   []int64
	HalfVectors bool
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
	if bi.roles[last] == roleSpatial && last > 0 && t.GPU == nil {
		_ = s.Vectorize(bi.loops[last])
	}
	// The limit and the width are annotations, so that a mutated decision
	// takes effect on replay; Finish applies them before building. Where
	// the loop has one already, it is a consumer's, and covers this block.
	if len(p.MaxUnroll) > 0 && !annotated(s, bi.loops[0], unrollKey) {
		v, err := sampleAmong(s, p.MaxUnroll)
		if err != nil {
			return err
		}
		if err := s.AnnotateLoopBy(bi.loops[0], unrollKey, v); err != nil {
			return err
		}
	}
	full := int64(t.VectorLanes) * 32
	if p.HalfVectors && t.GPU == nil && full > 256 && !annotated(s, bi.loops[0], vectorBitsKey) {
		v, err := sampleAmong(s, []int64{full, full / 2})
		if err != nil {
			return err
		}
		return s.AnnotateLoopBy(bi.loops[0], vectorBitsKey, v)
	}
	return nil
}

// vectorBitsKey annotates a loop with the vector width in bits of the
// vectorized loops under it.
const vectorBitsKey = "autotune.vector_bits"

// vectorBitsAnnotated gives every vectorized loop under a loop annotated
// with vectorBitsKey the code generator's annotation of that width
// (llvm.VectorBitsKey; a width no narrower than the target's changes
// nothing).
func vectorBitsAnnotated(f *ast.Func) *ast.Func {
	g := *f
	g.Body = widthUnder(f.Body, 0)
	return &g
}

func widthUnder(s ast.Stmt, bits int64) ast.Stmt {
	lp, isLoop := s.(*ast.For)
	if isLoop {
		if n, ok := lp.Annotations[vectorBitsKey].(int64); ok {
			bits = n
		}
	}
	s = ast.MapChildren(s, func(c ast.Stmt) ast.Stmt { return widthUnder(c, bits) }, func(e ast.Expr) ast.Expr { return e })
	if !isLoop || bits == 0 || lp.Kind != ast.Vectorized {
		return s
	}
	c := *s.(*ast.For)
	c.Annotations = c.Annotations.Clone()
	if c.Annotations == nil {
		c.Annotations = ast.Annotations{}
	}
	c.Annotations[llvm.VectorBitsKey] = bits
	return &c
}

// unrollKey annotates a loop with the unroll limit of the loops under
// it.
const unrollKey = "autotune.unroll_max"

// unrollAnnotated unrolls, under each loop annotated with unrollKey = n
// (that loop included), every serial loop of constant extent whose body
// has no loop left rolled and that makes at most n copies of the blocks
// in it: innermost loops first, as TVM's auto_unroll_max_step does. A
// vectorized loop counts as one copy of its body. So the register tile
// of a multi-level tiling, the loops under its innermost reduce level,
// is unrolled whole, and a small reduce loop above it with it when the
// limit allows. Unrolling is always legal: it keeps the order of
// iterations.
func unrollAnnotated(f *ast.Func) *ast.Func {
	g := *f
	g.Body, _ = unrollUnder(f.Body, 0)
	return &g
}

// unrollUnder unrolls the loops of s within limit and returns s with the
// number of block copies it runs once unrolled: -1 when a loop in it stays
// rolled.
func unrollUnder(s ast.Stmt, limit int64) (ast.Stmt, int64) {
	lp, isLoop := s.(*ast.For)
	if isLoop {
		if n, ok := lp.Annotations[unrollKey].(int64); ok {
			limit = n
		}
	}
	var body int64
	s = ast.MapChildren(s, func(c ast.Stmt) ast.Stmt {
		c, n := unrollUnder(c, limit)
		if n < 0 || body < 0 {
			body = -1
		} else {
			body += n
		}
		return c
	}, func(e ast.Expr) ast.Expr { return e })
	if !isLoop {
		if body == 0 {
			body = 1 // a block or a statement
		}
		return s, body
	}
	lp = s.(*ast.For)
	ext, isConst := ast.ConstIntValue(ast.Simplify(lp.Extent))
	switch {
	case body < 0:
		return s, -1
	case lp.Kind == ast.Vectorized:
		return s, body
	case lp.Kind == ast.Unrolled && isConst:
		return s, ext * body
	case lp.Kind != ast.Serial || !isConst || ext*body > limit:
		return s, -1
	}
	c := *lp
	c.Kind = ast.Unrolled
	return &c, ext * body
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

// annotated reports whether loop l carries annotation key.
func annotated(s *schedule.Schedule, l schedule.Loop, key string) bool {
	found := false
	ast.Inspect(s.Func().Body, func(n ast.Node) bool {
		if lp, ok := n.(*ast.For); ok && lp.Var.Name == l.String() {
			_, found = lp.Annotations[key]
		}
		return !found
	})
	return found
}
