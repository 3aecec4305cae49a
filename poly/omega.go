package poly

import "slices"

// This file decides whether a system of integer constraints has an integer
// solution, and finds one, with the Omega test (W. Pugh, "The Omega test: a
// fast and practical integer programming algorithm for dependence analysis",
// 1991). The method is exact over the integers:
//
//   - Equalities are eliminated by substitution. An equality with no unit
//     coefficient is first rewritten with Pugh's "mod-hat" step, which adds
//     a variable and shrinks the coefficients until one becomes ±1.
//   - Inequalities are eliminated one variable at a time by Fourier-Motzkin.
//     When every lower (or every upper) bound of the variable has unit
//     coefficient the elimination is exact. Otherwise the real shadow (plain
//     Fourier-Motzkin) being empty proves emptiness, the dark shadow being
//     non-empty proves non-emptiness, and in between the "splinters" of the
//     grey shadow are searched: finitely many problems, each with one more
//     equality.
//
// Every step is undone in reverse to build a solution, so a non-empty answer
// comes with a point that can be checked against the original constraints.

// sample returns an integer point satisfying s, or false if there is none.
//
// The Omega test takes exponential time on some systems (dense ones with
// large coefficients, which loop nests do not produce). A system it cannot
// decide within maxSolveWork steps counts as non-empty: sample returns true
// with no point. Every caller takes "non-empty" as the cautious answer
// (a dependence that may exist, a bound that stays loose, a piece that is
// kept), so the budget costs precision, never soundness.
func (s *system) sample() ([]Int, bool) { return s.sampleIn(nil) }

// sampleIn is sample that also spends e's work (nil: no bound but the
// check's own).
func (s *system) sampleIn(e *effort) ([]Int, bool) {
	if e.spent() {
		return nil, true
	}
	sv := solver{effort: e}
	x, ok := sv.solve(s)
	if e != nil {
		e.left -= sv.work
	}
	if sv.exhausted {
		return nil, true
	}
	return x, ok
}

// maxSolveWork bounds the work of one decision: the coefficients of every
// system visited, summed (about half a second here). Random boxed systems
// of four variables need at most a quarter of it, loom's dependence and
// legality questions a few thousandths.
const maxSolveWork = 1 << 21

// solver counts the work of one decision.
type solver struct {
	// steps is the number of systems visited so far.
	steps     int64
	work      int64 // coefficients visited so far
	exhausted bool
	// effort, when not nil, is the work left to the question this check
	// is part of: the check stops when it is used up too.
	effort *effort
}

// over reports whether the work so far passes the check's bound or what
// its question has left.
func (sv *solver) over() bool {
	return sv.work > maxSolveWork || sv.effort != nil && sv.work > sv.effort.left
}

func (sv *solver) solve(s *system) ([]Int, bool) {
	if !sv.charge(s) {
		return nil, false // unwinds at once; sample reports "undecided"
	}
	t, ok := s.normalized()
	if !ok {
		return nil, false
	}
	if len(t.eqs) > 0 {
		return sv.solveEquality(t)
	}
	if t.n == 0 {
		return []Int{}, true
	}
	return sv.solveInequalities(t)
}

// charge counts s, a system about to be visited, in the solver's work,
// and reports whether the work is still within its bounds.
func (sv *solver) charge(s *system) bool {
	sv.steps++
	sv.work += int64((len(s.ineqs) + len(s.eqs)) * (s.n + 1))
	if sv.over() {
		sv.exhausted = true
	}
	return !sv.exhausted
}

