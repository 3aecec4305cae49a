// Package errbound says how far a correct kernel's result may lie from the
// reference, element by element, from the function itself: a sum of 4096
// floats taken in another order (rfactor, vectorized partial sums) differs
// from the sequential sum by rounding alone, and by how much depends on
// how many terms were summed and how large they were, not on one constant.
//
// [Twin] rewrites a function into its error twin: a function of the same
// parameters plus, for every floating-point output P, two float64 buffers
// of P's shape. The twin computes what the function does and, alongside
// each value v, two shadows:
//
//   - its magnitude m: what v would be were every term taken by its
//     absolute value (the sum of |x| for a sum), which bounds every partial
//     result of any order of the same terms;
//   - the variance s² of its rounding error, modelled as independent
//     errors of at most one unit in the last place of each partial result,
//     u·m (u the type's unit roundoff), propagated through every operation
//     to first order (a product scales its operands' errors by the other's
//     magnitude; exp by its own value; and so on).
//
// A reduction needs no rule of its own: Y = Y + x adds one rounding of the
// running magnitude per term, which over n terms gives a standard deviation
// that grows like sqrt(n)·u·Σ|x|, the statistical bound of any order of
// summation. Two correct kernels, each with that error, differ by about
// sqrt(2)·s; [Tolerances] accepts [Sigmas]·s. A truly wrong kernel (a term
// dropped or counted twice, an element from the wrong place) differs by the
// size of a term, which for data of magnitude one is far beyond that.
//
// The twin is an ordinary function: the interpreter runs it, and so does
// native code, which is how the autotuner computes the bounds of a task
// too large to interpret.
package errbound

import (
	"fmt"
	"math"
	"strconv"

	"github.com/loom-go/loom/ast"
)

// Sigmas is how many standard deviations of the modelled rounding error a
// result may lie from the reference.
const Sigmas = 10

// Twin returns the error twin of f (see the package documentation) and,
// for each floating-point parameter f writes, the names of its magnitude
// and variance parameters in the twin: Shadow[P] = {P_mag, P_var}. A
// parameter the function also reads starts with the magnitude of the
// value the caller put there and no error.
func Twin(f *ast.Func) (*ast.Func, map[string][2]string, error) {
	if err := ast.Verify(f); err != nil {
		return nil, nil, err
	}
	t := &twin{f: f, used: map[string]bool{}, shadows: map[*ast.Buffer]*shadow{}, temps: map[ast.DType]*ast.Buffer{}}
	ast.Inspect(f.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Store:
			if n.Buffer.DType.IsFloat() {
				t.written(n.Buffer)
			}
		case *ast.Var:
			t.used[n.Name] = true
		case *ast.Alloc:
			t.used[n.Buffer.Name] = true
		case *ast.ScheduleBlock:
			t.used[n.Name] = true
		}
		return true
	})
	for _, p := range f.Params {
		t.used[p.Name] = true
	}
	for _, s := range f.Sizes {
		t.used[s.Name] = true
	}
	names := map[string][2]string{}
	g := &ast.Func{Name: f.Name, Sizes: f.Sizes, Params: append([]*ast.Buffer(nil), f.Params...)}
	for _, p := range f.Params {
		if s := t.shadows[p]; s != nil {
			g.Params = append(g.Params, s.mag, s.vr)
			names[p.Name] = [2]string{s.mag.Name, s.vr.Name}
		}
	}
	body := t.stmt(f.Body)
	// The shadows of the parameters start from what the caller put there.
	var prologue []ast.Stmt
	for _, p := range f.Params {
		if s := t.shadows[p]; s != nil {
			prologue = append(prologue, t.startShadow(p, s))
		}
	}
	var allocs []ast.Stmt
	for _, s := range t.order {
		if !isParam(f, s.of) {
			allocs = append(allocs, &ast.Alloc{Buffer: s.mag}, &ast.Alloc{Buffer: s.vr})
		}
	}
	for _, dt := range t.tempOrder {
		allocs = append(allocs, &ast.Alloc{Buffer: t.temps[dt]})
	}
	if root, ok := body.(*ast.ScheduleBlock); ok {
		c := *root
		c.Body = ast.NewSeq(append(append(allocs, prologue...), c.Body)...)
		g.Body = &c
	} else {
		g.Body = ast.NewSeq(append(append(allocs, prologue...), body)...)
	}
	if err := ast.Verify(g); err != nil {
		return nil, nil, fmt.Errorf("errbound: the twin of %s is ill-formed: %v", f.Name, err)
	}
	return g, names, nil
}

