package ast

// AffineCoefs returns the coefficients of the variables of an integer
// expression made of constants, variables, sums, differences and products
// by constants; ok is false for anything else.
func AffineCoefs(e Expr) (coefs map[string]int64, ok bool) {
	coefs = map[string]int64{}
	var walk func(e Expr, scale int64) bool
	walk = func(e Expr, scale int64) bool {
		switch e := e.(type) {
		case *Const:
			return true
		case *Var:
			coefs[e.Name] += scale
			return true
		case *Binary:
			switch e.Op {
			case OpAdd:
				return walk(e.A, scale) && walk(e.B, scale)
			case OpSub:
				return walk(e.A, scale) && walk(e.B, -scale)
			case OpMul:
				if c, isConst := ConstIntValue(e.B); isConst && c > -1<<20 && c < 1<<20 {
					return walk(e.A, scale*c)
				}
				if c, isConst := ConstIntValue(e.A); isConst && c > -1<<20 && c < 1<<20 {
					return walk(e.B, scale*c)
				}
			}
		}
		return false
	}
	if e == nil || !walk(e, 1) || len(coefs) > 64 {
		return nil, false
	}
	return coefs, true
}
