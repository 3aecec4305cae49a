package poly

import (
	"errors"
	"fmt"
	"slices"
)

// Set is a finite union of basic sets: integer tuples, over named symbolic
// parameters, that satisfy affine constraints with possibly some
// existentially quantified variables. In text form (see ParseSet):
//
//	[S1] -> { A[i, j] : 0 <= i < S1 and 0 <= j <= i }
//
// Name is an optional tuple name (loom uses the block's name). Sets are
// values: operations return new sets and never change their operands.
type Set struct {
	Params []string
	Name   string
	Dims   []string
	parts  []*basic
}

// Map is a finite union of basic relations between an input tuple and an
// output tuple, over named parameters:
//
//	[N] -> { S[i] -> A[a] : a = i + 1 and 0 <= i < N }
type Map struct {
	Params  []string
	InName  string
	In      []string
	OutName string
	Out     []string
	parts   []*basic
}

// Universe returns the set of all integer tuples with the given dimensions.
func Universe(params []string, name string, dims ...string) Set {
	return Set{Params: params, Name: name, Dims: dims, parts: []*basic{newBasic(len(params), 0, len(dims))}}
}

// UniverseMap returns the relation between every pair of tuples.
func UniverseMap(params []string, inName string, in []string, outName string, out []string) Map {
	return Map{Params: params, InName: inName, In: in, OutName: outName, Out: out,
		parts: []*basic{newBasic(len(params), len(in), len(out))}}
}

// NumParts returns the number of basic sets in the union.
func (s Set) NumParts() int { return len(s.parts) }

// IsEmpty reports whether s has no integer point, for any parameter values.
// The test is exact, but for systems too hard to decide within the Omega
// test's step budget (dense constraints with large coefficients, which loop
// nests do not produce): those count as non-empty, the cautious answer for
// every question loom asks.
func (s Set) IsEmpty() bool {
	for _, b := range s.parts {
		if !b.isEmpty() {
			return false
		}
	}
	return true
}

// decideIn reports whether s is empty, and whether the solver decided it
// within its budget and the work e has left (nil: no bound beyond the
// budget); when it did not, empty is false.
func (s Set) decideIn(e *effort) (empty, decided bool) {
	decided = true
	for _, b := range s.parts {
		x, ok := b.sampleIn(e)
		if ok && x != nil {
			return false, true
		}
		if ok {
			decided = false
		}
	}
	return decided, decided
}

// IsEmpty reports whether m relates no pair of tuples, for any parameter
// values.
func (m Map) IsEmpty() bool { return Set{parts: m.parts}.IsEmpty() }

// Sample returns the values of the parameters and dimensions of some point
// of s, and false if s is empty. It also returns false, rarely, for a
// non-empty set too hard to decide (see IsEmpty), so false alone does not
// prove emptiness: ask IsEmpty for that.
func (s Set) Sample() (params, dims []Int, ok bool) { return s.sampleIn(nil) }

// sampleIn is Sample within the work e has left (nil: no bound).
func (s Set) sampleIn(e *effort) (params, dims []Int, ok bool) {
	for _, b := range s.parts {
		if x, ok := b.sampleIn(e); ok && x != nil {
			return x[:b.nParam], x[b.nParam : b.nParam+b.nOut], true
		}
	}
	return nil, nil, false
}

// Sample returns the values of the parameters, inputs and outputs of some
// pair in m, and false if m is empty (or, like Set.Sample, too hard to
// decide).
func (m Map) Sample() (params, in, out []Int, ok bool) {
	for _, b := range m.parts {
		if x, ok := b.sample(); ok && x != nil {
			return x[:b.nParam], x[b.nParam : b.nParam+b.nIn], x[b.nParam+b.nIn : b.nParam+b.nIn+b.nOut], true
		}
	}
	return nil, nil, nil, false
}

// alignParams returns a's and b's parts over the union of their parameter
// names (a's first, then b's new ones), and that union.
func alignParams(pa []string, a []*basic, pb []string, b []*basic) ([]string, []*basic, []*basic) {
	if slices.Equal(pa, pb) {
		return pa, a, b
	}
	params := slices.Clone(pa)
	for _, p := range pb {
		if !slices.Contains(params, p) {
			params = append(params, p)
		}
	}
	return params, withParams(a, pa, params), withParams(b, pb, params)
}

