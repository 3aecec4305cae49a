package ast

// Analyzer simplifies expressions using what it knows about the ranges of
// variables: binding i to [0, 63] lets it rewrite floordiv(i*64 + j, 64) to
// the outer index when j is in [0, 63], and prove i < 64.
//
// The rules assume that integer index arithmetic does not overflow its type,
// as the code generators and every schedule in loom ensure; under that
// assumption every rewrite preserves the value of the expression for all
// values of the variables inside their bound ranges.
//
// The zero value is not usable; call NewAnalyzer.
type Analyzer struct {
	bounds   map[string]Interval
	symbolic map[string]symRange // ranges given as expressions (BindRange)
	order    []string            // variables with symbolic ranges, in binding order
}

// symRange is a variable's range [lo, hi] as expressions of other
// variables, such as [0, S1 - 1] for a loop over S1.
type symRange struct{ lo, hi Expr }

// NewAnalyzer returns an analyzer that knows nothing about any variable.
func NewAnalyzer() *Analyzer {
	return &Analyzer{bounds: map[string]Interval{}, symbolic: map[string]symRange{}}
}

// Bind records that the variable named name takes values in iv only, and
// returns a function that restores what the analyzer knew before.
func (a *Analyzer) Bind(name string, iv Interval) (undo func()) {
	old, had := a.bounds[name]
	a.bounds[name] = iv
	return func() {
		if had {
			a.bounds[name] = old
		} else {
			delete(a.bounds, name)
		}
	}
}

// BindSizes records that each of sizes (a function's symbolic sizes) is
// non-negative and within its type: an extent is never below zero.
func (a *Analyzer) BindSizes(sizes []*Var) {
	for _, s := range sizes {
		a.Bind(s.Name, Interval{Min: 0, Max: maxOf(s.DType)})
	}
}

// BindRange records that the variable named name lies in
// [min, min+extent), as a loop variable does, using the constant bounds of
// min and extent. It returns a function that restores what the analyzer knew
// before.
func (a *Analyzer) BindRange(name string, first, extent Expr) (undo func()) {
	lo, ext := a.Bound(first), a.Bound(extent)
	iv := Interval{lo.Min, satAdd(lo.Max, satAdd(ext.Max, -1))}
	var last Expr
	if t := first.Type(); t.IsInt() && extent.Type() == t {
		// The last value as one expression often bounds tighter than the
		// sum of the bounds: [i, i + (N - i) - 1] is [i, N - 1].
		last = a.Simplify(Sub(Add(first, extent), One(t)))
		iv.Max = min(iv.Max, a.Bound(last).Max)
	}
	undoInterval := a.Bind(name, iv)
	old, had := a.symbolic[name]
	n := len(a.order)
	if last != nil {
		a.symbolic[name] = symRange{lo: first, hi: last}
		a.order = append(a.order, name)
	}
	return func() {
		undoInterval()
		if had {
			a.symbolic[name] = old
		} else {
			delete(a.symbolic, name)
		}
		a.order = a.order[:min(n, len(a.order))]
	}
}

// Bound returns an interval that holds every value the integer expression e
// can take given the known variable ranges: exact for affine expressions of
// independent variables, conservative otherwise, and Everything for
// non-integer expressions.
func (a *Analyzer) Bound(e Expr) Interval {
	if isNilExpr(e) || !e.Type().IsInt() {
		return Everything
	}
	tr := typeRange(e.Type())
	iv := a.bound(e)
	if iv.Min < tr.Min || iv.Max > tr.Max {
		// The value may have wrapped around: only the type's range is sure.
		return tr
	}
	return iv
}