// Tolerances returns, for each element, how far from want a correct result
// may lie, given the variances the twin computed: Sigmas standard
// deviations, and never less than one unit in the last place of t.
func Tolerances(t ast.DType, want []float64, variance []float64) []float64 {
	u := unitRoundoff(t)
	out := make([]float64, len(want))
	for i := range want {
		out[i] = max(Sigmas*math.Sqrt(max(variance[i], 0)), 2*u*math.Abs(want[i]))
	}
	return out
}

// Excess compares got with want, element by element, against the
// tolerances of variance (see Tolerances), and returns the largest ratio
// of a difference to its tolerance (at most 1 when every element is
// within) and that element's index. got and want are float slices of one
// type (float16 as its encodings); NaN matches NaN.
func Excess(t ast.DType, got, want any, variance []float64) (worst float64, at int) {
	g, w := ast.Float64s(t, got), ast.Float64s(t, want)
	if len(g) != len(w) || len(w) != len(variance) {
		return math.Inf(1), 0
	}
	tol := Tolerances(t, w, variance)
	for i := range w {
		if g[i] == w[i] || math.IsNaN(g[i]) && math.IsNaN(w[i]) {
			continue
		}
		r := math.Abs(g[i]-w[i]) / tol[i]
		if math.IsNaN(r) {
			r = math.Inf(1)
		}
		if r > worst {
			worst, at = r, i
		}
	}
	return worst, at
}

// shadow holds the magnitude and variance buffers of one buffer the
// function writes.
type shadow struct {
	of      *ast.Buffer
	mag, vr *ast.Buffer
}

type twin struct {
	f       *ast.Func
	used    map[string]bool
	shadows map[*ast.Buffer]*shadow
	order   []*shadow
	// temps hold the values of a store's subexpressions, one buffer per
	// type; tempOrder keeps the order they were made in.
	temps     map[ast.DType]*ast.Buffer
	tempOrder []ast.DType
	tempSize  map[ast.DType]int
}

func (t *twin) fresh(base string) string {
	name := base
	for i := 1; t.used[name]; i++ {
		name = base + "_" + strconv.Itoa(i)
	}
	t.used[name] = true
	return name
}

// written makes the shadow buffers of b.
func (t *twin) written(b *ast.Buffer) {
	if t.shadows[b] != nil {
		return
	}
	s := &shadow{of: b,
		mag: &ast.Buffer{Name: t.fresh(b.Name + "_mag"), DType: ast.Float64, Shape: b.Shape, Scope: b.Scope},
		vr:  &ast.Buffer{Name: t.fresh(b.Name + "_var"), DType: ast.Float64, Shape: b.Shape, Scope: b.Scope},
	}
	t.shadows[b] = s
	t.order = append(t.order, s)
}

func isParam(f *ast.Func, b *ast.Buffer) bool {
	for _, p := range f.Params {
		if p == b {
			return true
		}
	}
	return false
}

func unitRoundoff(t ast.DType) float64 {
	switch t {
	case ast.Float64:
		return 0x1p-53
	case ast.Float16:
		return 0x1p-11
	case ast.BFloat16:
		return 0x1p-8
	}
	return 0x1p-24
}

// startShadow returns a nest that sets the shadows of parameter p: the
// magnitude of the caller's values, and no error.
func (t *twin) startShadow(p *ast.Buffer, s *shadow) ast.Stmt {
	blk := &ast.ScheduleBlock{Name: t.fresh(p.Name + "_shadow")}
	var loops []*ast.For
	var idx []ast.Expr
	for d, ext := range p.Shape {
		it := ext.Type()
		lv := ast.NewVar(t.fresh("s"+strconv.Itoa(d)), it)
		iv := ast.NewVar(t.fresh("vs"+strconv.Itoa(d)), it)
		loops = append(loops, &ast.For{Var: lv, Min: ast.Zero(it), Extent: ext})
		blk.Iters = append(blk.Iters, &ast.IterVar{Var: iv, Kind: ast.Spatial, Dom: ast.Range{Min: ast.Zero(it), Extent: ext}, Binding: lv})
		idx = append(idx, iv)
	}
	blk.Reads = []ast.Region{point(p, idx)}
	blk.Writes = []ast.Region{point(s.mag, idx), point(s.vr, idx)}
	blk.Body = ast.NewSeq(
		ast.NewStore(s.mag, ast.Abs(toF64(ast.NewLoad(p, idx...))), idx...),
		ast.NewStore(s.vr, ast.F64(0), idx...),
	)
	var nest ast.Stmt = blk
	for i := len(loops) - 1; i >= 0; i-- {
		loops[i].Body = nest
		nest = loops[i]
	}
	return nest
}

