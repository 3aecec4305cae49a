package poly

// basic is a conjunction of integer constraints: the building block of sets
// and maps. Its variables, in column order, are the parameters, the input
// dimensions (maps only), the output dimensions (a set's dimensions) and
// the local (existentially quantified) variables. A point of the tuple
// belongs to the basic set when some integer values of the locals satisfy
// every constraint.
type basic struct {
	nParam, nIn, nOut, nLocal int
	eqs, ineqs                []row
}

func (b *basic) nVars() int         { return b.nParam + b.nIn + b.nOut + b.nLocal }
func (b *basic) inVar(i int) int    { return b.nParam + i }
func (b *basic) outVar(i int) int   { return b.nParam + b.nIn + i }
func (b *basic) localVar(i int) int { return b.nParam + b.nIn + b.nOut + i }

func (b *basic) clone() *basic {
	c := *b
	c.eqs = append([]row(nil), b.eqs...)
	c.ineqs = append([]row(nil), b.ineqs...)
	return &c
}

// newBasic returns the universe of the given shape.
func newBasic(nParam, nIn, nOut int) *basic {
	return &basic{nParam: nParam, nIn: nIn, nOut: nOut}
}

func (b *basic) system() *system { return &system{n: b.nVars(), eqs: b.eqs, ineqs: b.ineqs} }

// sample returns a point of b (values for every variable, locals included)
// or false when b is empty.
func (b *basic) sample() ([]Int, bool) { return b.system().sample() }

func (b *basic) isEmpty() bool {
	_, ok := b.sample()
	return !ok
}

// sampleIn is sample within the work e has left (nil: no bound), which it
// spends; once e is spent the answer is "undecided" (nil, true).
func (b *basic) sampleIn(e *effort) ([]Int, bool) { return b.system().sampleIn(e) }

// isEmptyIn is isEmpty within the work e has left: false (the cautious
// answer) once it is spent.
func (b *basic) isEmptyIn(e *effort) bool {
	_, ok := b.sampleIn(e)
	return !ok
}

// insertVars returns b with m new unconstrained variables at variable
// position at (shifting the later columns); the caller fixes the counts.
func (b *basic) insertVars(at, m int) *basic {
	c := b.clone()
	if m == 0 {
		return c // rows are never changed in place, so they can be shared
	}
	ins := func(r row) row {
		out := make(row, len(r)+m)
		copy(out, r[:at+1])
		copy(out[at+1+m:], r[at+1:])
		return out
	}
	for i, r := range c.eqs {
		c.eqs[i] = ins(r)
	}
	for i, r := range c.ineqs {
		c.ineqs[i] = ins(r)
	}
	return c
}

// permute returns b with its variables reordered: variable i of the result
// is variable perm[i] of b. The caller fixes the counts.
func (b *basic) permute(perm []int) *basic {
	c := b.clone()
	p := func(r row) row {
		out := make(row, len(r))
		out[0] = r[0]
		for i, src := range perm {
			out[i+1] = r[src+1]
		}
		return out
	}
	for i, r := range c.eqs {
		c.eqs[i] = p(r)
	}
	for i, r := range c.ineqs {
		c.ineqs[i] = p(r)
	}
	return c
}

// addEq adds the equality r = 0 (r over b's variables).
func (b *basic) addEq(r row) { b.eqs = append(b.eqs, r) }

// addIneq adds the inequality r >= 0.
func (b *basic) addIneq(r row) { b.ineqs = append(b.ineqs, r) }

// intersect returns the conjunction of b and o, which have the same
// parameters and dimensions; their locals are kept apart.
func (b *basic) intersect(o *basic) *basic {
	x := b.insertVars(b.nVars(), o.nLocal)
	x.nLocal += o.nLocal
	// o's locals go after b's.
	y := o.insertVars(o.nParam+o.nIn+o.nOut, b.nLocal)
	x.eqs = append(x.eqs, y.eqs...)
	x.ineqs = append(x.ineqs, y.ineqs...)
	return x
}

// dimsToLocals turns the output dimensions [first, first+n) into locals
// (existentially quantifying them) and simplifies.
func (b *basic) outToLocals(first, n int) *basic {
	perm := make([]int, 0, b.nVars())
	for v := 0; v < b.nVars(); v++ {
		if v < b.outVar(first) || v >= b.outVar(first+n) {
			if v < b.localVar(0) {
				perm = append(perm, v)
			}
		}
	}
	for v := b.outVar(first); v < b.outVar(first+n); v++ {
		perm = append(perm, v)
	}
	for v := b.localVar(0); v < b.nVars(); v++ {
		perm = append(perm, v)
	}
	c := b.permute(perm)
	c.nOut -= n
	c.nLocal += n
	return c.simplify()
}

// inToLocals turns all input dimensions into locals and simplifies.
func (b *basic) inToLocals() *basic {
	c := b.permute(b.outsFirst())
	c.nLocal += c.nIn
	c.nIn = 0
	return c.simplify()
}

// outsFirst is the permutation of b's variables that puts the outputs
// before the inputs: parameters, outputs, inputs, locals.
func (b *basic) outsFirst() []int {
	perm := make([]int, 0, b.nVars())
	for v := 0; v < b.nParam; v++ {
		perm = append(perm, v)
	}
	for i := 0; i < b.nOut; i++ {
		perm = append(perm, b.outVar(i))
	}
	for i := 0; i < b.nIn; i++ {
		perm = append(perm, b.inVar(i))
	}
	for i := 0; i < b.nLocal; i++ {
		perm = append(perm, b.localVar(i))
	}
	return perm
}