func (a *Analyzer) bound(e Expr) Interval {
	switch e := e.(type) {
	case *Const:
		return Point(e.Int)
	case *Var:
		if iv, ok := a.bounds[e.Name]; ok {
			return iv
		}
		return typeRange(e.DType)
	case *Binary:
		switch e.Op {
		case OpMul:
			_, ca := e.A.(*Const)
			_, cb := e.B.(*Const)
			if !ca && !cb {
				// A product of non-constants is an atom of the linear form:
				// bound it from its operands.
				return a.Bound(e.A).mul(a.Bound(e.B))
			}
			fallthrough
		case OpAdd, OpSub:
			if l, ok := toLinear(e); ok {
				return a.boundLinear(l)
			}
		case OpFloorDiv, OpDiv:
			if c, ok := ConstIntValue(e.B); ok && c > 0 {
				x := a.Bound(e.A)
				if e.Op == OpFloorDiv {
					return x.floorDivConst(c)
				}
				return x.truncDivConst(c)
			}
		case OpFloorMod, OpMod:
			if c, ok := ConstIntValue(e.B); ok && c > 0 {
				x := a.Bound(e.A)
				if e.Op == OpMod && x.Min < 0 {
					return Interval{-(c - 1), c - 1}.intersect(Interval{min(x.Min, 0), max(x.Max, 0)})
				}
				if x.Min != NegInf && x.Max != PosInf && floorDiv(x.Min, c) == floorDiv(x.Max, c) {
					return Interval{floorMod(x.Min, c), floorMod(x.Max, c)}
				}
				return Interval{0, c - 1}
			}
		case OpMin:
			x, y := a.Bound(e.A), a.Bound(e.B)
			return Interval{min(x.Min, y.Min), min(x.Max, y.Max)}
		case OpMax:
			x, y := a.Bound(e.A), a.Bound(e.B)
			return Interval{max(x.Min, y.Min), max(x.Max, y.Max)}
		}
	case *Select:
		return a.Bound(e.T).union(a.Bound(e.F))
	case *Cast:
		if e.X.Type().IsInt() {
			x := a.Bound(e.X)
			if tr := typeRange(e.To); x.Min >= tr.Min && x.Max <= tr.Max {
				return x
			}
		}
		if e.X.Type() == Bool {
			return Interval{0, 1}
		}
	case *Call:
		if e.Func == IntrinsicAbs && len(e.Args) == 1 {
			x := a.Bound(e.Args[0])
			if x.Min >= 0 {
				return x
			}
			if x.Max <= 0 {
				return x.neg()
			}
			return Interval{0, max(satNeg(x.Min), x.Max)}
		}
	}
	return typeRange(e.Type())
}

func (a *Analyzer) boundLinear(l linear) Interval {
	iv := Point(l.c)
	for _, t := range l.terms {
		iv = iv.add(a.Bound(t.atom).scale(t.coef))
	}
	return iv
}

// symbolicBound bounds a linear form by replacing variables that have
// symbolic ranges, one at a time from the innermost (the last bound), with
// the end of their range that maximizes (or minimizes) the sum, and
// bounding each result. This proves relations the intervals miss: with i in
// [0, S1 - 1], i - S1 is at most (S1 - 1) - S1 = -1; with j in [i, N - 1],
// j - i is at least i - i = 0.
func (a *Analyzer) symbolicBound(d linear) Interval {
	if len(a.order) == 0 {
		return Everything
	}
	walk := func(upper bool) int64 {
		cur := d
		best := a.boundLinear(cur)
		for k := len(a.order) - 1; k >= 0; k-- {
			name := a.order[k]
			r, ok := a.symbolic[name]
			if !ok || Mentions(r.lo, name) || Mentions(r.hi, name) {
				continue
			}
			var coef int64
			var rest linear
			rest.c = cur.c
			for _, t := range cur.terms {
				if v, isVar := t.atom.(*Var); isVar && v.Name == name {
					coef = t.coef
					continue
				}
				rest.terms = append(rest.terms, t)
			}
			if coef == 0 {
				continue
			}
			end := r.hi
			if (coef > 0) != upper {
				end = r.lo
			}
			le, ok := toLinear(Simplify(end))
			if !ok {
				break
			}
			if cur, ok = rest.plus(le, coef); !ok {
				break
			}
			b := a.boundLinear(cur)
			best.Min, best.Max = max(best.Min, b.Min), min(best.Max, b.Max)
		}
		if upper {
			return best.Max
		}
		return best.Min
	}
	return Interval{walk(false), walk(true)}
}

