package poly

import (
	"fmt"
	"slices"
	"strings"
)

// Aff is an affine function of the parameters divided by a positive
// integer: (Σ Coefs[i]·Params[i] + Const) / Div. Where it serves as a
// lower bound it is rounded up, as an upper bound down.
type Aff struct {
	Params []string
	Coefs  []Int
	Const  Int
	Div    Int
}

// IsConst reports whether a does not depend on the parameters.
func (a Aff) IsConst() bool {
	for _, c := range a.Coefs {
		if !c.IsZero() {
			return false
		}
	}
	return true
}

// Eval returns a at the given parameter values, rounded up if ceil and down
// otherwise.
func (a Aff) Eval(params []int64, ceil bool) Int {
	v := a.Const
	for i, c := range a.Coefs {
		if !c.IsZero() {
			v = v.Add(c.Mul(IntOf(params[i])))
		}
	}
	if ceil {
		return v.CeilDiv(a.Div)
	}
	return v.FloorDiv(a.Div)
}

func (a Aff) format(ceil bool) string {
	r := newRow(len(a.Params))
	r[0] = a.Const
	copy(r[1:], a.Coefs)
	s := formatLinear(r, a.Params)
	if a.Div.IsOne() {
		return s
	}
	if ceil {
		return "ceil((" + s + ")/" + a.Div.String() + ")"
	}
	return "floor((" + s + ")/" + a.Div.String() + ")"
}

// Bound is the least or the greatest value a dimension takes over a set,
// as a function of the set's parameters. A lower bound is the minimum, over
// Parts, of the maximum of each part's pieces (each rounded up); an upper
// bound is the maximum, over Parts, of the minimum of each part's pieces
// (each rounded down). For a set that is a single convex piece there is one
// part, and a lower bound such as max(0, N - 4) has two pieces.
type Bound struct {
	Lower     bool
	Parts     [][]Aff
	Empty     bool // the set is empty: there is no value
	Unbounded bool // no finite bound exists, or none was found (see maxShadowRows)
	// Exact is true when the bound is attained, for every parameter value
	// at which the set is not empty. An inexact bound is still valid (no
	// point lies beyond it) but may be loose: for instance when the
	// elimination was not exact, or when the set is a union with
	// parameters, whose parts may be empty at some parameter values.
	Exact bool
}

// Constant returns the bound's value if it does not depend on the
// parameters.
func (b Bound) Constant() (Int, bool) {
	if b.Empty || b.Unbounded {
		return Int{}, false
	}
	var out Int
	for i, part := range b.Parts {
		var v Int
		for j, a := range part {
			if !a.IsConst() {
				return Int{}, false
			}
			x := a.Eval(nil, b.Lower)
			if j == 0 || (b.Lower && x.Cmp(v) > 0) || (!b.Lower && x.Cmp(v) < 0) {
				v = x
			}
		}
		if i == 0 || (b.Lower && v.Cmp(out) < 0) || (!b.Lower && v.Cmp(out) > 0) {
			out = v
		}
	}
	return out, true
}

// Eval returns the bound at the given parameter values.
func (b Bound) Eval(params []int64) (Int, bool) {
	if b.Empty || b.Unbounded {
		return Int{}, false
	}
	var out Int
	for i, part := range b.Parts {
		var v Int
		for j, a := range part {
			x := a.Eval(params, b.Lower)
			if j == 0 || (b.Lower && x.Cmp(v) > 0) || (!b.Lower && x.Cmp(v) < 0) {
				v = x
			}
		}
		if i == 0 || (b.Lower && v.Cmp(out) < 0) || (!b.Lower && v.Cmp(out) > 0) {
			out = v
		}
	}
	return out, true
}