// withParams re-expresses parts over params, a superset of from.
func withParams(parts []*basic, from, params []string) []*basic {
	out := make([]*basic, len(parts))
	for i, b := range parts {
		c := b.insertVars(b.nParam, len(params)-len(from))
		c.nParam = len(params)
		// Now the first len(from) columns are from's, the next are new; put
		// each old parameter at its place in params.
		perm := make([]int, c.nVars())
		next := len(from)
		for j, p := range params {
			if k := slices.Index(from, p); k >= 0 {
				perm[j] = k
			} else {
				perm[j] = next
				next++
			}
		}
		for v := len(params); v < c.nVars(); v++ {
			perm[v] = v
		}
		out[i] = c.permute(perm)
	}
	return out
}

func checkDims(op string, a, b int) {
	if a != b {
		panic(fmt.Sprintf("poly.%s: %d dimensions against %d", op, a, b))
	}
}

// Intersect returns the points in both a and b, which must have the same
// number of dimensions (their names and tuple names are a's). Parameters are
// matched by name. Intersect panics if the dimension counts differ.
func Intersect(a, b Set) Set {
	checkDims("Intersect", len(a.Dims), len(b.Dims))
	params, pa, pb := alignParams(a.Params, a.parts, b.Params, b.parts)
	out := Set{Params: params, Name: a.Name, Dims: a.Dims}
	for _, x := range pa {
		for _, y := range pb {
			if c := x.intersect(y).simplify(); !c.trivial() {
				out.parts = append(out.parts, c)
			}
		}
	}
	return out
}

// Union returns the points in a or b, which must have the same number of
// dimensions. Union panics if the dimension counts differ.
func Union(a, b Set) Set {
	checkDims("Union", len(a.Dims), len(b.Dims))
	params, pa, pb := alignParams(a.Params, a.parts, b.Params, b.parts)
	return Set{Params: params, Name: a.Name, Dims: a.Dims, parts: append(slices.Clone(pa), pb...)}
}

// IntersectMap returns the pairs in both a and b, which must have the same
// numbers of input and output dimensions.
func IntersectMap(a, b Map) Map {
	checkDims("IntersectMap", len(a.In), len(b.In))
	checkDims("IntersectMap", len(a.Out), len(b.Out))
	params, pa, pb := alignParams(a.Params, a.parts, b.Params, b.parts)
	out := a.withParts(params, nil)
	for _, x := range pa {
		for _, y := range pb {
			if c := x.intersect(y).simplify(); !c.trivial() {
				out.parts = append(out.parts, c)
			}
		}
	}
	return out
}

// UnionMap returns the pairs in a or b.
func UnionMap(a, b Map) Map {
	checkDims("UnionMap", len(a.In), len(b.In))
	checkDims("UnionMap", len(a.Out), len(b.Out))
	params, pa, pb := alignParams(a.Params, a.parts, b.Params, b.parts)
	return a.withParts(params, append(slices.Clone(pa), pb...))
}

func (m Map) withParts(params []string, parts []*basic) Map {
	c := m
	c.Params, c.parts = params, parts
	return c
}

// trivial reports whether normalization already found b empty.
func (b *basic) trivial() bool {
	return len(b.eqs) == 1 && len(b.ineqs) == 0 && b.eqs[0].isConst() && !b.eqs[0][0].IsZero()
}

// ProjectOut returns s without the dimensions [first, first+n): a point is
// in the result when some values of those dimensions complete it to a point
// of s. The result is exact; what cannot be eliminated exactly stays as
// existentially quantified variables.
func (s Set) ProjectOut(first, n int) Set {
	out := Set{Params: s.Params, Name: s.Name, Dims: slices.Delete(slices.Clone(s.Dims), first, first+n)}
	for _, b := range s.parts {
		out.parts = append(out.parts, b.outToLocals(first, n))
	}
	return out
}