// Mentions reports whether n (an expression or a statement) uses the
// variable named name.
func Mentions(n Node, name string) bool {
	found := false
	Inspect(n, func(n Node) bool {
		if v, ok := n.(*Var); ok && v.Name == name {
			found = true
		}
		return !found
	})
	return found
}

// CanProve reports whether the bool expression cond simplifies to true.
func (a *Analyzer) CanProve(cond Expr) bool {
	c, ok := a.Simplify(cond).(*Const)
	return ok && c.DType == Bool && c.Int == 1
}

// Simplify returns an expression equal to e for every value of the variables
// in their known ranges, rewritten by these rules:
//   - constant folding, with the same semantics as the interpreter;
//   - integer +, - and multiplication by constants into a canonical affine
//     form: terms sorted by their text, like terms combined, positive terms
//     first, the constant last (j + i*64 - 1 becomes i*64 + j - 1);
//   - floordiv and floormod by a positive constant split off the terms
//     whose coefficients the divisor divides, and resolve the rest when its
//     range fits within one multiple of the divisor: with j in [0, 63],
//     floordiv(i*64 + j, 64) is i and floormod(i*64 + j, 64) is j; common
//     factors cancel (floordiv(i*4 + 2, 8) is floordiv(i*2 + 1, 4)); / and %
//     are treated alike when the dividend cannot be negative;
//   - comparisons, min and max that the ranges decide;
//   - boolean identities (x && true is x), selects with a constant
//     condition, casts to the same type, and a variable whose range is a
//     single value becomes that value.
//
// Floating-point expressions are only constant-folded: rewrites such as
// x + 0.0 to x are not exact in IEEE arithmetic. Simplify returns e itself
// when nothing changed.
func (a *Analyzer) Simplify(e Expr) Expr {
	if isNilExpr(e) {
		return e
	}
	s := MapChildren(e, keepStmt, a.Simplify)
	r := a.rewrite(s)
	if r != s && Equal(r, e) {
		return e // report "unchanged" for an already canonical expression
	}
	return r
}

func keepStmt(s Stmt) Stmt { return s }

// Simplify simplifies e knowing nothing about its variables; see
// [Analyzer.Simplify].
func Simplify(e Expr) Expr { return NewAnalyzer().Simplify(e) }

// rewrite applies the rules at the root of e, whose operands are simplified.
func (a *Analyzer) rewrite(e Expr) Expr {
	switch e := e.(type) {
	case *Var:
		if iv, ok := a.bounds[e.Name]; ok && iv.IsPoint() && e.DType.IsInt() {
			return IntConst(e.DType, iv.Min)
		}
	case *Binary:
		return a.rewriteBinary(e)
	case *Not:
		switch x := e.X.(type) {
		case *Const:
			return BoolConst(x.Int == 0)
		case *Not:
			return x.X
		case *Binary:
			if x.Op.IsCompare() && x.A.Type().IsInt() {
				return &Binary{Op: invertCompare[x.Op], A: x.A, B: x.B}
			}
		}
	case *Select:
		if c, ok := e.Cond.(*Const); ok {
			if c.Int != 0 {
				return e.T
			}
			return e.F
		}
		if Equal(e.T, e.F) {
			return e.T
		}
	case *Cast:
		if e.X.Type() == e.To {
			return e.X
		}
		if c, ok := e.X.(*Const); ok {
			return valueConst(e.To, evalCast(e.To, c.DType, constValue(c)))
		}
	case *Call:
		args := make([]value, len(e.Args))
		for i, x := range e.Args {
			c, ok := x.(*Const)
			if !ok {
				return e
			}
			args[i] = constValue(c)
		}
		return valueConst(e.Type(), evalCall(e.Func, e.Type(), args))
	}
	return e
}

var invertCompare = map[BinaryOp]BinaryOp{
	OpEQ: OpNE, OpNE: OpEQ, OpLT: OpGE, OpGE: OpLT, OpGT: OpLE, OpLE: OpGT,
}

