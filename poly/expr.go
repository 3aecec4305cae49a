package poly

import "github.com/loom-go/loom/ast"

// BoundExpr converts bound b into an expression of integer type t over the
// given variables (one for each parameter the bound uses): a min or max of
// the pieces' affine functions, each rounded the way the bound needs. It
// reports false for an empty or unbounded bound, or one that uses a
// parameter vars lacks.
func BoundExpr(b Bound, vars map[string]*ast.Var, t ast.DType) (ast.Expr, bool) {
	if b.Empty || b.Unbounded {
		return nil, false
	}
	inner, outer := ast.Min, ast.Max
	if b.Lower {
		inner, outer = ast.Max, ast.Min
	}
	var out ast.Expr
	for _, part := range b.Parts {
		var pe ast.Expr
		for _, a := range part {
			e, ok := AffExpr(a, b.Lower, vars, t)
			if !ok {
				return nil, false
			}
			if pe == nil {
				pe = e
			} else {
				pe = inner(pe, e)
			}
		}
		if out == nil {
			out = pe
		} else {
			out = outer(out, pe)
		}
	}
	return out, out != nil
}

// AffExpr converts an affine function of the parameters into an
// expression of integer type t over vars, its division rounded up if ceil,
// down otherwise.
func AffExpr(a Aff, ceil bool, vars map[string]*ast.Var, t ast.DType) (ast.Expr, bool) {
	c, ok := a.Const.Int64()
	if !ok {
		return nil, false
	}
	var e ast.Expr = ast.IntConst(t, c)
	for i, p := range a.Params {
		k, ok := a.Coefs[i].Int64()
		if !ok {
			return nil, false
		}
		if k == 0 {
			continue
		}
		v, ok := vars[p]
		if !ok {
			return nil, false
		}
		var x ast.Expr = v
		if v.DType != t {
			x = ast.NewCast(t, v)
		}
		e = ast.Add(e, ast.Mul(x, ast.IntConst(t, k)))
	}
	d, ok := a.Div.Int64()
	if !ok || d < 1 {
		return nil, false
	}
	if d > 1 {
		if ceil {
			e = ast.Add(e, ast.IntConst(t, d-1))
		}
		e = ast.FloorDiv(e, ast.IntConst(t, d))
	}
	return ast.Simplify(e), true
}