// normalized returns a copy of s in which each constraint is divided by the
// gcd of its coefficients (rounding an inequality's constant down, which
// tightens it to the integer points), constant constraints are checked and
// dropped, duplicate inequalities are merged, and pairs of opposite
// inequalities become equalities. It returns false if it finds a
// contradiction.
func (s *system) normalized() (*system, bool) {
	t := &system{n: s.n}
	// Every slice is allocated once at its largest size: normalizing is
	// the hottest step of the solver, and growing slices dominated it.
	t.eqs = make([]row, 0, len(s.eqs)+len(s.ineqs)/2)
	eqIndex := newRowIndex(len(s.eqs))
	for _, r := range s.eqs {
		g := r.coefGcd()
		if g.IsZero() {
			if !r[0].IsZero() {
				return nil, false
			}
			continue
		}
		if !r[0].Mod(g).IsZero() {
			return nil, false // g divides the left side but not the constant
		}
		if !g.IsOne() {
			r = r.divided(g)
		}
		r = r.signNormalized()
		h, _ := r.hashes()
		if i, ok := eqIndex.find(t.eqs, r, h, false); ok {
			if !t.eqs[i][0].Equal(r[0]) {
				return nil, false
			}
			continue
		}
		eqIndex.add(h)
		t.eqs = append(t.eqs, r)
	}
	t.ineqs = make([]row, 0, len(s.ineqs))
	ineqIndex := newRowIndex(len(s.ineqs))
	negHashes := make([]uint64, 0, len(s.ineqs))
	for _, r := range s.ineqs {
		g := r.coefGcd()
		if g.IsZero() {
			if r[0].Sign() < 0 {
				return nil, false
			}
			continue
		}
		if !g.IsOne() {
			c := r[0].FloorDiv(g)
			r = r.divided(g)
			r[0] = c
		}
		h, hn := r.hashes()
		if i, ok := ineqIndex.find(t.ineqs, r, h, false); ok {
			if r[0].Cmp(t.ineqs[i][0]) < 0 {
				t.ineqs[i] = r // tighter
			}
			continue
		}
		ineqIndex.add(h)
		negHashes = append(negHashes, hn)
		t.ineqs = append(t.ineqs, r)
	}
	// Opposite pairs: a·x + c >= 0 and -a·x + d >= 0 need c + d >= 0, and
	// with c + d == 0 they are the equality a·x + c == 0. An inequality
	// along an equality a·x + e == 0 is decided by it: s·a·x + c >= 0 holds
	// exactly when c - s·e >= 0. (Equalities are sign-normalized, so an
	// inequality matches one either as it is or negated.)
	keep := make([]row, 0, len(t.ineqs))
	dropped := make([]bool, len(t.ineqs))
	for i, r := range t.ineqs {
		if dropped[i] {
			continue
		}
		h, hn := ineqIndex.hashes[i], negHashes[i]
		if len(t.eqs) > 0 {
			if j, ok := eqIndex.find(t.eqs, r, h, false); ok {
				if r[0].Sub(t.eqs[j][0]).Sign() < 0 {
					return nil, false
				}
				continue
			}
			if j, ok := eqIndex.find(t.eqs, r, hn, true); ok {
				if r[0].Add(t.eqs[j][0]).Sign() < 0 {
					return nil, false
				}
				continue
			}
		}
		if j, ok := ineqIndex.find(t.ineqs, r, hn, true); ok && !dropped[j] {
			switch r[0].Add(t.ineqs[j][0]).Sign() {
			case -1:
				return nil, false
			case 0:
				dropped[i], dropped[j] = true, true
				t.eqs = append(t.eqs, r.signNormalized())
				continue
			}
		}
		keep = append(keep, r)
	}
	t.ineqs = keep
	return t, true
}

// divided returns r with every entry divided by g, which divides them all
// (the constant of an inequality is handled by the caller).
func (r row) divided(g Int) row {
	out := make(row, len(r))
	for i, c := range r {
		out[i] = c.FloorDiv(g)
	}
	return out
}

// signNormalized returns r or -r, whichever has a positive first non-zero
// coefficient, so that an equality and its negation have the same key.
func (r row) signNormalized() row {
	for _, c := range r[1:] {
		if c.Sign() > 0 {
			return r
		}
		if c.Sign() < 0 {
			return r.scaled(IntOf(-1))
		}
	}
	return r
}