func point(b *ast.Buffer, idx []ast.Expr) ast.Region {
	r := ast.Region{Buffer: b}
	for _, i := range idx {
		r.Ranges = append(r.Ranges, ast.Range{Min: i, Extent: ast.One(i.Type())})
	}
	return r
}

func toF64(e ast.Expr) ast.Expr {
	if e.Type() == ast.Float64 {
		return e
	}
	return ast.NewCast(ast.Float64, e)
}

// stmt rewrites the stores of every block, and those outside blocks.
func (t *twin) stmt(s ast.Stmt) ast.Stmt {
	switch s := s.(type) {
	case *ast.ScheduleBlock:
		return t.block(s)
	case *ast.Store:
		return t.store(s, map[ast.DType]bool{})
	}
	return ast.MapChildren(s, t.stmt, func(e ast.Expr) ast.Expr { return e })
}

// store rewrites a store of a float buffer into the stores of its value's
// subexpressions, then of the value and its shadows; used collects the
// types of the temporaries it uses.
func (t *twin) store(s *ast.Store, used map[ast.DType]bool) ast.Stmt {
	sh := t.shadows[s.Buffer]
	if sh == nil {
		return s
	}
	e := &exprs{t: t, used: used}
	v := e.value(s.Value)
	// The store rounds to the buffer's type.
	m, vr := v.mag, v.vr
	if s.Value.Type() != s.Buffer.DType {
		vr = ast.Add(vr, rounding(s.Buffer.DType, m))
	}
	return ast.NewSeq(append(e.stmts,
		ast.NewStore(s.Buffer, v.val, s.Indices...),
		ast.NewStore(sh.mag, m, s.Indices...),
		ast.NewStore(sh.vr, vr, s.Indices...))...)
}

// block rewrites a block's body and init: each store of a float buffer
// also stores the value's magnitude and variance, and the block's regions
// name the shadows it reads and writes.
func (t *twin) block(b *ast.ScheduleBlock) ast.Stmt {
	c := *b
	c.Reads = append([]ast.Region(nil), b.Reads...)
	c.Writes = append([]ast.Region(nil), b.Writes...)
	for _, r := range b.Reads {
		if s := t.shadows[r.Buffer]; s != nil {
			c.Reads = append(c.Reads, ast.Region{Buffer: s.mag, Ranges: r.Ranges}, ast.Region{Buffer: s.vr, Ranges: r.Ranges})
		}
	}
	for _, r := range b.Writes {
		if s := t.shadows[r.Buffer]; s != nil {
			c.Writes = append(c.Writes, ast.Region{Buffer: s.mag, Ranges: r.Ranges}, ast.Region{Buffer: s.vr, Ranges: r.Ranges})
		}
	}
	used := map[ast.DType]bool{}
	rewrite := func(body ast.Stmt) ast.Stmt {
		var st func(ast.Stmt) ast.Stmt
		st = func(s ast.Stmt) ast.Stmt {
			switch s := s.(type) {
			case *ast.ScheduleBlock:
				return t.block(s)
			case *ast.Store:
				return t.store(s, used)
			}
			return ast.MapChildren(s, st, func(e ast.Expr) ast.Expr { return e })
		}
		return st(body)
	}
	c.Body = rewrite(b.Body)
	if b.Init != nil {
		c.Init = rewrite(b.Init)
	}
	for _, dt := range t.tempOrder {
		if used[dt] {
			r := ast.Region{Buffer: t.temps[dt], Ranges: []ast.Range{{Min: ast.IntConst(ast.Int32, 0), Extent: t.temps[dt].Shape[0]}}}
			c.Reads = append(c.Reads, r)
			c.Writes = append(c.Writes, r)
		}
	}
	return &c
}