func (a *Analyzer) rewriteBinary(e *Binary) Expr {
	t := e.A.Type()
	ca, aConst := e.A.(*Const)
	cb, bConst := e.B.(*Const)
	if aConst && bConst {
		if v, err := evalBinary(e.Op, t, constValue(ca), constValue(cb)); err == nil {
			return valueConst(e.Type(), v)
		}
		return e
	}
	if t == Bool {
		return rewriteLogical(e)
	}
	if !t.IsInt() {
		return e
	}
	switch e.Op {
	case OpAdd, OpSub, OpMul:
		if l, ok := toLinear(e); ok {
			if r, ok := l.expr(t); ok {
				return r
			}
		}
	case OpFloorDiv, OpFloorMod, OpDiv, OpMod:
		return a.rewriteDiv(e)
	case OpMin, OpMax:
		return a.rewriteMinMax(e)
	case OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE:
		return a.rewriteCompare(e)
	}
	return e
}

// rewriteLogical simplifies && and || (and == / != on bools) with a
// constant or repeated operand.
func rewriteLogical(e *Binary) Expr {
	c, x := e.A, e.B
	if _, ok := c.(*Const); !ok {
		c, x = e.B, e.A
	}
	if k, ok := c.(*Const); ok {
		switch {
		case e.Op == OpAnd && k.Int != 0, e.Op == OpOr && k.Int == 0, e.Op == OpEQ && k.Int != 0, e.Op == OpNE && k.Int == 0:
			return x
		case e.Op == OpAnd, e.Op == OpOr:
			return k
		}
	}
	if (e.Op == OpAnd || e.Op == OpOr) && Equal(e.A, e.B) {
		return e.A
	}
	return e
}

func (a *Analyzer) rewriteDiv(e *Binary) Expr {
	t := e.Type()
	c, ok := ConstIntValue(e.B)
	if !ok || c <= 0 {
		return e
	}
	op := e.Op
	if op == OpDiv || op == OpMod {
		if a.Bound(e.A).Min < 0 {
			return e // truncation and flooring differ for negative dividends
		}
		op = map[BinaryOp]BinaryOp{OpDiv: OpFloorDiv, OpMod: OpFloorMod}[op]
	}
	if c == 1 {
		if op == OpFloorDiv {
			return e.A
		}
		return Zero(t)
	}
	if r, ok := a.nestedDiv(op, e.A, c, t); ok {
		return r
	}
	l, ok := toLinear(e.A)
	if !ok {
		return e
	}
	q, r := l.splitMultiples(c)
	rb := a.boundLinear(r)
	if tr := typeRange(t); rb.Min < tr.Min || rb.Max > tr.Max {
		rb = tr
	}
	fits := rb.Min != NegInf && rb.Max != PosInf && floorDiv(rb.Min, c) == floorDiv(rb.Max, c)
	var k int64
	if fits {
		k = floorDiv(rb.Min, c)
	}
	if len(q.terms) > 0 || q.c != 0 {
		// Splitting off q evaluates r on its own, a value the original
		// expression never computed: do it only when r cannot overflow.
		if !fits && a.magnitude(r) > maxOf(t) {
			return e
		}
	}
	var out linear
	if op == OpFloorDiv {
		// floordiv(q + r, c) = q/c + floordiv(r, c), as c divides q.
		out = q.divExact(c)
		if fits {
			out.c += k
		} else {
			atom, ok := a.divAtom(OpFloorDiv, r, c, t)
			if !ok {
				return e
			}
			if out, ok = out.plus(atomTerm(atom), 1); !ok {
				return e
			}
		}
	} else {
		// floormod(q + r, c) = floormod(r, c).
		if fits {
			var ok bool
			if out, ok = r.plus(linear{c: k * c}, -1); !ok {
				return e
			}
		} else {
			g := gcd(gcd(r.termsGCD(), r.c), c)
			atom, ok := a.divAtom(OpFloorMod, r, c, t)
			if !ok {
				return e
			}
			// floormod(g*x, g*c') = g*floormod(x, c')
			if out, ok = atomTerm(atom).times(max(g, 1)); !ok {
				return e
			}
		}
	}
	res, ok := out.expr(t)
	if !ok {
		return e
	}
	return res
}