// String returns the bound as an expression: "0", "N - 1",
// "max(0, N - 4)", "min(max(...), ...)".
func (b Bound) String() string {
	switch {
	case b.Empty:
		return "empty"
	case b.Unbounded && b.Lower:
		return "-inf"
	case b.Unbounded:
		return "+inf"
	}
	if c, ok := b.Constant(); ok {
		return c.String()
	}
	inner, outer := "min", "max"
	if b.Lower {
		inner, outer = "max", "min"
	}
	var parts []string
	for _, part := range b.Parts {
		var ps []string
		for _, a := range part {
			ps = append(ps, a.format(b.Lower))
		}
		slices.Sort(ps)
		ps = slices.Compact(ps)
		if len(ps) == 1 {
			parts = append(parts, ps[0])
		} else {
			parts = append(parts, inner+"("+strings.Join(ps, ", ")+")")
		}
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	if len(parts) == 1 {
		return parts[0]
	}
	return outer + "(" + strings.Join(parts, ", ") + ")"
}

// DimBounds returns the least and the greatest value of dimension d over
// s, as functions of s's parameters (see Bound). Elimination of the other
// dimensions is exact where Fourier-Motzkin is exact over the integers;
// elsewhere the bounds are valid but marked inexact, except that a bound
// independent of the parameters of a set without parameters is always made
// exact by searching with emptiness tests.
func (s Set) DimBounds(d int) (lo, hi Bound) {
	if d < 0 || d >= len(s.Dims) {
		panic(fmt.Sprintf("poly.Set.DimBounds: dimension %d of %d", d, len(s.Dims)))
	}
	return s.dimBoundsIn(d, nil)
}

// dimBoundsIn is DimBounds within the work e has left (nil: no bound),
// which its emptiness tests spend. Once e is spent, an undecided test
// counts as a point, so the bounds stay valid but may be left inexact.
func (s Set) dimBoundsIn(d int, e *effort) (lo, hi Bound) {
	lo, hi = Bound{Lower: true, Empty: true, Exact: true}, Bound{Empty: true, Exact: true}
	nonEmpty := 0
	for _, b := range s.parts {
		if b.isEmptyIn(e) {
			continue
		}
		nonEmpty++
		l, h, exact := b.dimPieces(d, s.Params)
		lo.merge(l, exact)
		hi.merge(h, exact)
	}
	if nonEmpty > 1 && len(s.Params) > 0 {
		// Each part's bound holds where that part is not empty, which may
		// depend on the parameters: the combination is valid but may not
		// be attained.
		lo.Exact, hi.Exact = false, false
	}
	if len(s.Params) == 0 {
		lo = s.tighten(d, lo, e)
		hi = s.tighten(d, hi, e)
	}
	return lo, hi
}

// merge adds the pieces of one basic set (nil pieces: unbounded).
func (b *Bound) merge(pieces []Aff, exact bool) {
	b.Empty = false
	b.Exact = b.Exact && exact
	if pieces == nil {
		b.Unbounded, b.Parts = true, nil
		return
	}
	if !b.Unbounded {
		b.Parts = append(b.Parts, pieces)
	}
}

// tighten makes a constant bound of a parameter-free set exact: the true
// extreme lies between the bound and a sample point, and emptiness tests
// find it by bisection, within the work e has left (nil: no bound).
func (s Set) tighten(d int, b Bound, e *effort) Bound {
	c, ok := b.Constant()
	if !ok || b.Exact {
		return b
	}
	_, dims, ok := s.sampleIn(e)
	if !ok {
		return b
	}
	// Find the extreme v in [c, sample] (lower) or [sample, c] (upper): the
	// first v with a point at or beyond it. A test the solver cannot decide
	// counts as "a point beyond", which keeps the bound valid but no longer
	// exact.
	decided := true
	beyond := func(v Int) bool { // some point has dim d <= v (lower) or >= v (upper)
		r := newRow(len(s.Dims))
		if b.Lower {
			r[0], r[d+1] = v, IntOf(-1) // v - x_d >= 0
		} else {
			r[0], r[d+1] = v.Neg(), IntOf(1) // x_d - v >= 0
		}
		empty, ok := Intersect(s, s.withConstraint(r)).decideIn(e)
		decided = decided && ok
		return !empty
	}
	lo, hi := c, dims[d]
	if !b.Lower {
		lo, hi = dims[d], c
	}
	for lo.Cmp(hi) < 0 {
		if b.Lower {
			mid := lo.Add(hi).FloorDiv(IntOf(2))
			if beyond(mid) {
				hi = mid
			} else {
				lo = mid.Add(IntOf(1))
			}
		} else {
			mid := lo.Add(hi).Add(IntOf(1)).FloorDiv(IntOf(2))
			if beyond(mid) {
				lo = mid
			} else {
				hi = mid.Sub(IntOf(1))
			}
		}
	}
	return Bound{Lower: b.Lower, Parts: [][]Aff{{{Const: lo, Div: IntOf(1)}}}, Exact: decided}
}

// ConstUpper returns a constant that upper bound b never exceeds, when
// each of its parts has a constant piece: the greatest over the parts of
// their least constant piece. (min(4, N, (N + 4)/2) gives 4: a tile's
// width, which pieces in the sizes only tighten where a size is small.)
func (b Bound) ConstUpper() (int64, bool) {
	if b.Lower || b.Empty || b.Unbounded || len(b.Parts) == 0 {
		return 0, false
	}
	var out int64
	for i, part := range b.Parts {
		least, found := int64(0), false
		for _, a := range part {
			if !a.IsConst() || a.Div.Sign() <= 0 {
				continue
			}
			c, ok := a.Const.FloorDiv(a.Div).Int64()
			if ok && (!found || c < least) {
				least, found = c, true
			}
		}
		if !found {
			return 0, false
		}
		if i == 0 || least > out {
			out = least
		}
	}
	return out, true
}

// ParamsAtLeast returns the part of s where every parameter is at least
// v: with v = 1, the sizes at which every loop over a size runs.
func (s Set) ParamsAtLeast(v int64) Set {
	b := newBasic(len(s.Params), 0, len(s.Dims))
	for p := range s.Params {
		b.addIneq(unitRow(b.nVars(), p, IntOf(-v)))
	}
	return Intersect(s, Set{Params: s.Params, Name: s.Name, Dims: s.Dims, parts: []*basic{b}})
}

// withConstraint returns the universe of s's space cut by r >= 0 (r over
// the dimensions only).
func (s Set) withConstraint(r row) Set {
	b := newBasic(len(s.Params), 0, len(s.Dims))
	full := newRow(b.nVars())
	full[0] = r[0]
	copy(full[1+len(s.Params):], r[1:])
	b.addIneq(full)
	return Set{Params: s.Params, Name: s.Name, Dims: s.Dims, parts: []*basic{b}}
}

// maxShadowRows bounds the inequalities one elimination step of
// dimPieces may make (before duplicates are dropped). Fourier-Motzkin
// multiplies them, each step up to the square of the last; a nest of
// fused and floor-divided copy loops (a convolution's shared-memory fetch)
// grew to 100 000 rows and gigabytes in one distance. Past the bound the
// dimension counts as unbounded and inexact, which every caller takes as
// "not known".
const maxShadowRows = 16384

// dimPieces eliminates every variable of b but the parameters and output
// dimension d, and returns the lower and upper bound pieces of d (nil for
// an unbounded side), and whether the elimination was exact.
func (b *basic) dimPieces(d int, params []string) (lower, upper []Aff, exact bool) {
	s := &system{n: b.nVars(), eqs: slices.Clone(b.eqs), ineqs: slices.Clone(b.ineqs)}
	keep := b.outVar(d)
	// cols[i] is the original variable of column i of s.
	cols := make([]int, s.n)
	for i := range cols {
		cols[i] = i
	}
	exact = true
	eliminate := func(k int) {
		// Substitute through an equality with a unit coefficient if any.
		for i, e := range s.eqs {
			if a := e.coef(k); a.Abs().IsOne() {
				sub := e.scaled(a.Neg())
				sub[k+1] = Int{}
				t := &system{n: s.n - 1}
				for j, r := range s.eqs {
					if j != i {
						t.eqs = append(t.eqs, r.substitute(k, sub))
					}
				}
				for _, r := range s.ineqs {
					t.ineqs = append(t.ineqs, r.substitute(k, sub))
				}
				s = t
				return
			}
		}
		// Other equalities with k become pairs of inequalities (losing the
		// stride, so the result may be inexact).
		var eqs []row
		for _, e := range s.eqs {
			if e.coef(k).IsZero() {
				eqs = append(eqs, e)
			} else {
				exact = false
				s.ineqs = append(s.ineqs, e, e.scaled(IntOf(-1)))
			}
		}
		s.eqs = eqs
		lower, upper, rest := s.bounds(k)
		if _, ok := exactShadow(lower, upper, k); !ok {
			exact = false
		}
		t := &system{n: s.n - 1}
		for _, r := range s.eqs {
			t.eqs = append(t.eqs, r.dropCol(k))
		}
		for _, r := range rest {
			t.ineqs = append(t.ineqs, r.dropCol(k))
		}
		if len(t.ineqs)+len(lower)*len(upper) > maxShadowRows {
			s = nil // would grow past use: see maxShadowRows
			return
		}
		t.ineqs = append(t.ineqs, shadow(lower, upper, k, nil)...)
		if n, ok := t.normalized(); ok {
			t = n
		}
		s = t
	}
	for k := s.n - 1; k >= 0; k-- {
		if cols[k] < b.nParam || cols[k] == keep {
			continue
		}
		eliminate(k)
		if s == nil {
			return nil, nil, false // unbounded: valid, if useless
		}
		cols = slices.Delete(cols, k, k+1)
	}
	// Now the columns are the parameters and then d.
	x := len(params)
	piece := func(r row, a Int, lowerSide bool) Aff {
		// a x_d + rest >= 0 (a > 0): x_d >= -rest/a; -b x_d + rest >= 0:
		// x_d <= rest/b.
		sign := IntOf(1)
		if lowerSide {
			sign = IntOf(-1)
		}
		out := Aff{Params: params, Coefs: make([]Int, len(params)), Const: r[0].Mul(sign), Div: a.Abs()}
		for i := range params {
			out.Coefs[i] = r.coef(i).Mul(sign)
		}
		return out.reduced()
	}
	for _, e := range s.eqs {
		if a := e.coef(x); !a.IsZero() {
			// a x_d + rest = 0: both bounds at -rest/a (rounded alike when
			// the set has the point).
			r := e
			if a.Sign() < 0 {
				r, a = e.scaled(IntOf(-1)), a.Neg()
			}
			lower = append(lower, piece(r, a, true))
			upper = append(upper, piece(r, a, true))
		}
	}
	var context []row // constraints on the parameters alone
	for _, r := range s.ineqs {
		switch a := r.coef(x); a.Sign() {
		case 1:
			lower = append(lower, piece(r, a, true))
		case -1:
			upper = append(upper, piece(r, a, false))
		default:
			context = append(context, r.dropCol(x))
		}
	}
	for _, e := range s.eqs {
		if e.coef(x).IsZero() {
			context = append(context, e.dropCol(x), e.dropCol(x).scaled(IntOf(-1)))
		}
	}
	return prunePieces(lower, context, true), prunePieces(upper, context, false), exact
}

// prunePieces drops the pieces that another piece dominates wherever the
// parameters satisfy the context: for a lower bound (a maximum) a piece
// never above another, for an upper bound (a minimum) one never below.
func prunePieces(pieces []Aff, context []row, lower bool) []Aff {
	if len(pieces) < 2 {
		return pieces
	}
	if noParams(pieces) {
		return pruneConstPieces(pieces, context, lower)
	}
	return prunePiecesSolved(pieces, context, lower)
}

// noParams reports whether the pieces are over no parameters (constants:
// the bounds of a set without any, as withoutLocals asks of a local).
func noParams(pieces []Aff) bool {
	for _, a := range pieces {
		if len(a.Params) != 0 {
			return false
		}
	}
	return true
}

// pruneConstPieces is prunePiecesSolved for constant pieces, whose context
// rows are constants too: it keeps the first of the most extreme pieces
// (the first piece alone when the context holds nowhere), without a
// solver's question per pair. Eliminating many variables leaves thousands
// of constant pieces, whose pairs took minutes.
func pruneConstPieces(pieces []Aff, context []row, lower bool) []Aff {
	for _, r := range context {
		if r[0].Sign() < 0 {
			return pieces[:1]
		}
	}
	best := 0
	for i, a := range pieces[1:] {
		b := pieces[best]
		// a/da > b/db (a maximum), a/da < b/db (a minimum).
		c := b.Div.Mul(a.Const).Cmp(a.Div.Mul(b.Const))
		if lower && c > 0 || !lower && c < 0 {
			best = i + 1
		}
	}
	return pieces[best : best+1]
}

// prunePiecesSolved is prunePieces by a solver's question per pair.
func prunePiecesSolved(pieces []Aff, context []row, lower bool) []Aff {
	// a/da > b/db somewhere in the context, i.e. db*A - da*B >= 1 (for a
	// maximum; reversed for a minimum).
	exceeds := func(a, b Aff) bool {
		r := newRow(len(a.Params))
		r[0] = b.Div.Mul(a.Const).Sub(a.Div.Mul(b.Const))
		for i := range a.Params {
			r[i+1] = b.Div.Mul(a.Coefs[i]).Sub(a.Div.Mul(b.Coefs[i]))
		}
		if !lower {
			r = r.scaled(IntOf(-1))
		}
		r[0] = r[0].Sub(IntOf(1))
		s := &system{n: len(a.Params), ineqs: append(slicesClone(context), r)}
		_, ok := s.sample()
		return ok
	}
	keep := make([]bool, len(pieces))
	for i := range pieces {
		keep[i] = true
	}
	for i, a := range pieces {
		for j, b := range pieces {
			if i == j || !keep[j] {
				continue
			}
			// Drop a if b is at least as extreme everywhere (ties: keep the
			// earlier one).
			if !exceeds(a, b) && (exceeds(b, a) || j < i) {
				keep[i] = false
				break
			}
		}
	}
	var out []Aff
	for i, a := range pieces {
		if keep[i] {
			out = append(out, a)
		}
	}
	return out
}

func slicesClone(rs []row) []row { return append([]row(nil), rs...) }

// reduced divides a through by the gcd of its coefficients, constant and
// divisor where that changes nothing of its rounding.
func (a Aff) reduced() Aff {
	g := a.Div
	for _, c := range a.Coefs {
		g = Gcd(g, c)
	}
	g = Gcd(g, a.Const)
	if g.IsZero() || g.IsOne() {
		return a
	}
	out := Aff{Params: a.Params, Coefs: make([]Int, len(a.Coefs)), Const: a.Const.ExactDiv(g), Div: a.Div.ExactDiv(g)}
	for i, c := range a.Coefs {
		out.Coefs[i] = c.ExactDiv(g)
	}
	return out
}

// Range is the interval of values of one dimension: from Lo to Hi.
type Range struct{ Lo, Hi Bound }

// Hull returns the bounds of every dimension of s: the smallest box with
// faces parallel to the axes that contains s.
func (s Set) Hull() []Range {
	out := make([]Range, len(s.Dims))
	for d := range s.Dims {
		out[d].Lo, out[d].Hi = s.DimBounds(d)
	}
	return out
}

// ImageHull returns the box around the image of s under m: for an access
// relation and a set of iterations, the rectangular region of the buffer
// that the iterations touch.
func ImageHull(s Set, m Map) []Range { return Apply(s, m).Hull() }