// Apply returns the image of s under m: the outputs of m related to some
// point of s. s must have as many dimensions as m has inputs.
func Apply(s Set, m Map) Set {
	checkDims("Apply", len(s.Dims), len(m.In))
	params, ps, pm := alignParams(s.Params, s.parts, m.Params, m.parts)
	out := Set{Params: params, Name: m.OutName, Dims: m.Out}
	for _, x := range ps {
		// x over [params, dims, locals] -> a relation with x's dims as inputs
		xm := x.clone()
		xm.nIn, xm.nOut = x.nOut, 0
		xm = xm.insertVars(xm.nParam+xm.nIn, len(m.Out))
		xm.nOut = len(m.Out)
		for _, y := range pm {
			if c := xm.intersect(y).inToLocals(); !c.trivial() {
				out.parts = append(out.parts, c)
			}
		}
	}
	return out
}

// Reverse returns m with inputs and outputs swapped.
func (m Map) Reverse() Map {
	out := Map{Params: m.Params, InName: m.OutName, In: m.Out, OutName: m.InName, Out: m.In}
	for _, b := range m.parts {
		c := b.permute(b.outsFirst())
		c.nIn, c.nOut = b.nOut, b.nIn
		out.parts = append(out.parts, c)
	}
	return out
}

// Range returns the outputs of m related to some input.
func (m Map) Range() Set {
	out := Set{Params: m.Params, Name: m.OutName, Dims: m.Out}
	for _, b := range m.parts {
		out.parts = append(out.parts, b.inToLocals())
	}
	return out
}

// Domain returns the inputs of m related to some output.
func (m Map) Domain() Set { return m.Reverse().Range() }

// Wrap returns m as a set of tuples (inputs followed by outputs).
func (m Map) Wrap() Set {
	name := m.InName + "_" + m.OutName // a name the text form can spell
	if m.InName == "" && m.OutName == "" {
		name = ""
	}
	out := Set{Params: m.Params, Name: name, Dims: append(slices.Clone(m.In), m.Out...)}
	for _, b := range m.parts {
		c := b.clone()
		c.nOut, c.nIn = b.nIn+b.nOut, 0
		out.parts = append(out.parts, c)
	}
	return out
}

// IntersectDomain returns the pairs of m whose input is in s.
func IntersectDomain(m Map, s Set) Map {
	checkDims("IntersectDomain", len(m.In), len(s.Dims))
	params, pm, ps := alignParams(m.Params, m.parts, s.Params, s.parts)
	out := m.withParts(params, nil)
	for _, x := range pm {
		for _, y := range ps {
			// y's dims become the map's inputs, with no outputs yet.
			ym := y.clone()
			ym.nIn, ym.nOut = y.nOut, 0
			ym = ym.insertVars(ym.nParam+ym.nIn, len(m.Out))
			ym.nOut = len(m.Out)
			if c := x.intersect(ym).simplify(); !c.trivial() {
				out.parts = append(out.parts, c)
			}
		}
	}
	return out
}

// IntersectRange returns the pairs of m whose output is in s.
func IntersectRange(m Map, s Set) Map { return IntersectDomain(m.Reverse(), s).Reverse() }

// ApplyRange returns the composition {x -> z : x -> y in a and y -> z in b}.
func ApplyRange(a, b Map) Map {
	checkDims("ApplyRange", len(a.Out), len(b.In))
	params, pa, pb := alignParams(a.Params, a.parts, b.Params, b.parts)
	out := Map{Params: params, InName: a.InName, In: a.In, OutName: b.OutName, Out: b.Out}
	for _, x := range pa {
		// x: [P, in, mid, lx] -> [P, in, mid, out, lx]
		xe := x.insertVars(x.nParam+x.nIn+x.nOut, len(b.Out))
		xe.nOut += len(b.Out)
		for _, y := range pb {
			// y: [P, mid, out, ly] -> [P, in, mid, out, ly]
			ye := y.insertVars(y.nParam, len(a.In))
			ye.nIn, ye.nOut = len(a.In), y.nIn+y.nOut
			c := xe.intersect(ye)
			// Project out the middle tuple.
			c.nIn, c.nOut = len(a.In), len(a.Out)+len(b.Out)
			c = c.outToLocals(0, len(a.Out))
			if !c.trivial() {
				out.parts = append(out.parts, c)
			}
		}
	}
	return out
}