// magnitude returns a bound on the absolute value of every partial sum of
// l, however its terms are ordered: |c| + sum of |coef| * max |atom|.
// It saturates at PosInf.
func (a *Analyzer) magnitude(l linear) int64 {
	m := int64(uabsSat(l.c))
	for _, t := range l.terms {
		b := a.Bound(t.atom)
		m = satAdd(m, satMul(uabsSat(t.coef), max(uabsSat(b.Min), uabsSat(b.Max))))
	}
	return m
}

// uabsSat returns |v|, saturating at PosInf (|NegInf| included).
func uabsSat(v int64) int64 {
	if v == NegInf {
		return PosInf
	}
	if v < 0 {
		return -v
	}
	return v
}

// nestedDiv simplifies a division of a division by constants:
// floordiv(floordiv(x, c1), c) = floordiv(x, c1*c), and
// floormod(floormod(x, c1), c) = floormod(x, c) when c divides c1.
func (a *Analyzer) nestedDiv(op BinaryOp, x Expr, c int64, t DType) (Expr, bool) {
	inner, ok := x.(*Binary)
	if !ok || inner.Op != op {
		return nil, false
	}
	c1, ok := ConstIntValue(inner.B)
	if !ok || c1 <= 0 {
		return nil, false
	}
	if op == OpFloorDiv {
		if cc, ok := mulInt(c1, c); ok && cc <= maxOf(t) {
			return a.rewriteDiv(FloorDiv(inner.A, IntConst(t, cc))), true
		}
	} else if c1%c == 0 {
		return a.rewriteDiv(FloorMod(inner.A, IntConst(t, c))), true
	}
	return nil, false
}

// divAtom returns floordiv(r, c) or floormod(r, c)/g as an atom, with the
// common factor g of r and c cancelled: floordiv(g*x, g*c') = floordiv(x, c').
func (a *Analyzer) divAtom(op BinaryOp, r linear, c int64, t DType) (Expr, bool) {
	if g := gcd(gcd(r.termsGCD(), r.c), c); g > 1 {
		r, c = r.divExact(g), c/g
	}
	num, ok := r.expr(t)
	if !ok {
		return nil, false
	}
	if c == 1 {
		if op == OpFloorDiv {
			return num, true
		}
		return Zero(t), true
	}
	if r, ok := a.nestedDiv(op, num, c, t); ok {
		return r, true
	}
	return &Binary{Op: op, A: num, B: IntConst(t, c)}, true
}

func maxOf(t DType) int64 {
	_, hi := intRange(t)
	return hi
}

func (a *Analyzer) rewriteMinMax(e *Binary) Expr {
	if Equal(e.A, e.B) {
		return e.A
	}
	if d, ok := a.difference(e.A, e.B); ok {
		switch {
		case d.Max <= 0: // A <= B
			if e.Op == OpMin {
				return e.A
			}
			return e.B
		case d.Min >= 0: // A >= B
			if e.Op == OpMin {
				return e.B
			}
			return e.A
		}
	}
	// min and max commute: put the operands in canonical order.
	if Print(e.B) < Print(e.A) {
		return &Binary{Op: e.Op, A: e.B, B: e.A}
	}
	return e
}

// difference returns the bound of x - y.
func (a *Analyzer) difference(x, y Expr) (Interval, bool) {
	lx, ok1 := toLinear(x)
	ly, ok2 := toLinear(y)
	if !ok1 || !ok2 {
		return Interval{}, false
	}
	d, ok := lx.plus(ly, -1)
	if !ok {
		return Interval{}, false
	}
	iv := a.boundLinear(d).intersect(a.symbolicBound(d))
	if !iv.IsPoint() {
		// Unless x - y cancels to a constant, decide only when neither
		// operand can have wrapped around: then the integer difference of
		// their values is the difference of their bounds.
		tr := typeRange(x.Type())
		if a.Bound(x) == tr || a.Bound(y) == tr {
			return Interval{}, false
		}
	}
	return iv, true
}