// solveEquality eliminates one variable using an equality.
func (sv *solver) solveEquality(s *system) ([]Int, bool) {
	// The equality and variable with the smallest coefficient.
	best, bestVar := -1, -1
	var bestAbs Int
	for i, r := range s.eqs {
		for k := 0; k < s.n; k++ {
			a := r.coef(k).Abs()
			if a.IsZero() {
				continue
			}
			if best < 0 || a.Cmp(bestAbs) < 0 {
				best, bestVar, bestAbs = i, k, a
			}
		}
	}
	e, k := s.eqs[best], bestVar
	if bestAbs.IsOne() {
		return sv.solveUnitEqualities(s)
	}
	// Mod-hat step: with m = |a_k| + 1, the new variable σ satisfies
	//   m σ = Σ modhat(a_i, m) x_i + modhat(c, m),
	// in which x_k has coefficient -sign(a_k): solve it for x_k.
	m := bestAbs.Add(IntOf(1))
	f := make(row, s.n+2)
	for i := range e {
		f[i] = modHat(e[i], m)
	}
	f[s.n+1] = m.Neg()
	sub := f.scaled(f.coef(k).Neg())
	sub[k+1] = Int{}
	wide := &system{n: s.n + 1}
	for _, r := range s.eqs {
		wide.eqs = append(wide.eqs, r.addCols(1))
	}
	for _, r := range s.ineqs {
		wide.ineqs = append(wide.ineqs, r.addCols(1))
	}
	return sv.substituteAndSolve(wide, k, sub, 1)
}

// modHat returns a - m*floor(a/m + 1/2), the residue of a modulo m in
// (-m/2, m/2].
func modHat(a, m Int) Int {
	two := IntOf(2)
	return a.Sub(m.Mul(a.Mul(two).Add(m).FloorDiv(m.Mul(two))))
}

// substituteAndSolve replaces variable k by sub everywhere, solves the
// smaller system, and computes x_k back. The last extra variables of s are
// auxiliary (added by the mod-hat step) and are dropped from the result.
func (sv *solver) substituteAndSolve(s *system, k int, sub row, extra int) ([]Int, bool) {
	t := &system{n: s.n - 1, eqs: make([]row, len(s.eqs)), ineqs: make([]row, len(s.ineqs))}
	// One backing array holds every row of the smaller system.
	store := make([]Int, (len(s.eqs)+len(s.ineqs))*s.n)
	for i, r := range s.eqs {
		t.eqs[i] = r.substituteInto(store[i*s.n:(i+1)*s.n:(i+1)*s.n], k, sub)
	}
	store = store[len(s.eqs)*s.n:]
	for i, r := range s.ineqs {
		t.ineqs[i] = r.substituteInto(store[i*s.n:(i+1)*s.n:(i+1)*s.n], k, sub)
	}
	x, ok := sv.solve(t)
	if !ok {
		return nil, false
	}
	full := insertValue(x, k, Int{})
	full[k] = sub.eval(full)
	return full[:len(full)-extra], true
}

// solveUnitEqualities eliminates, one after another, each variable
// that an equality of s gives a coefficient of 1 or -1 (x_k = -(e - a_k
// x_k) / a_k, and 1/a_k = a_k), then solves the system they leave and
// computes the eliminated variables back, the last eliminated first. The
// rows are not normalized in between: substituting a unit equality is
// exact, and normalizing (dividing rows by their gcds, merging
// duplicates, finding contradictions such as 0 = 1) waits for the system
// the unit equalities leave, where it is done once rather than once a
// variable; a row the variable does not appear in is kept as it is, its
// column dropped only at the end. (Dependence systems are mostly such
// equalities, an index of one access equal to another's: normalizing and
// copying every row after each one was most of the solver's time.)
func (sv *solver) solveUnitEqualities(s *system) ([]Int, bool) {
	eqs, ineqs := slices.Clone(s.eqs), slices.Clone(s.ineqs)
	type elimination struct {
		k   int
		sub row // x_k = sub·(1, x)
	}
	var done []elimination
	gone := make([]bool, s.n)
	for {
		e, k := unitEquality(eqs)
		if e < 0 {
			break
		}
		sub := eqs[e].scaled(eqs[e][k+1].Neg())
		sub[k+1] = Int{}
		eqs = slices.Delete(eqs, e, e+1)
		// The work of the smaller system, as solve would count it.
		sv.steps++
		sv.work += int64((len(eqs) + len(ineqs)) * (s.n - len(done)))
		if sv.over() {
			sv.exhausted = true
			return nil, false
		}
		for _, rows := range [][]row{eqs, ineqs} {
			for i, r := range rows {
				if a := r[k+1]; !a.IsZero() {
					rows[i] = combine(IntOf(1), r, a, sub) // a new row: s's rows are its caller's
					rows[i][k+1] = Int{}
				}
			}
		}
		done = append(done, elimination{k, sub})
		gone[k] = true
	}
	var kept []int // the variables left, by their index in s
	for k, g := range gone {
		if !g {
			kept = append(kept, k)
		}
	}
	t := &system{n: len(kept), eqs: make([]row, len(eqs)), ineqs: make([]row, len(ineqs))}
	store := make([]Int, (len(eqs)+len(ineqs))*(len(kept)+1))
	project := func(r row) row {
		out := store[: len(kept)+1 : len(kept)+1]
		store = store[len(kept)+1:]
		out[0] = r[0]
		for i, k := range kept {
			out[i+1] = r[k+1]
		}
		return out
	}
	for i, r := range eqs {
		t.eqs[i] = project(r)
	}
	for i, r := range ineqs {
		t.ineqs[i] = project(r)
	}
	x, ok := sv.solve(t)
	if !ok {
		return nil, false
	}
	full := make([]Int, s.n)
	for i, k := range kept {
		full[k] = x[i]
	}
	for i := len(done) - 1; i >= 0; i-- {
		full[done[i].k] = done[i].sub.eval(full)
	}
	return full, true
}

