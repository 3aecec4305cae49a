package ast

import (
	"slices"
	"strings"
)

// This file proves that a parallel loop's iterations write disjoint
// instances of a block (ownsInstances in verify.go): the spatial binding,
// expanded into a polynomial, is c·x plus terms of loops inside x whose
// reach, Σ coefficient·(extent − 1), stays below c for every value of the
// sizes. The coefficients and extents may be symbolic (a split of a split
// of a symbolic loop: x's coefficient 32·floordiv(N + 39, 40), an inner
// loop of extent floordiv(N + 39, 40) with coefficient 8): the difference
// is a polynomial over nonnegative atoms (sizes, loops around x, floordiv
// of such), and it is at least 1 when its constant is and no other
// coefficient is negative.

// polynomial maps a monomial, its atoms' keys joined by '*' in order, to
// its coefficient; "" is the constant.
type polynomial map[string]int64

// polyAtoms names each atom key's expression, for the sign checks.
type polyAtoms map[string]Expr

// maxMonomials bounds an expansion: a binding is a few terms; anything
// larger is not proved.
const maxMonomials = 64

// expand returns e as a polynomial whose atoms are its variables and the
// subexpressions it cannot expand (a floordiv, a min); ok is false for a
// non-integer expression or one too large. isAtom decides which
// non-polynomial subexpressions may be atoms.
func expand(e Expr, atoms polyAtoms) (polynomial, bool) {
	switch e := e.(type) {
	case *Const:
		if !e.DType.IsInt() {
			return nil, false
		}
		return polynomial{"": e.Int}, true
	case *Var:
		atoms[e.Name] = e
		return polynomial{e.Name: 1}, true
	case *Binary:
		switch e.Op {
		case OpAdd, OpSub, OpMul:
			a, ok1 := expand(e.A, atoms)
			b, ok2 := expand(e.B, atoms)
			if !ok1 || !ok2 {
				return nil, false
			}
			switch e.Op {
			case OpAdd:
				return a.plus(b, 1)
			case OpSub:
				return a.plus(b, -1)
			}
			return a.times(b)
		}
	}
	if !e.Type().IsInt() {
		return nil, false
	}
	key := Print(e)
	atoms[key] = e
	return polynomial{key: 1}, true
}

func (p polynomial) plus(q polynomial, s int64) (polynomial, bool) {
	out := polynomial{}
	for k, c := range p {
		out[k] += c
	}
	for k, c := range q {
		out[k] += s * c
	}
	for k, c := range out {
		if c == 0 && k != "" {
			delete(out, k)
		}
	}
	return out, len(out) <= maxMonomials
}

func (p polynomial) times(q polynomial) (polynomial, bool) {
	if len(p)*len(q) > maxMonomials {
		return nil, false
	}
	out := polynomial{}
	for k1, c1 := range p {
		for k2, c2 := range q {
			out[monomial(k1, k2)] += c1 * c2
		}
	}
	return out.plus(nil, 1)
}