func (a *Analyzer) rewriteCompare(e *Binary) Expr {
	if r, ok := a.splitMinMaxCompare(e); ok {
		return r
	}
	d, ok := a.difference(e.A, e.B)
	if !ok {
		return e
	}
	var t, f bool // the comparison is surely true / surely false
	switch e.Op {
	case OpEQ:
		t, f = d.IsPoint() && d.Min == 0, d.Min > 0 || d.Max < 0
	case OpNE:
		t, f = d.Min > 0 || d.Max < 0, d.IsPoint() && d.Min == 0
	case OpLT:
		t, f = d.Max < 0, d.Min >= 0
	case OpLE:
		t, f = d.Max <= 0, d.Min > 0
	case OpGT:
		t, f = d.Min > 0, d.Max <= 0
	case OpGE:
		t, f = d.Min >= 0, d.Max < 0
	}
	switch {
	case t:
		return BoolConst(true)
	case f:
		return BoolConst(false)
	}
	return e
}

// splitMinMaxCompare decides or shrinks an ordering comparison whose
// difference A - B has exactly one min or max term m (coefficient ±1):
// A - B = ±m + r. Then, for instance, r < min(x, y) is r < x && r < y.
// It rewrites only when one of the two halves is decided by the known
// ranges, so the result is never larger than the input.
func (a *Analyzer) splitMinMaxCompare(e *Binary) (Expr, bool) {
	if e.Op != OpLT && e.Op != OpLE && e.Op != OpGT && e.Op != OpGE {
		return nil, false
	}
	la, ok1 := toLinear(e.A)
	lb, ok2 := toLinear(e.B)
	if !ok1 || !ok2 {
		return nil, false
	}
	d, ok := la.plus(lb, -1)
	if !ok {
		return nil, false
	}
	idx := -1
	for i, tm := range d.terms {
		if b, ok := tm.atom.(*Binary); ok && (b.Op == OpMin || b.Op == OpMax) && (tm.coef == 1 || tm.coef == -1) {
			if idx >= 0 {
				return nil, false
			}
			idx = i
		}
	}
	if idx < 0 {
		return nil, false
	}
	t := e.A.Type()
	tm := d.terms[idx]
	mm := tm.atom.(*Binary)
	rest := linear{c: d.c, terms: append(append([]linTerm(nil), d.terms[:idx]...), d.terms[idx+1:]...)}
	// A op B  <=>  s*m + rest op 0. With s = -1: rest op m; with s = +1:
	// -rest op' m, op' the mirrored operator.
	op := e.Op
	if tm.coef == 1 {
		var ok bool
		if rest, ok = rest.times(-1); !ok {
			return nil, false
		}
		op = map[BinaryOp]BinaryOp{OpLT: OpGT, OpLE: OpGE, OpGT: OpLT, OpGE: OpLE}[op]
	}
	// rest op min(x, y): a conjunction for < and <= against min (and > and
	// >= against max), a disjunction otherwise.
	conj := (op == OpLT || op == OpLE) == (mm.Op == OpMin)
	half := func(arg Expr) (Expr, bool) {
		lx, ok := toLinear(arg)
		if !ok {
			return nil, false
		}
		diff, ok := rest.plus(lx, -1) // rest - arg op 0
		if !ok {
			return nil, false
		}
		c := diff.c
		diff.c = 0
		left, ok := diff.expr(t)
		if !ok {
			return nil, false
		}
		return a.rewriteCompare(&Binary{Op: op, A: left, B: IntConst(t, -c)}), true
	}
	l, ok1 := half(mm.A)
	r, ok2 := half(mm.B)
	if !ok1 || !ok2 {
		return nil, false
	}
	_, lc := l.(*Const)
	_, rc := r.(*Const)
	if !lc && !rc {
		return nil, false
	}
	if conj {
		return rewriteLogical(And(l, r)), true
	}
	return rewriteLogical(Or(l, r)), true
}

