package ast

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// linear is an integer expression in canonical affine form:
// sum of coef × atom, plus a constant. An atom is any simplified integer
// expression that is not itself a sum, difference or product by a constant
// (a variable, a load, floordiv(...), a product of two non-constants, ...).
// Terms are kept sorted by the atom's text form, with no zero coefficient
// and no atom twice, so equal sums have equal term lists.
type linear struct {
	terms []linTerm
	c     int64
}

type linTerm struct {
	coef int64
	atom Expr
	key  string // Print(atom), the sort key
}

func addInt(a, b int64) (int64, bool) {
	s := a + b
	return s, !((a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0))
}

func mulInt(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if a == math.MinInt64 || b == math.MinInt64 {
		return 0, false
	}
	hi, lo := bits.Mul64(uabs(a), uabs(b))
	if hi != 0 || lo >= 1<<63 {
		return 0, false
	}
	if (a < 0) != (b < 0) {
		return -int64(lo), true
	}
	return int64(lo), true
}

func atomTerm(e Expr) linear {
	return linear{terms: []linTerm{{coef: 1, atom: e, key: Print(e)}}}
}

// plus returns l + s*o, or false on overflow.
func (l linear) plus(o linear, s int64) (linear, bool) {
	var out linear
	c, ok1 := mulInt(o.c, s)
	sum, ok2 := addInt(l.c, c)
	if !ok1 || !ok2 {
		return linear{}, false
	}
	out.c = sum
	i, j := 0, 0
	for i < len(l.terms) || j < len(o.terms) {
		switch {
		case j == len(o.terms) || (i < len(l.terms) && l.terms[i].key < o.terms[j].key):
			out.terms = append(out.terms, l.terms[i])
			i++
		case i == len(l.terms) || o.terms[j].key < l.terms[i].key:
			c, ok := mulInt(o.terms[j].coef, s)
			if !ok {
				return linear{}, false
			}
			out.terms = append(out.terms, linTerm{c, o.terms[j].atom, o.terms[j].key})
			j++
		default:
			c, ok := mulInt(o.terms[j].coef, s)
			if !ok {
				return linear{}, false
			}
			c, ok = addInt(l.terms[i].coef, c)
			if !ok {
				return linear{}, false
			}
			if c != 0 {
				out.terms = append(out.terms, linTerm{c, l.terms[i].atom, l.terms[i].key})
			}
			i++
			j++
		}
	}
	return out, true
}

// times returns s*l, or false on overflow.
func (l linear) times(s int64) (linear, bool) {
	if s == 0 {
		return linear{}, true
	}
	c, ok := mulInt(l.c, s)
	if !ok {
		return linear{}, false
	}
	out := linear{c: c, terms: make([]linTerm, len(l.terms))}
	for i, t := range l.terms {
		c, ok := mulInt(t.coef, s)
		if !ok {
			return linear{}, false
		}
		out.terms[i] = linTerm{c, t.atom, t.key}
	}
	return out, true
}

// toLinear returns the canonical form of an integer expression whose
// operands are already simplified.
func toLinear(e Expr) (linear, bool) {
	switch e := e.(type) {
	case *Const:
		return linear{c: e.Int}, true
	case *Binary:
		switch e.Op {
		case OpAdd, OpSub:
			a, ok1 := toLinear(e.A)
			b, ok2 := toLinear(e.B)
			if !ok1 || !ok2 {
				return linear{}, false
			}
			s := int64(1)
			if e.Op == OpSub {
				s = -1
			}
			l, ok := a.plus(b, s)
			if !ok {
				return linear{}, false
			}
			return l.joinDivMod(), true
		case OpMul:
			a, ok1 := toLinear(e.A)
			b, ok2 := toLinear(e.B)
			if !ok1 || !ok2 {
				return linear{}, false
			}
			switch {
			case len(a.terms) == 0:
				return b.times(a.c)
			case len(b.terms) == 0:
				return a.times(b.c)
			}
			// A product of two non-constants is an atom, operands in
			// canonical order.
			x, y := e.A, e.B
			if Print(y) < Print(x) {
				x, y = y, x
			}
			return atomTerm(&Binary{Op: OpMul, A: x, B: y}), true
		}
	}
	return atomTerm(e), true
}