// monomial multiplies two monomials' keys.
func monomial(a, b string) string {
	var parts []string
	for _, k := range []string{a, b} {
		if k != "" {
			parts = append(parts, strings.Split(k, "*")...)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "*")
}

// factors returns a monomial's atom keys.
func factors(m string) []string {
	if m == "" {
		return nil
	}
	return strings.Split(m, "*")
}

// ownsBySpan reports whether binding gives each iteration of loop x its
// own values (see the file comment). inner reports whether a variable is
// x or a loop inside x; extent returns such a loop's extent (nil when it
// is no loop, or one whose start is not a constant: its values would not
// shift alike for every iteration of x). Every variable of the binding
// must count from 0 or more (see nonnegative).
func ownsBySpan(binding Expr, x string, inner func(string) bool, extent func(string) Expr) bool {
	atoms := polyAtoms{}
	p, ok := expand(binding, atoms)
	if !ok {
		return false
	}
	coef := polynomial{} // of x
	span := polynomial{}
	for m, c := range p {
		var movers []string
		var rest []string
		for _, f := range factors(m) {
			if inner(f) {
				movers = append(movers, f)
			} else {
				rest = append(rest, f)
			}
		}
		switch {
		case len(movers) == 0:
			continue // the loops around x and the sizes: the same for every iteration
		case len(movers) > 1:
			return false // a product of two moving loops
		}
		term := polynomial{strings.Join(rest, "*"): c}
		if movers[0] == x {
			coef, _ = coef.plus(term, 1)
			continue
		}
		ext := extent(movers[0])
		if ext == nil {
			return false
		}
		e, ok := expand(ext, atoms)
		if !ok {
			return false
		}
		for em := range e {
			if slices.ContainsFunc(factors(em), inner) {
				return false // its extent moves with x: a triangle's row
			}
		}
		reach, ok := term.times(e.minusOne())
		if !ok {
			return false
		}
		if span, ok = span.plus(reach, 1); !ok {
			return false
		}
		// A coefficient of either sign moves the values either way: its
		// reach counts as its size, so a negative one is not proved.
		if !nonnegative(term, atoms) {
			return false
		}
	}
	if len(coef) == 0 || !nonnegative(coef, atoms) {
		return false
	}
	// An atom other than a variable (a floordiv) must not move with x or
	// the loops in it: it would move the values in steps no span tells.
	// Nor may an inner loop's extent.
	for _, a := range atoms {
		if _, isVar := a.(*Var); isVar {
			continue
		}
		moves := false
		Inspect(a, func(n Node) bool {
			if y, ok := n.(*Var); ok && inner(y.Name) {
				moves = true
			}
			return !moves
		})
		if moves {
			return false
		}
	}
	// coef − span ≥ 1 for all values of the atoms.
	d, ok := coef.plus(span, -1)
	if !ok {
		return false
	}
	d, _ = d.plus(polynomial{"": 1}, -1)
	return nonnegative(d, atoms)
}

func (p polynomial) minusOne() polynomial {
	out, _ := p.plus(polynomial{"": 1}, -1)
	return out
}

// nonnegative reports whether p is at least 0 for every value of its
// atoms that the IR allows: every coefficient nonnegative, every atom
// nonnegative (a variable: a size or a loop from 0; a floordiv of a
// nonnegative polynomial by a positive constant).
func nonnegative(p polynomial, atoms polyAtoms) bool {
	for m, c := range p {
		if c < 0 {
			return false
		}
		for _, f := range factors(m) {
			if !nonnegativeAtom(atoms[f], atoms) {
				return false
			}
		}
	}
	return true
}

func nonnegativeAtom(a Expr, atoms polyAtoms) bool {
	switch a := a.(type) {
	case *Var:
		return true // sizes and loop variables count from 0
	case *Binary:
		if a.Op != OpFloorDiv {
			return false
		}
		d, ok := ConstIntValue(a.B)
		if !ok || d <= 0 {
			return false
		}
		n, ok := expand(a.A, atoms)
		return ok && nonnegative(n, atoms)
	}
	return false
}

// DisjointAcross reports whether different iterations of loop x access
// different elements of buf in block b: every load and store of buf in
// b's own statements is at the same indices, and one of them is a spatial
// iteration variable of b whose binding takes a different value in each
// iteration of x while the loops around x hold theirs (see the file
// comment). loops are the loops around b, outermost first; x is one of
// them. A dependence of b on itself through buf is then never carried by
// x, whatever the polyhedral model (which cannot hold a binding with a
// symbolic coefficient) says.
func DisjointAcross(b *ScheduleBlock, loops []*For, x *For, buf *Buffer) bool {
	k := slices.Index(loops, x)
	if k < 0 {
		return false
	}
	var indices []Expr
	same := true
	visit := func(n Node) bool {
		var idx []Expr
		switch n := n.(type) {
		case *ScheduleBlock:
			return false // a nested block's accesses are its own
		case *Load:
			if n.Buffer != buf {
				return true
			}
			idx = n.Indices
		case *Store:
			if n.Buffer != buf {
				return true
			}
			idx = n.Indices
		default:
			return true
		}
		if indices == nil {
			indices = idx
		} else if len(idx) != len(indices) || !slices.EqualFunc(idx, indices, func(a, b Expr) bool { return Equal(a, b) }) {
			same = false
		}
		return same
	}
	for _, s := range []Stmt{b.Init, b.Body} {
		if !isNilStmt(s) {
			Inspect(s, visit)
		}
	}
	if !same || indices == nil {
		return false
	}
	byName := map[string]*For{}
	for _, l := range loops {
		byName[l.Var.Name] = l
	}
	inner := func(name string) bool {
		l := byName[name]
		return l != nil && slices.Index(loops, l) >= k
	}
	extent := func(name string) Expr {
		if l := byName[name]; l != nil {
			return Simplify(l.Extent)
		}
		return nil
	}
	for _, idx := range indices {
		v, ok := idx.(*Var)
		if !ok {
			continue
		}
		it := b.IterVarByName(v.Name)
		if it == nil || it.Kind != Spatial {
			continue
		}
		fromZero := true
		Inspect(it.Binding, func(n Node) bool {
			if y, ok := n.(*Var); ok {
				if l := byName[y.Name]; l != nil {
					m, ok := ConstIntValue(Simplify(l.Min))
					fromZero = fromZero && ok && m >= 0
				}
			}
			return fromZero
		})
		if fromZero && ownsBySpan(Simplify(it.Binding), x.Var.Name, inner, extent) {
			return true
		}
	}
	return false
}