// temp returns a load and a store of the next free slot of the temporary
// buffer of type dt, growing it.
func (t *twin) temp(dt ast.DType, slot int) (*ast.Buffer, ast.Expr) {
	if t.tempSize == nil {
		t.tempSize = map[ast.DType]int{}
	}
	b := t.temps[dt]
	if b == nil {
		b = &ast.Buffer{Name: t.fresh("errbound_" + dt.String()), DType: dt, Shape: []ast.Expr{ast.IntConst(ast.Int32, 1)}}
		t.temps[dt] = b
		t.tempOrder = append(t.tempOrder, dt)
	}
	if slot+1 > t.tempSize[dt] {
		// Every region of the buffer shares its shape's constant.
		t.tempSize[dt] = slot + 1
		b.Shape[0].(*ast.Const).Int = int64(slot + 1)
	}
	return b, ast.IntConst(ast.Int32, int64(slot))
}

// shadowed is a value with its magnitude and variance, each an expression
// cheap to repeat (a constant, a load).
type shadowed struct {
	val, mag, vr ast.Expr
}

// exprs rewrites one store's value into a sequence of stores of its
// subexpressions, each with its shadows, into temporary slots.
type exprs struct {
	t     *twin
	stmts []ast.Stmt
	slots map[ast.DType]int
	used  map[ast.DType]bool
}

// keep stores e into the next slot of its type and returns a load of it.
func (e *exprs) keep(x ast.Expr) ast.Expr {
	if _, ok := x.(*ast.Const); ok {
		return x
	}
	if e.slots == nil {
		e.slots = map[ast.DType]int{}
	}
	dt := x.Type()
	b, idx := e.t.temp(dt, e.slots[dt])
	e.slots[dt]++
	e.used[dt] = true
	e.stmts = append(e.stmts, ast.NewStore(b, x, idx))
	return ast.NewLoad(b, idx)
}

func (e *exprs) kept(val, mag, vr ast.Expr) shadowed {
	return shadowed{val: e.keep(val), mag: e.keep(mag), vr: e.keep(vr)}
}

func sq(x ast.Expr) ast.Expr { return ast.Mul(x, x) }

// rounding is the variance of one rounding of a result of type dt and
// magnitude mag.
func rounding(dt ast.DType, mag ast.Expr) ast.Expr {
	return sq(ast.Mul(ast.F64(unitRoundoff(dt)), mag))
}

// value returns x with its shadows.
func (e *exprs) value(x ast.Expr) shadowed {
	dt := x.Type()
	if !dt.IsFloat() {
		// Integers and booleans are exact; their values are the
		// function's own.
		if dt.IsNumeric() {
			return shadowed{val: x, mag: ast.Abs(toF64(x)), vr: ast.F64(0)}
		}
		return shadowed{val: x, mag: ast.F64(0), vr: ast.F64(0)}
	}
	switch x := x.(type) {
	case *ast.Const:
		return shadowed{val: x, mag: ast.F64(math.Abs(x.Float)), vr: ast.F64(0)}
	case *ast.Load:
		if s := e.t.shadows[x.Buffer]; s != nil {
			return shadowed{val: x, mag: ast.NewLoad(s.mag, x.Indices...), vr: ast.NewLoad(s.vr, x.Indices...)}
		}
		return shadowed{val: x, mag: ast.Abs(toF64(x)), vr: ast.F64(0)}
	case *ast.Binary:
		a, b := e.value(x.A), e.value(x.B)
		val := &ast.Binary{Op: x.Op, A: a.val, B: b.val}
		switch x.Op {
		case ast.OpAdd, ast.OpSub:
			m := e.keep(ast.Add(a.mag, b.mag))
			return e.kept(val, m, ast.Add(ast.Add(a.vr, b.vr), rounding(dt, m)))
		case ast.OpMul:
			m := e.keep(ast.Mul(a.mag, b.mag))
			return e.kept(val, m, ast.Add(ast.Add(ast.Mul(sq(b.mag), a.vr), ast.Mul(sq(a.mag), b.vr)), rounding(dt, m)))
		case ast.OpDiv:
			bb := e.keep(ast.Abs(toF64(b.val)))
			m := e.keep(ast.Div(a.mag, bb))
			return e.kept(val, m, ast.Add(ast.Div(ast.Add(a.vr, ast.Mul(sq(m), b.vr)), sq(bb)), rounding(dt, m)))
		case ast.OpMin, ast.OpMax:
			// The result is one of the operands, with its shadows (the
			// other's could be the infinity a max reduction starts
			// from).
			first := ast.GE(a.val, b.val)
			if x.Op == ast.OpMin {
				first = ast.LE(a.val, b.val)
			}
			c := e.keep(first)
			return e.kept(val, &ast.Select{Cond: c, T: a.mag, F: b.mag}, &ast.Select{Cond: c, T: a.vr, F: b.vr})
		default: // mod, floordiv, floormod of floats
			m := ast.Abs(toF64(val))
			return e.kept(val, m, ast.Add(ast.Max(a.vr, b.vr), rounding(dt, m)))
		}
	case *ast.Select:
		a, b := e.value(x.T), e.value(x.F)
		return e.kept(&ast.Select{Cond: x.Cond, T: a.val, F: b.val}, &ast.Select{Cond: x.Cond, T: a.mag, F: b.mag}, &ast.Select{Cond: x.Cond, T: a.vr, F: b.vr})
	case *ast.Cast:
		a := e.value(x.X)
		val := ast.NewCast(dt, a.val)
		if !x.X.Type().IsFloat() {
			m := ast.Abs(toF64(val))
			return e.kept(val, m, rounding(dt, m))
		}
		return e.kept(val, a.mag, ast.Add(a.vr, rounding(dt, a.mag)))
	case *ast.Call:
		return e.call(x)
	}
	// Anything else is kept as the function computes it, with the error
	// of one rounding.
	m := ast.Abs(toF64(x))
	return shadowed{val: x, mag: m, vr: rounding(dt, m)}
}

