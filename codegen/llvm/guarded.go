package llvm

import (
	"slices"

	"github.com/loom-go/loom/ast"
)

// A padded read, as the fusion lowering writes it (a convolution's or a
// pooling window's border, a pad operator), is
//
//	select(h >= lo && h <= hi && ..., A[..., min(max(h, lo), hi), ...], fill)
//
// The clamp keeps the load inside A in every lane, so a vectorized loop
// would read it as a gather: the clamped indices are no ramp. But in the
// lanes the condition keeps the clamp changes nothing, and the other lanes
// take fill. guardedLoad reads such a select as a load of the unclamped
// indices masked by the condition (only the kept lanes touch memory), then
// the select: one contiguous masked load instead of a gather.

// guardedLoad emits x as a masked load when it has the form above and its
// unclamped indices are a ramp of small stride; ok is false, and nothing
// of x is emitted that matters, when it does not.
func (e *emitter) guardedLoad(x *ast.Select) (v lanes, ok bool) {
	ld, isLoad := x.T.(*ast.Load)
	if e.width == 0 || !isLoad {
		return lanes{}, false
	}
	conj := conjuncts(x.Cond, nil)
	idx := make([]ast.Expr, len(ld.Indices))
	changed := false
	for d, ix := range ld.Indices {
		idx[d] = ix
		for _, c := range clampParts(ix) {
			if guards(conj, c.h, c.lo, c.hi) && !ast.ContainsLoad(c.h) {
				idx[d] = c.h
				changed = true
				break
			}
		}
	}
	if !changed {
		return lanes{}, false
	}
	if slices.ContainsFunc(idx, ast.ContainsLoad) {
		return lanes{}, false // a gather's index: the plain load checks it
	}
	buf := e.buffer(ld.Buffer)
	off, _ := e.offset(buf, idx)
	if !off.isRamp() || off.stride < 1 || off.stride > maxLoadStride {
		return lanes{}, false
	}
	c := e.value(x.Cond)
	if c.isUniform() {
		return lanes{}, false // whole vectors: the plain select
	}
	cond := e.vec(c)
	// Lane 0's element may lie before the buffer (its lane masked off):
	// its address is computed without inbounds.
	saved := e.mask
	e.mask, e.loose = e.andMask(cond), true
	val := e.loadAt(buf, off)
	e.mask, e.loose = saved, false
	return vector(e.b.NewSelect(cond, e.vec(val), e.vec(e.value(x.F)))), true
}

// conjuncts appends the terms of a chain of &&s to to.
func conjuncts(x ast.Expr, to []ast.Expr) []ast.Expr {
	if b, ok := x.(*ast.Binary); ok && b.Op == ast.OpAnd {
		return conjuncts(b.B, conjuncts(b.A, to))
	}
	return append(to, x)
}

// clampParts lists the ways to read x as min(max(h, lo), hi) or
// max(min(h, hi), lo), in any operand order, with lo and hi free of loads
// and comparisons.
func clampParts(x ast.Expr) []clamp {
	outer, isBin := x.(*ast.Binary)
	if !isBin || (outer.Op != ast.OpMin && outer.Op != ast.OpMax) {
		return nil
	}
	innerOp := ast.OpMax
	if outer.Op == ast.OpMax {
		innerOp = ast.OpMin
	}
	var ways []clamp
	for _, p := range [2][2]ast.Expr{{outer.A, outer.B}, {outer.B, outer.A}} {
		inner, isInner := p[0].(*ast.Binary)
		if !isInner || inner.Op != innerOp || !isBound(p[1]) {
			continue
		}
		for _, q := range [2][2]ast.Expr{{inner.A, inner.B}, {inner.B, inner.A}} {
			if !isBound(q[1]) {
				continue
			}
			if outer.Op == ast.OpMin { // min(max(h, lo), hi)
				ways = append(ways, clamp{h: q[0], lo: q[1], hi: p[1]})
			} else { // max(min(h, hi), lo)
				ways = append(ways, clamp{h: q[0], lo: p[1], hi: q[1]})
			}
		}
	}
	return ways
}

// A clamp is min(max(h, lo), hi).
type clamp struct{ h, lo, hi ast.Expr }

// isBound reports whether x can be a clamp's bound: free of loads and of
// anything but constants, variables and arithmetic on them.
func isBound(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Const, *ast.Var:
		return true
	case *ast.Binary:
		return !x.Op.IsCompare() && !x.Op.IsLogical() && isBound(x.A) && isBound(x.B)
	case *ast.Cast:
		return isBound(x.X)
	}
	return false
}

// guards reports whether the conjuncts hold lo <= h <= hi.
func guards(conj []ast.Expr, h, lo, hi ast.Expr) bool {
	above, below := false, false
	for _, c := range conj {
		b, ok := c.(*ast.Binary)
		if !ok {
			continue
		}
		switch {
		case b.Op == ast.OpGE && ast.Equal(b.A, h), b.Op == ast.OpLE && ast.Equal(b.B, h):
			// h >= y, y <= h
			above = above || atLeast(otherSide(b, h), lo, 0)
		case b.Op == ast.OpGT && ast.Equal(b.A, h), b.Op == ast.OpLT && ast.Equal(b.B, h):
			// h > y, y < h: h >= y+1
			above = above || atLeast(otherSide(b, h), lo, 1)
		case b.Op == ast.OpLE && ast.Equal(b.A, h), b.Op == ast.OpGE && ast.Equal(b.B, h):
			// h <= y, y >= h
			below = below || atLeast(hi, otherSide(b, h), 0)
		case b.Op == ast.OpLT && ast.Equal(b.A, h), b.Op == ast.OpGT && ast.Equal(b.B, h):
			// h < y, y > h: h <= y-1
			below = below || atLeast(hi, otherSide(b, h), 1)
		}
	}
	return above && below
}

// otherSide returns the operand of the comparison b that is not h.
func otherSide(b *ast.Binary, h ast.Expr) ast.Expr {
	if ast.Equal(b.A, h) {
		return b.B
	}
	return b.A
}

// atLeast reports whether a + k >= b is known: both constants, or a and
// b the same up to a constant term (y, y - c, y + c).
func atLeast(a, b ast.Expr, k int64) bool {
	ya, ca := splitConst(a)
	yb, cb := splitConst(b)
	if (ya == nil) != (yb == nil) || (ya != nil && !ast.Equal(ya, yb)) {
		return false
	}
	return ca+k >= cb
}

// splitConst writes x as y + c for a constant c (y nil when x is a
// constant).
func splitConst(x ast.Expr) (ast.Expr, int64) {
	switch x := x.(type) {
	case *ast.Const:
		if x.DType.IsInt() {
			return nil, x.Int
		}
	case *ast.Binary:
		if c, ok := x.B.(*ast.Const); ok && c.DType.IsInt() {
			switch x.Op {
			case ast.OpAdd:
				y, k := splitConst(x.A)
				return y, k + c.Int
			case ast.OpSub:
				y, k := splitConst(x.A)
				return y, k - c.Int
			}
		}
	}
	return x, 0
}