// Contains reports whether the point with the given parameter and dimension
// values lies in s. It panics if the numbers of values do not match s.
func (s Set) Contains(params, dims []int64) bool {
	checkDims("Contains", len(params), len(s.Params))
	checkDims("Contains", len(dims), len(s.Dims))
	for _, b := range s.parts {
		if b.nLocal == 0 {
			// Nothing to solve for: evaluate the constraints.
			x := make([]Int, 0, b.nVars())
			for _, v := range params {
				x = append(x, IntOf(v))
			}
			for _, v := range dims {
				x = append(x, IntOf(v))
			}
			if b.system().satisfied(x) {
				return true
			}
			continue
		}
		c := b.clone()
		for i, v := range params {
			c.addEq(unitRow(c.nVars(), i, IntOf(-v)))
		}
		for i, v := range dims {
			c.addEq(unitRow(c.nVars(), c.outVar(i), IntOf(-v)))
		}
		if !c.isEmpty() {
			return true
		}
	}
	return false
}

// unitRow returns the row x_v + c over n variables.
func unitRow(n, v int, c Int) row {
	r := newRow(n)
	r[0] = c
	r[v+1] = IntOf(1)
	return r
}

// ErrUnsupported is returned by operations that cannot answer exactly for
// their input, such as the complement of a set with existential variables.
var ErrUnsupported = errors.New("poly: unsupported")

// Subset reports whether every point of a is in b, for all parameter
// values. It needs the complement of b, which is exact only when b has no
// existentially quantified variables (or only floor divisions of its
// tuple, or few values of them); otherwise, and when the solver gives up
// on a piece of a outside b without finding a point in it, it returns an
// error wrapping ErrUnsupported: false means a has a point outside b.
func Subset(a, b Set) (bool, error) { return subset(a, b, nil) }

// SubsetWithin is Subset with a bound on the solver's work over the whole
// question (the coefficients of every system it visits, summed, as
// maxSolveWork counts them for one emptiness check): past it, the pieces
// not yet decided are kept and the answer is an error wrapping
// ErrUnsupported, never a guess. Subset bounds each emptiness check, not
// their number times their cost: a question whose sets have many
// existential values (a fused loop split three ways over symbolic
// sizes) can ask thousands of checks of half a second each. A caller
// that may go without the answer (the translation validator, whose
// undecided questions only lose a second opinion) bounds the whole.
func SubsetWithin(a, b Set, work int64) (bool, error) {
	return subset(a, b, &effort{left: work})
}

// effort is the solver's work left to one question of several emptiness
// checks; nil means no bound beyond each check's own.
type effort struct{ left int64 }

// spent reports whether e is used up.
func (e *effort) spent() bool { return e != nil && e.left <= 0 }

func subset(a, b Set, e *effort) (bool, error) {
	checkDims("Subset", len(a.Dims), len(b.Dims))
	_, pa, withLocals := alignParams(a.Params, a.parts, b.Params, b.parts)
	var pb []*basic
	for _, x := range withLocals {
		if _, isDiv := x.divDefs(); isDiv && x.nLocal > 0 {
			// Each local is a floor division of the tuple: unique, so
			// the complement keeps it (see constraintPieces).
			pb = append(pb, x)
			continue
		}
		parts, ok := x.withoutLocals(maxLocalValues, e)
		if !ok {
			return false, fmt.Errorf("%w: subset of a set with existential variables that take many values", ErrUnsupported)
		}
		pb = append(pb, parts...)
	}
	// a minus b = a ∩ ¬b1 ∩ ¬b2 ∩ ...; each ¬bi is the union of the
	// negations of bi's constraints, taken disjoint (¬c1, c1 ∧ ¬c2, c1 ∧
	// c2 ∧ ¬c3, ...) so that a point of the rest lands in one piece only.
	// A piece of the rest that bi does not meet stays whole: subtracting
	// the parts of b one by one then cuts only where they are.
	var rest []*basic
	for _, r := range pa {
		if !r.isEmptyIn(e) {
			rest = append(rest, r) // an empty piece meets no part of b
		}
	}
	if len(rest) == 0 {
		return true, nil
	}
	checks := len(pa)
	for _, x := range pb {
		negs, holds := x.constraintPieces()
		var next []*basic
		for _, r := range rest {
			if checks++; checks > maxSubsetChecks {
				return false, fmt.Errorf("%w: subset needs more than %d emptiness checks", ErrUnsupported, maxSubsetChecks)
			}
			if m := r.intersect(x).simplify(); m.trivial() || m.isEmptyIn(e) {
				next = append(next, r)
				continue
			}
			cur := r
			for i := range negs {
				for _, neg := range negs[i] {
					// The pieces of a minus b can multiply with every
					// part of b; past a budget the question is left
					// undecided.
					if checks++; checks > maxSubsetChecks {
						return false, fmt.Errorf("%w: subset needs more than %d emptiness checks", ErrUnsupported, maxSubsetChecks)
					}
					if c := cur.intersect(neg).simplify(); !c.trivial() && !c.isEmptyIn(e) {
						next = append(next, c)
					}
				}
				cur = cur.intersect(holds[i])
			}
		}
		rest = next
		if len(rest) == 0 {
			return true, nil
		}
	}
	// A piece is kept unless the solver proves it empty; one it gave up
	// on may be empty: a not without a point of a outside b would be a
	// guess (and the translation validator would reject a correct step
	// on it).
	for _, r := range rest {
		if x, ok := r.sampleIn(e); ok && x != nil {
			return false, nil
		}
	}
	if e.spent() {
		return false, fmt.Errorf("%w: subset needs more than its bound of the solver's work (%d pieces of a outside b left undecided)", ErrUnsupported, len(rest))
	}
	return false, fmt.Errorf("%w: the solver could not decide whether %d pieces of a outside b are empty", ErrUnsupported, len(rest))
}