// libmUlps is the error of a math function of the generated code (a
// vectorized polynomial) in units of the last place.
const libmUlps = 4

// call returns an intrinsic's value with its shadows: the argument's
// error scaled by the derivative, and the function's own error.
func (e *exprs) call(x *ast.Call) shadowed {
	dt := x.Type()
	args := make([]shadowed, len(x.Args))
	vals := make([]ast.Expr, len(x.Args))
	for i, a := range x.Args {
		args[i] = e.value(a)
		vals[i] = args[i].val
	}
	val := e.keep(&ast.Call{Func: x.Func, Args: vals})
	v, a := toF64(val), toF64(vals[0])
	m := ast.Abs(v)
	var deriv ast.Expr // |f'(x)|
	ulps := float64(libmUlps)
	switch x.Func {
	case ast.IntrinsicExp:
		deriv = m
	case ast.IntrinsicExp2:
		deriv = ast.Mul(ast.F64(math.Ln2), m)
	case ast.IntrinsicLog:
		deriv = ast.Div(ast.F64(1), ast.Abs(a))
	case ast.IntrinsicLog2:
		deriv = ast.Div(ast.F64(1/math.Ln2), ast.Abs(a))
	case ast.IntrinsicSqrt:
		deriv = ast.Div(ast.F64(0.5), m)
		ulps = 1
	case ast.IntrinsicRsqrt:
		deriv = ast.Div(ast.Mul(ast.F64(0.5), m), ast.Abs(a))
	case ast.IntrinsicTanh:
		deriv = ast.Abs(ast.Sub(ast.F64(1), sq(v)))
	case ast.IntrinsicSigmoid:
		deriv = ast.Abs(ast.Mul(v, ast.Sub(ast.F64(1), v)))
	case ast.IntrinsicErf:
		deriv = ast.Mul(ast.F64(2/math.SqrtPi), ast.NewCall(ast.IntrinsicExp, ast.Sub(ast.F64(0), sq(a))))
	case ast.IntrinsicPow:
		// d/dx x^y = y x^(y-1) = y v / x; d/dy = v log|x|.
		y := toF64(vals[1])
		dx := ast.Abs(ast.Div(ast.Mul(y, v), a))
		dy := ast.Abs(ast.Mul(v, ast.NewCall(ast.IntrinsicLog, ast.Abs(a))))
		vr := ast.Add(ast.Add(ast.Mul(sq(dx), args[0].vr), ast.Mul(sq(dy), args[1].vr)), sq(ast.Mul(ast.F64(ulps*unitRoundoff(dt)), m)))
		return shadowed{val: val, mag: e.keep(m), vr: e.keep(vr)}
	case ast.IntrinsicAbs:
		return shadowed{val: val, mag: args[0].mag, vr: args[0].vr}
	case ast.IntrinsicFloor, ast.IntrinsicCeil:
		return shadowed{val: val, mag: e.keep(m), vr: args[0].vr}
	default: // sin, cos
		deriv = ast.F64(1)
	}
	vr := ast.Add(ast.Mul(sq(deriv), args[0].vr), sq(ast.Mul(ast.F64(ulps*unitRoundoff(dt)), m)))
	return shadowed{val: val, mag: e.keep(m), vr: e.keep(vr)}
}