// unitEquality returns the index of an equality among eqs with a
// coefficient of 1 or -1 and the variable it has it for, or -1, -1.
func unitEquality(eqs []row) (int, int) {
	for i, r := range eqs {
		for j, c := range r[1:] {
			if v, ok := c.Int64(); ok && (v == 1 || v == -1) {
				return i, j
			}
		}
	}
	return -1, -1
}

func insertValue(x []Int, k int, v Int) []Int {
	out := make([]Int, 0, len(x)+1)
	out = append(out, x[:k]...)
	out = append(out, v)
	return append(out, x[k:]...)
}

// bounds splits the inequalities of s by the sign of variable k's
// coefficient.
func (s *system) bounds(k int) (lower, upper, rest []row) {
	nl, nu := s.boundCounts(k)
	lower = make([]row, 0, nl)
	upper = make([]row, 0, nu)
	rest = make([]row, 0, len(s.ineqs)-nl-nu)
	for _, r := range s.ineqs {
		switch r.coef(k).Sign() {
		case 1:
			lower = append(lower, r)
		case -1:
			upper = append(upper, r)
		default:
			rest = append(rest, r)
		}
	}
	return lower, upper, rest
}

// boundCounts returns the number of lower and of upper bounds of
// variable k.
func (s *system) boundCounts(k int) (lower, upper int) {
	for _, r := range s.ineqs {
		switch r.coef(k).Sign() {
		case 1:
			lower++
		case -1:
			upper++
		}
	}
	return lower, upper
}

// unitBounds reports whether variable k has coefficient ±1 in every lower
// bound, or in every upper bound.
func (s *system) unitBounds(k int) bool {
	lowerUnit, upperUnit := true, true
	for _, r := range s.ineqs {
		c := r.coef(k)
		if c.IsZero() || c.Abs().IsOne() {
			continue
		}
		if c.Sign() > 0 {
			lowerUnit = false
		} else {
			upperUnit = false
		}
	}
	return lowerUnit || upperUnit
}

// chooseVariable picks the variable to eliminate next: one bounded on one
// side only if any (its constraints can simply be dropped), else one whose
// elimination is exact, else one with the fewest new constraints.
func (s *system) chooseVariable() (k int, exact bool) {
	best, bestCost, bestExact := -1, 0, false
	for v := 0; v < s.n; v++ {
		lower, upper := s.boundCounts(v)
		if lower == 0 || upper == 0 {
			return v, true
		}
		ex := s.unitBounds(v)
		cost := lower * upper
		if best < 0 || (ex && !bestExact) || (ex == bestExact && cost < bestCost) {
			best, bestCost, bestExact = v, cost, ex
		}
	}
	return best, bestExact
}