// divDefs returns the inequalities of b that define its locals as floor
// divisions, by index among b.ineqs: for each local q a pair e - d·q >= 0
// and d·q - e + d - 1 >= 0 (d > 0), where e has no locals, so that
// q = floor(e / d) for every point. ok is false when some local is defined otherwise, or
// appears in an equality.
func (b *basic) divDefs() (defs map[int]bool, ok bool) {
	defs = map[int]bool{}
	for _, r := range b.eqs {
		if b.involvesLocals(r) {
			return nil, false
		}
	}
	for l := 0; l < b.nLocal; l++ {
		v := b.localVar(l)
		found := false
		for i, r1 := range b.ineqs {
			d := r1.coef(v).Neg()
			if d.Sign() <= 0 || defs[i] || !b.onlyLocal(r1, v) {
				continue
			}
			for j, r2 := range b.ineqs {
				if j == i || defs[j] || !r2.coef(v).Equal(d) || !b.onlyLocal(r2, v) {
					continue
				}
				// r1 + r2 must be the constant d - 1: then exactly one q
				// satisfies both, for every point (a tighter pair leaves
				// points without one, which the complement would lose).
				sum := combine(IntOf(1), r1, IntOf(1), r2)
				if sum.isConst() && sum[0].Equal(d.Sub(IntOf(1))) {
					defs[i], defs[j], found = true, true, true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return defs, true
}

// onlyLocal reports whether local variable v is the only local r uses.
func (b *basic) onlyLocal(r row, v int) bool {
	for l := 0; l < b.nLocal; l++ {
		if w := b.localVar(l); w != v && !r.coef(w).IsZero() {
			return false
		}
	}
	return true
}

// maxSubsetChecks bounds the emptiness checks of one Subset.
const maxSubsetChecks = 4096

// maxLocalValues bounds how many basic sets withoutLocals may split one
// into.
const maxLocalValues = 256

// withoutLocals returns basic sets without existential variables whose
// union is b: each local is replaced by each value it can take, when
// their number (from its bounds over all of b's variables) stays within
// limit in all (e bounds the emptiness checks that drop the values no
// point takes). A floor division's quotient over a bounded range (the row
// of a fused and split loop) takes few.
func (b *basic) withoutLocals(limit int, e *effort) ([]*basic, bool) {
	if b.nLocal == 0 {
		return []*basic{b}, true
	}
	k := b.localVar(b.nLocal - 1)
	// Valid bounds suffice (a value no point takes gives an empty set,
	// dropped below): the eliminated ones first, exact ones (a search by
	// emptiness tests) only when those leave too many values.
	all := b.allDims()
	l64, h64, ok := localRange(all.parts[0].dimPieces(k, nil))
	if !ok || h64-l64 >= int64(limit) {
		lo, hi := all.dimBoundsIn(k, e)
		if lo.Empty || hi.Empty {
			return nil, true
		}
		l64, h64, ok = constRange(lo, hi)
		if !ok || h64-l64 >= int64(limit) {
			return nil, false
		}
	}
	if h64 < l64 {
		return nil, true
	}
	n := int(h64 - l64 + 1)
	var out []*basic
	for c := l64; c <= h64; c++ {
		value := newRow(b.nVars())
		value[0] = IntOf(c)
		v := &basic{nParam: b.nParam, nIn: b.nIn, nOut: b.nOut, nLocal: b.nLocal - 1}
		for _, r := range b.eqs {
			v.eqs = append(v.eqs, r.substitute(k, value))
		}
		for _, r := range b.ineqs {
			v.ineqs = append(v.ineqs, r.substitute(k, value))
		}
		v = v.simplify()
		if v.isEmptyIn(e) {
			continue
		}
		parts, ok := v.withoutLocals(limit/n, e)
		if !ok {
			return nil, false
		}
		out = append(out, parts...)
	}
	return out, true
}

// localRange returns the constant range that eliminated bounds (lower and
// upper pieces, as dimPieces gives them) allow, if they are constant.
func localRange(lower, upper []Aff, _ bool) (lo, hi int64, ok bool) {
	if lower == nil || upper == nil {
		return 0, 0, false
	}
	return constRange(Bound{Lower: true, Parts: [][]Aff{lower}}, Bound{Parts: [][]Aff{upper}})
}

// constRange returns the values of constant bounds lo and hi as int64s.
func constRange(lo, hi Bound) (l64, h64 int64, ok bool) {
	l, ok1 := lo.Constant()
	h, ok2 := hi.Constant()
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	l64, ok1 = l.Int64()
	h64, ok2 = h.Int64()
	return l64, h64, ok1 && ok2
}

// allDims returns b as a parameter-free set whose dimensions are all of
// b's variables (parameters and locals too), in order: the bounds of any
// variable over all the others' values, made exact by DimBounds.
func (b *basic) allDims() Set {
	all := b.clone()
	all.nParam, all.nIn, all.nOut, all.nLocal = 0, 0, b.nVars(), 0
	dims := make([]string, all.nOut)
	for i := range dims {
		dims[i] = fmt.Sprint("v", i)
	}
	return Set{Dims: dims, parts: []*basic{all}}
}

// constraintPieces returns, for each constraint of b (which has no
// locals), the basic sets whose union is its negation (r >= 0 negated as
// -r - 1 >= 0; r = 0 as r >= 1 or r <= -1) and the constraint itself as a
// basic set. The complement of b is the disjoint union over i of
// holds[0] ∧ ... ∧ holds[i-1] ∧ negs[i].
func (b *basic) constraintPieces() (negs [][]*basic, holds []*basic) {
	// Locals that are floor divisions of the tuple are defined by a pair
	// of inequalities each; every piece keeps those definitions, and only
	// the other constraints are negated: as each local has one value for
	// a point, the point is outside b exactly when one of them fails
	// there.
	defs, _ := b.divDefs()
	var defRows []row
	for i, r := range b.ineqs {
		if defs[i] {
			defRows = append(defRows, r.clone())
		}
	}
	one := func(rs ...row) *basic {
		return &basic{nParam: b.nParam, nIn: b.nIn, nOut: b.nOut, nLocal: b.nLocal, ineqs: append(slices.Clone(defRows), rs...)}
	}
	for i, r := range b.ineqs {
		if defs[i] {
			continue
		}
		n := r.scaled(IntOf(-1))
		n[0] = n[0].Sub(IntOf(1))
		negs = append(negs, []*basic{one(n)})
		holds = append(holds, one(r.clone()))
	}
	for _, r := range b.eqs {
		p := r.clone()
		p[0] = p[0].Sub(IntOf(1)) // r - 1 >= 0
		n := r.scaled(IntOf(-1))
		n[0] = n[0].Sub(IntOf(1)) // -r - 1 >= 0
		negs = append(negs, []*basic{one(p), one(n)})
		holds = append(holds, one(r.clone(), r.scaled(IntOf(-1))))
	}
	return negs, holds
}
