package llvm

import "github.com/loom-go/loom/ast"

// Offsets of accesses through fused loops.
//
// fuse(i, j) binds vi = floordiv(f, J) and vj = floormod(f, J), so an
// access A[vi, vj] of a row-major A[I, J] is at offset
// floordiv(f, J)*J + floormod(f, J), which is f: contiguous in f. Computed
// dimension by dimension, the two terms are vectors in a vectorized f,
// and the access a gather. indexTerm lists the terms stride*index of an
// offset; rejoin merges the pairs the fusion split, by two identities
// that hold for every integer e and k, m > 0:
//
//	c*k*floordiv(e, k)            + c*floormod(e, k)  =  c*e
//	c*k*floormod(floordiv(e, k), m) + c*floormod(e, k)  =  c*floormod(e, m*k)
//
// (the second is a fused loop of three, whose middle index is the first
// kind of pair once the inner two are merged).
//
// A split of the fused loop puts the pair inside sums: vk = 8*k0 +
// floordiv(g, 56), vl = floormod(g, 56). So the terms are first spread
// over additions and constant factors (56*(8*k0 + floordiv(g, 56)) is
// 448*k0 + 56*floordiv(g, 56)), and the spread form is kept only where it
// lets a pair merge.

// indexTerm is stride * index, the part of an offset from one index:
// index with the block's iteration variables replaced by their bindings
// (for matching), and as written (to emit, where no merge changed it).
type indexTerm struct {
	stride  int64
	index   ast.Expr
	written ast.Expr // nil for a merged term
}

// expr is the index to emit.
func (t indexTerm) expr() ast.Expr {
	if t.written != nil {
		return t.written
	}
	return t.index
}

// rejoin merges the terms of an offset that the identities above allow,
// until none does: over the terms spread by spread where that merges
// some, else over the terms as given.
func rejoin(terms []indexTerm) []indexTerm {
	var spreadTerms []indexTerm
	for _, t := range terms {
		spreadTerms = spread(spreadTerms, t.stride, t.index)
	}
	if len(spreadTerms) > len(terms) {
		if merged := merge(spreadTerms); len(merged) < len(spreadTerms) {
			return merged
		}
	}
	return merge(terms)
}

// spread appends stride*x to terms as a list of terms, one per addend of
// x, constant factors moved into the strides.
func spread(terms []indexTerm, stride int64, x ast.Expr) []indexTerm {
	if b, ok := x.(*ast.Binary); ok {
		switch b.Op {
		case ast.OpAdd:
			return spread(spread(terms, stride, b.A), stride, b.B)
		case ast.OpMul:
			if c, ok := ast.ConstIntValue(b.B); ok {
				return spread(terms, stride*c, b.A)
			}
			if c, ok := ast.ConstIntValue(b.A); ok {
				return spread(terms, stride*c, b.B)
			}
		}
	}
	return append(terms, indexTerm{stride: stride, index: x})
}

// merge merges pairs of terms by the identities, until none does.
func merge(terms []indexTerm) []indexTerm {
	terms = append([]indexTerm(nil), terms...)
	for merged := true; merged; {
		merged = false
		for i := 0; i < len(terms) && !merged; i++ {
			for j := 0; j < len(terms) && !merged; j++ {
				if i == j {
					continue
				}
				if x, ok := rejoinPair(terms[i], terms[j]); ok {
					terms[j] = x
					terms = append(terms[:i], terms[i+1:]...)
					merged = true
				}
			}
		}
	}
	return terms
}

// rejoinPair merges hi (the floordiv side) and lo (the floormod side) when
// they are one of the identities' left sides.
func rejoinPair(hi, lo indexTerm) (indexTerm, bool) {
	e, k, ok := floorOp(lo.index, ast.OpFloorMod)
	if !ok || hi.stride != lo.stride*k {
		return indexTerm{}, false
	}
	if q, kq, ok := floorOp(hi.index, ast.OpFloorDiv); ok && kq == k && ast.Equal(q, e) {
		return indexTerm{stride: lo.stride, index: e}, true
	}
	if inner, m, ok := floorOp(hi.index, ast.OpFloorMod); ok {
		if q, kq, ok := floorOp(inner, ast.OpFloorDiv); ok && kq == k && ast.Equal(q, e) {
			t := e.Type()
			return indexTerm{stride: lo.stride, index: ast.FloorMod(e, ast.ConstOf(t, float64(m*k)))}, true
		}
	}
	return indexTerm{}, false
}

// floorOp matches op(e, k) with a constant k > 0.
func floorOp(x ast.Expr, op ast.BinaryOp) (e ast.Expr, k int64, ok bool) {
	b, isBin := x.(*ast.Binary)
	if !isBin || b.Op != op {
		return nil, 0, false
	}
	k, isConst := ast.ConstIntValue(b.B)
	if !isConst || k <= 0 {
		return nil, 0, false
	}
	return b.A, k, true
}