// joinDivMod rewrites k·c·floordiv(x, k) + c·floormod(x, k) as c·x (the
// division identity), which a fuse of split loops leaves behind.
func (l linear) joinDivMod() linear {
	for i, m := range l.terms {
		mod, ok := m.atom.(*Binary)
		if !ok || mod.Op != OpFloorMod {
			continue
		}
		k, ok := ConstIntValue(mod.B)
		if !ok || k <= 0 {
			continue
		}
		want, ok := mulInt(m.coef, k)
		if !ok {
			continue
		}
		for j, d := range l.terms {
			div, isDiv := d.atom.(*Binary)
			if j == i || !isDiv || div.Op != OpFloorDiv || d.coef != want || !Equal(div.A, mod.A) || !Equal(div.B, mod.B) {
				continue
			}
			x, ok := toLinear(mod.A)
			if !ok {
				break
			}
			rest := linear{c: l.c}
			for n, t := range l.terms {
				if n != i && n != j {
					rest.terms = append(rest.terms, t)
				}
			}
			if out, ok := rest.plus(x, m.coef); ok {
				return out.joinDivMod()
			}
			break
		}
	}
	return l
}

// expr rebuilds l as an expression of integer type t: positive terms first,
// then the negative ones subtracted, each group by decreasing magnitude of
// coefficient (so an outer index comes before an inner one: i*64 + j), then
// the constant. It fails if a coefficient or the constant does not fit t.
func (l linear) expr(t DType) (Expr, bool) {
	terms := slices.Clone(l.terms)
	slices.SortStableFunc(terms, func(x, y linTerm) int {
		return cmp.Compare(uabs(y.coef), uabs(x.coef)) // already in key order within a magnitude
	})
	l.terms = terms
	lo, hi := intRange(t)
	fits := func(v int64) bool { return v >= lo && v <= hi }
	if !fits(l.c) {
		return nil, false
	}
	term := func(tm linTerm, c int64) Expr {
		if c == 1 {
			return tm.atom
		}
		return Mul(tm.atom, IntConst(t, c))
	}
	var out Expr
	for _, tm := range l.terms {
		if !fits(tm.coef) || tm.coef == lo {
			return nil, false
		}
		if tm.coef > 0 {
			if out == nil {
				out = term(tm, tm.coef)
			} else {
				out = Add(out, term(tm, tm.coef))
			}
		}
	}
	constUsed := false
	if out == nil && l.c > 0 {
		out = IntConst(t, l.c)
		constUsed = true
	}
	for _, tm := range l.terms {
		if tm.coef < 0 {
			if out == nil {
				out = IntConst(t, 0)
			}
			out = Sub(out, term(tm, -tm.coef))
		}
	}
	switch {
	case out == nil:
		return IntConst(t, l.c), true
	case constUsed || l.c == 0:
	case l.c > 0:
		out = Add(out, IntConst(t, l.c))
	case l.c == lo:
		out = Add(out, IntConst(t, l.c))
	default:
		out = Sub(out, IntConst(t, -l.c))
	}
	return out, true
}

// gcd returns the greatest common divisor of |a| and |b| (gcd(0, 0) = 0).
func gcd(a, b int64) int64 {
	x, y := uabs(a), uabs(b)
	for y != 0 {
		x, y = y, x%y
	}
	if x > math.MaxInt64 {
		return 0 // only for MinInt64 alone; callers treat 0 as "no common factor"
	}
	return int64(x)
}

// termsGCD returns the gcd of the coefficients of l (not the constant).
func (l linear) termsGCD() int64 {
	var g int64
	for _, t := range l.terms {
		g = gcd(g, t.coef)
	}
	return g
}

// splitMultiples splits l into the terms whose coefficients c divides
// (with the multiple of c in the constant) and the rest:
// l = q + r, q divisible by c, and r's constant in [0, c).
func (l linear) splitMultiples(c int64) (q, r linear) {
	for _, t := range l.terms {
		if t.coef%c == 0 {
			q.terms = append(q.terms, t)
		} else {
			r.terms = append(r.terms, t)
		}
	}
	r.c = floorMod(l.c, c)
	q.c = l.c - r.c
	return q, r
}

// divExact divides every coefficient and the constant of l by c, which
// divides them all.
func (l linear) divExact(c int64) linear {
	out := linear{c: l.c / c, terms: make([]linTerm, len(l.terms))}
	for i, t := range l.terms {
		out.terms[i] = linTerm{t.coef / c, t.atom, t.key}
	}
	return out
}