// simplify normalizes the constraints and eliminates the locals that can be
// eliminated exactly: one with a unit coefficient in an equality is
// substituted away; one bounded on one side only is dropped with its
// constraints; one whose lower (or upper) bounds all have unit coefficient
// is removed by Fourier-Motzkin, which is then exact over the integers.
// The others stay, so the set is unchanged. It returns an empty basic set
// (one false constraint) when normalization finds a contradiction.
func (b *basic) simplify() *basic {
	s, ok := b.system().normalized()
	c := *b
	if !ok {
		c.eqs, c.ineqs = []row{newRow(b.nVars()).withConst(IntOf(-1))}, nil
		return &c
	}
	c.eqs, c.ineqs = s.eqs, s.ineqs
	if c.reduceByEqualities() {
		s, ok := c.system().normalized()
		if !ok {
			c.eqs, c.ineqs = []row{newRow(b.nVars()).withConst(IntOf(-1))}, nil
			return &c
		}
		c.eqs, c.ineqs = s.eqs, s.ineqs
	}
	for changed := true; changed; {
		changed = false
		for l := c.nLocal - 1; l >= 0; l-- {
			if c.eliminateLocal(l) {
				changed = true
			}
		}
		if changed {
			s, ok := c.system().normalized()
			if !ok {
				c.eqs, c.ineqs = []row{newRow(c.nVars()).withConst(IntOf(-1))}, nil
				return &c
			}
			c.eqs, c.ineqs = s.eqs, s.ineqs
		}
	}
	return &c
}

// reduceByEqualities brings the equalities to echelon form and uses each to
// eliminate its pivot variable (the last variable with a unit coefficient)
// from every other constraint, so that equal sets print alike and redundant
// bounds disappear in the next normalization. The set does not change. It
// reports whether any constraint changed.
func (c *basic) reduceByEqualities() bool {
	changed := false
	for i := 0; i < len(c.eqs); i++ {
		e := c.eqs[i]
		if c.involvesLocals(e) {
			continue // a stride: keep the bounds on the dimensions, where they read best
		}
		pivot := -1
		for v := c.nVars() - 1; v >= 0; v-- {
			if e.coef(v).Abs().IsOne() {
				pivot = v
				break
			}
		}
		if pivot < 0 {
			continue
		}
		a := e.coef(pivot) // ±1
		elim := func(r row) row {
			x := r.coef(pivot)
			if x.IsZero() {
				return r
			}
			// r - (x/a) e: 1/a = a for a = ±1.
			changed = true
			return combine(IntOf(1), r, x.Mul(a).Neg(), e)
		}
		for j := range c.eqs {
			if j != i {
				c.eqs[j] = elim(c.eqs[j])
			}
		}
		for j := range c.ineqs {
			c.ineqs[j] = elim(c.ineqs[j])
		}
	}
	return changed
}

// exactShadow eliminates variable k by Fourier-Motzkin when that is exact
// over the integers, and reports whether it is. For fixed values of the
// other variables, an integer x_k exists exactly when every lower bound's
// ceiling is at most every upper bound's floor, so exactness holds pair by
// pair: a pair with a unit coefficient on either side is exact (its real
// shadow is the condition), and a pair whose shadow b·L + a·U is a constant
// of at least (a-1)(b-1) always has an integer between its bounds (the
// dark shadow holds), as for x with 4x in [i - 3, i], so it adds nothing.
//
// It declines (not exact) where the shadow would take more than
// maxShadowRows rows (as dimPieces does): a local kept is still exact, and a system whose
// rows multiply at every elimination (the phases of a strided
// convolution's input under a loop of a tile: 2380 lower bounds times
// 2380 upper ones) would take the memory of the machine.
func exactShadow(lower, upper []row, k int) ([]row, bool) {
	if len(lower)*len(upper) > maxShadowRows {
		return nil, false
	}
	var out []row
	for _, l := range lower {
		a := l.coef(k)
		for _, u := range upper {
			b := u.coef(k).Neg()
			c := combine(b, l, a, u).dropCol(k)
			if a.IsOne() || b.IsOne() {
				out = append(out, c)
				continue
			}
			if !c.isConst() || c[0].Cmp(darkSlack(a, b)) < 0 {
				return nil, false
			}
		}
	}
	return out, true
}

func (c *basic) involvesLocals(r row) bool {
	for l := 0; l < c.nLocal; l++ {
		if !r.coef(c.localVar(l)).IsZero() {
			return true
		}
	}
	return false
}

// withConst returns r with its constant set to v.
func (r row) withConst(v Int) row {
	r[0] = v
	return r
}

// eliminateLocal removes local l from c when that is exact, and reports
// whether it did.
func (c *basic) eliminateLocal(l int) bool {
	k := c.localVar(l)
	for i, e := range c.eqs {
		if a := e.coef(k); a.Abs().IsOne() {
			sub := e.scaled(a.Neg())
			sub[k+1] = Int{}
			var eqs, ineqs []row
			for j, r := range c.eqs {
				if j != i {
					eqs = append(eqs, r.substitute(k, sub))
				}
			}
			for _, r := range c.ineqs {
				ineqs = append(ineqs, r.substitute(k, sub))
			}
			c.eqs, c.ineqs = eqs, ineqs
			c.nLocal--
			return true
		}
	}
	for _, e := range c.eqs {
		if !e.coef(k).IsZero() {
			return false // a stride (non-unit equality) keeps the local
		}
	}
	lower, upper, rest := c.system().bounds(k)
	ineqs, exact := exactShadow(lower, upper, k)
	if !exact {
		return false
	}
	for _, r := range rest {
		ineqs = append(ineqs, r.dropCol(k))
	}
	eqs := make([]row, len(c.eqs))
	for i, r := range c.eqs {
		eqs[i] = r.dropCol(k)
	}
	c.eqs, c.ineqs = eqs, ineqs
	c.nLocal--
	return true
}