// SimplifyStmt returns s with every expression simplified, knowing the
// range of each loop variable (from its loop) and block iteration variable
// (from its domain) inside their scopes. An if with a constant condition is
// replaced by the branch taken, and a block predicate that simplifies to
// true is dropped. It returns s itself when nothing changed.
func (a *Analyzer) SimplifyStmt(s Stmt) Stmt {
	switch s := s.(type) {
	case *For:
		min, ext := a.Simplify(s.Min), a.Simplify(s.Extent)
		undo := a.BindRange(s.Var.Name, min, ext)
		body := a.SimplifyStmt(s.Body)
		undo()
		if min == s.Min && ext == s.Extent && body == s.Body {
			return s
		}
		c := *s
		c.Min, c.Extent, c.Body = min, ext, body
		return &c
	case *ScheduleBlock:
		return a.simplifyBlock(s)
	case *IfThenElse:
		cond := a.Simplify(s.Cond)
		if c, ok := cond.(*Const); ok {
			if c.Int != 0 {
				return a.SimplifyStmt(s.Then)
			}
			if isNilStmt(s.Else) {
				return &Seq{}
			}
			return a.SimplifyStmt(s.Else)
		}
		then, els := a.SimplifyStmt(s.Then), s.Else
		if !isNilStmt(els) {
			els = a.SimplifyStmt(els)
		}
		if cond == s.Cond && then == s.Then && els == s.Else {
			return s
		}
		return &IfThenElse{Cond: cond, Then: then, Else: els}
	case *Seq:
		// Statements may have simplified to empty or nested sequences:
		// flatten them, so the result prints and parses back alike.
		out := &Seq{}
		changed := false
		for _, st := range s.Stmts {
			n := a.SimplifyStmt(st)
			changed = changed || n != st
			if inner, ok := n.(*Seq); ok {
				out.Stmts = append(out.Stmts, flatStmts(inner)...)
				changed = true
				continue
			}
			out.Stmts = append(out.Stmts, n)
		}
		if !changed {
			return s
		}
		return out
	}
	return MapChildren(s, a.SimplifyStmt, a.Simplify)
}

func (a *Analyzer) simplifyBlock(b *ScheduleBlock) Stmt {
	c := *b
	changed := false
	c.Iters = make([]*IterVar, len(b.Iters))
	for i, it := range b.Iters {
		nb, lo, ext := a.Simplify(it.Binding), a.Simplify(it.Dom.Min), a.Simplify(it.Dom.Extent)
		c.Iters[i] = it
		if nb != it.Binding || lo != it.Dom.Min || ext != it.Dom.Extent {
			c.Iters[i] = &IterVar{Var: it.Var, Kind: it.Kind, Dom: Range{lo, ext}, Binding: nb}
			changed = true
		}
	}
	if !isNilExpr(b.Predicate) {
		c.Predicate = a.Simplify(b.Predicate)
		if k, ok := c.Predicate.(*Const); ok && k.Int != 0 {
			c.Predicate = nil
		}
		changed = changed || c.Predicate != b.Predicate
	}
	var undos []func()
	for _, it := range c.Iters {
		undos = append(undos, a.BindRange(it.Var.Name, it.Dom.Min, it.Dom.Extent))
	}
	// The regions, init and body see the iteration variables: simplify them
	// as the children of a block without iterations or predicate.
	rest := &ScheduleBlock{Reads: b.Reads, Writes: b.Writes, Init: b.Init, Body: b.Body}
	inner := MapChildren(rest, a.SimplifyStmt, a.Simplify)
	for i := len(undos) - 1; i >= 0; i-- {
		undos[i]()
	}
	if !changed && inner == rest {
		return b
	}
	c.Reads, c.Writes, c.Init, c.Body = inner.Reads, inner.Writes, inner.Init, inner.Body
	return &c
}

// SimplifyFunc returns f with its body simplified by [Analyzer.SimplifyStmt],
// taking each symbolic size to be non-negative. It returns f itself when
// nothing changed.
func SimplifyFunc(f *Func) *Func {
	a := NewAnalyzer()
	for _, s := range f.Sizes {
		a.Bind(s.Name, Interval{0, maxOf(s.DType)})
	}
	body := a.SimplifyStmt(f.Body)
	if body == f.Body {
		return f
	}
	c := *f
	c.Body = body
	return &c
}