// shadow returns the Fourier-Motzkin combinations of every lower with every
// upper bound of variable k, each weakened by slack(a, b) (0 for the real
// shadow), with column k removed.
func shadow(lower, upper []row, k int, slack func(a, b Int) Int) []row {
	var out []row
	for _, l := range lower {
		a := l.coef(k)
		for _, u := range upper {
			b := u.coef(k).Neg()
			// b*(a x + L) + a*(-b x + U) = b L + a U >= slack
			c := combine(b, l, a, u)
			if slack != nil {
				c[0] = c[0].Sub(slack(a, b))
			}
			out = append(out, c.dropCol(k))
		}
	}
	return out
}

func darkSlack(a, b Int) Int { return a.Sub(IntOf(1)).Mul(b.Sub(IntOf(1))) }

// solveInequalities eliminates one variable from a system of inequalities.
func (sv *solver) solveInequalities(s *system) ([]Int, bool) {
	k, exact := s.chooseVariable()
	lower, upper, rest := s.bounds(k)
	// A shadow has a row per pair of bounds: on a system that has grown
	// large it alone would pass the budget (and memory) before the next
	// system is counted, so it is counted before it is made.
	if sv.work += int64(len(lower)*len(upper)+len(rest)) * int64(s.n); sv.over() {
		sv.exhausted = true
		return nil, false
	}
	reduced := func(extra []row) *system {
		t := &system{n: s.n - 1}
		for _, r := range rest {
			t.ineqs = append(t.ineqs, r.dropCol(k))
		}
		t.ineqs = append(t.ineqs, extra...)
		return t
	}
	if exact {
		x, ok := sv.solve(reduced(shadow(lower, upper, k, nil)))
		if !ok {
			return nil, false
		}
		return pickBetween(x, k, lower, upper), true
	}
	if _, ok := sv.solve(reduced(shadow(lower, upper, k, nil))); !ok || sv.exhausted {
		return nil, false // not even the real shadow has an integer point
	}
	if x, ok := sv.solve(reduced(shadow(lower, upper, k, darkSlack))); ok {
		return pickBetween(x, k, lower, upper), true
	}
	// The grey shadow: any solution lies close above some lower bound,
	// a x_k + L = i for an i in [0, (a*bmax - a - bmax) / bmax].
	var bmax Int
	for _, u := range upper {
		if b := u.coef(k).Neg(); b.Cmp(bmax) > 0 {
			bmax = b
		}
	}
	for _, l := range lower {
		a := l.coef(k)
		last := a.Mul(bmax).Sub(a).Sub(bmax).FloorDiv(bmax)
		for i := (Int{}); i.Cmp(last) <= 0; i = i.Add(IntOf(1)) {
			eq := l.clone()
			eq[0] = eq[0].Sub(i)
			t := &system{n: s.n, eqs: []row{eq}, ineqs: s.ineqs}
			if x, ok := sv.solve(t); ok {
				return x, true
			}
			if sv.exhausted {
				return nil, false
			}
		}
	}
	return nil, false
}

// pickBetween extends the solution x of the other variables with a value of
// variable k that satisfies its bounds: the least one above every lower
// bound (or the greatest below every upper bound, or 0 if it has none).
func pickBetween(x []Int, k int, lower, upper []row) []Int {
	full := insertValue(x, k, Int{})
	if len(lower) > 0 {
		var best Int
		for i, l := range lower {
			// a x_k + rest >= 0  =>  x_k >= ceil(-rest / a)
			a := l.coef(k)
			v := l.eval(full).Neg().CeilDiv(a)
			if i == 0 || v.Cmp(best) > 0 {
				best = v
			}
		}
		full[k] = best
		return full
	}
	var best Int
	for i, u := range upper {
		// -b x_k + rest >= 0  =>  x_k <= floor(rest / b), with x_k = 0 in
		// full while the bounds are evaluated.
		b := u.coef(k).Neg()
		v := u.eval(full).FloorDiv(b)
		if i == 0 || v.Cmp(best) < 0 {
			best = v
		}
	}
	full[k] = best
	return full
}
