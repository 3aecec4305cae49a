package poly

import (
	"strconv"

	"github.com/loom-go/loom/ast"
)

// affineBuilder turns ast integer expressions into affine expressions over
// named variables, adding a local variable (with its two defining
// inequalities) for each floordiv or floormod by a positive constant.
type affineBuilder struct {
	known  map[string]bool   // variables an expression may use
	alias  map[string]string // variables that stand for others (outer iteration variables as locals)
	nLocal int
	defs   conj // the constraints defining the locals
}

func newAffineBuilder() *affineBuilder {
	return &affineBuilder{known: map[string]bool{}, alias: map[string]string{}}
}

// local returns the name of a new local variable.
func (ab *affineBuilder) local() string {
	ab.nLocal++
	return "$e" + strconv.Itoa(ab.nLocal-1)
}

// expr returns e as an affine expression, or false if it is not one:
// constants, known variables, + and -, multiplication by a constant,
// floordiv and floormod by a positive constant (also / and % of a
// dividend the caller knows to be non-negative are not assumed), and casts
// between integer types.
func (ab *affineBuilder) expr(e ast.Expr) (lin, bool) {
	switch e := e.(type) {
	case *ast.Const:
		if !e.DType.IsInt() {
			return lin{}, false
		}
		return constLin(IntOf(e.Int)), true
	case *ast.Var:
		if a, ok := ab.alias[e.Name]; ok {
			return varLin(a), true
		}
		if !ab.known[e.Name] {
			return lin{}, false
		}
		return varLin(e.Name), true
	case *ast.Cast:
		if !e.To.IsInt() || !e.X.Type().IsInt() {
			return lin{}, false
		}
		return ab.expr(e.X)
	case *ast.Binary:
		switch e.Op {
		case ast.OpAdd, ast.OpSub:
			a, ok1 := ab.expr(e.A)
			b, ok2 := ab.expr(e.B)
			if !ok1 || !ok2 {
				return lin{}, false
			}
			if e.Op == ast.OpSub {
				return a.plus(b, IntOf(-1)), true
			}
			return a.plus(b, IntOf(1)), true
		case ast.OpMul:
			a, ok1 := ab.expr(e.A)
			b, ok2 := ab.expr(e.B)
			switch {
			case !ok1 || !ok2:
				return lin{}, false
			case a.isConst():
				return b.scaled(a.c), true
			case b.isConst():
				return a.scaled(b.c), true
			}
		case ast.OpFloorDiv, ast.OpFloorMod:
			c, ok := ast.ConstIntValue(e.B)
			if !ok || c <= 0 {
				return lin{}, false
			}
			num, ok := ab.expr(e.A)
			if !ok {
				return lin{}, false
			}
			d := IntOf(c)
			q := varLin(ab.local())
			rem := num.plus(q, d.Neg()) // num - d q in [0, d - 1]
			ab.defs.ineqs = append(ab.defs.ineqs, rem, constLin(d.Sub(IntOf(1))).plus(rem, IntOf(-1)))
			if e.Op == ast.OpFloorMod {
				return rem, true
			}
			return q, true
		}
	}
	return lin{}, false
}

// condition returns the disjuncts of an affine condition (comparisons of
// affine expressions combined with && and ||), or false if any part is not
// affine. With negate it returns the disjuncts of the negation.
func (ab *affineBuilder) condition(e ast.Expr, negate bool) ([]conj, bool) {
	switch e := e.(type) {
	case *ast.Const:
		if e.DType != ast.Bool {
			return nil, false
		}
		if (e.Int != 0) != negate {
			return []conj{{}}, true
		}
		return nil, true // false: no disjunct
	case *ast.Not:
		return ab.condition(e.X, !negate)
	case *ast.Binary:
		if e.Op == ast.OpAnd || e.Op == ast.OpOr {
			a, ok1 := ab.condition(e.A, negate)
			b, ok2 := ab.condition(e.B, negate)
			if !ok1 || !ok2 {
				return nil, false
			}
			// !(a && b) = !a || !b, !(a || b) = !a && !b.
			if (e.Op == ast.OpOr) != negate {
				return append(a, b...), true
			}
			var out []conj
			for _, x := range a {
				for _, y := range b {
					out = append(out, conj{eqs: append(append([]lin(nil), x.eqs...), y.eqs...), ineqs: append(append([]lin(nil), x.ineqs...), y.ineqs...)})
				}
			}
			return out, true
		}
		if !e.Op.IsCompare() || !e.A.Type().IsInt() {
			return nil, false
		}
		a, ok1 := ab.expr(e.A)
		b, ok2 := ab.expr(e.B)
		if !ok1 || !ok2 {
			return nil, false
		}
		op := e.Op
		if negate {
			op = map[ast.BinaryOp]ast.BinaryOp{ast.OpEQ: ast.OpNE, ast.OpNE: ast.OpEQ, ast.OpLT: ast.OpGE,
				ast.OpGE: ast.OpLT, ast.OpGT: ast.OpLE, ast.OpLE: ast.OpGT}[op]
		}
		d := b.plus(a, IntOf(-1)) // b - a
		one := constLin(IntOf(1))
		switch op {
		case ast.OpEQ:
			return []conj{{eqs: []lin{d}}}, true
		case ast.OpNE: // a < b or a > b
			return []conj{{ineqs: []lin{d.plus(one, IntOf(-1))}}, {ineqs: []lin{d.scaled(IntOf(-1)).plus(one, IntOf(-1))}}}, true
		case ast.OpLT:
			return []conj{{ineqs: []lin{d.plus(one, IntOf(-1))}}}, true
		case ast.OpLE:
			return []conj{{ineqs: []lin{d}}}, true
		case ast.OpGT:
			return []conj{{ineqs: []lin{d.scaled(IntOf(-1)).plus(one, IntOf(-1))}}}, true
		case ast.OpGE:
			return []conj{{ineqs: []lin{d.scaled(IntOf(-1))}}}, true
		}
	}
	return nil, false
}

// assemble lays a conjunction over named variables out as a basic set or
// map: params, then the input and output tuple variables, then the locals
// $e0, $e1, ... of the builder. It returns false if a constraint uses a
// variable that has no column.
func assemble(params, in, out []string, nLocal int, c conj) (*basic, bool) {
	b := &basic{nParam: len(params), nIn: len(in), nOut: len(out), nLocal: nLocal}
	col := map[string]int{}
	for i, name := range params {
		col[name] = i
	}
	for i, name := range in {
		col[name] = b.inVar(i)
	}
	for i, name := range out {
		col[name] = b.outVar(i)
	}
	for i := 0; i < nLocal; i++ {
		col["$e"+strconv.Itoa(i)] = b.localVar(i)
	}
	toRow := func(e lin) (row, bool) {
		r := newRow(b.nVars())
		r[0] = e.c
		for k, v := range e.terms {
			if v.IsZero() {
				continue
			}
			c, ok := col[k]
			if !ok {
				return nil, false
			}
			r[c+1] = r[c+1].Add(v)
		}
		return r, true
	}
	for _, e := range c.eqs {
		r, ok := toRow(e)
		if !ok {
			return nil, false
		}
		b.eqs = append(b.eqs, r)
	}
	for _, e := range c.ineqs {
		r, ok := toRow(e)
		if !ok {
			return nil, false
		}
		b.ineqs = append(b.ineqs, r)
	}
	return b, true
}
