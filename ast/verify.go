package ast

import (
	"fmt"
	"math"
	"slices"
)

// Verify checks that f is well formed and returns a *VerifyError (wrapping
// ErrInvalid) describing the first problem found, or nil. Every function the
// builder, the parser and the schedule primitives produce passes Verify; the
// interpreter and the code generators assume it.
//
// A well-formed function satisfies:
//   - Names: every variable, buffer and block name is an identifier that is
//     not a reserved word of the text form. Block names and buffer names
//     are unique in the function; a variable name is never defined again
//     where it is already in scope (no shadowing, also across blocks). No
//     buffer parameter has the name of a symbolic size: both are
//     arguments of the compiled kernel.
//   - Scopes: a loop variable is visible in its loop's body; a block's
//     bindings and predicate see the enclosing loops, but its regions, init
//     and body see only its own iteration variables, the function's sizes
//     and loops of their own. A buffer is visible in the whole function if
//     it is a parameter, and after its Alloc in the enclosing statement
//     list otherwise; every access refers to the visible declaration.
//   - Types: operands of a binary operator have the same type; arithmetic
//     needs numbers, floordiv, floormod and % need integers, && and || need
//     bools; conditions and predicates are bool; indices, loop bounds,
//     domains and shapes are integers; a loop or iteration variable has the
//     type of its extent; a store's value has the buffer's element type; an
//     int32 constant is in range and a float constant is exact in its type.
//   - Arity: an access has one index per buffer dimension, an intrinsic
//     call its number of arguments.
//   - Blocks: each iteration variable's binding has its type; a reduce
//     variable is not bound to a parallel, vectorized or GPU-block loop (a
//     reduce variable bound to a GPU thread loop is a cross-thread
//     reduction and allowed); an init is only given to a block with a reduce
//     variable; the block's own loads and stores use buffers listed in its
//     reads and writes, unless the block allocates them itself.
//   - Annotations hold int64, finite float64, string or bool values.
func Verify(f *Func) error {
	v := newVerifier()
	return catch(func() { v.fn(f) })
}

// verifyExpr type-checks an expression whose variables are trusted.
func verifyExpr(e Expr) error {
	v := newVerifier()
	v.trustVars = true
	return catch(func() { v.expr(e, nil) })
}

// varInfo is a variable in scope, with the loop that defines it, if any.
type varInfo struct {
	v    *Var
	loop *For
}

type verifier struct {
	sizes     map[string]*Var
	scopes    []map[string]varInfo // innermost last
	barriers  []int                // scope indices where a block body starts
	onPath    map[string]bool      // every variable name defined on the current path
	bufs      []map[string]*Buffer
	bufNames  map[string]bool
	blocks    map[string]bool
	trustVars bool
}

func newVerifier() *verifier {
	return &verifier{
		sizes:    map[string]*Var{},
		onPath:   map[string]bool{},
		bufs:     []map[string]*Buffer{{}},
		bufNames: map[string]bool{},
		blocks:   map[string]bool{},
	}
}

func (v *verifier) fail(n Node, format string, args ...any) {
	panic(bailout{&VerifyError{Node: n, Msg: fmt.Sprintf(format, args...)}})
}

func (v *verifier) checkName(n Node, what, name string) {
	if !isIdent(name) {
		v.fail(n, "%s name %q is not an identifier", what, name)
	}
	if isReserved(name) {
		v.fail(n, "%s name %q is a reserved word", what, name)
	}
}

// Scopes.

func (v *verifier) push() { v.scopes = append(v.scopes, map[string]varInfo{}) }

func (v *verifier) pop() {
	for name := range v.scopes[len(v.scopes)-1] {
		delete(v.onPath, name)
	}
	v.scopes = v.scopes[:len(v.scopes)-1]
}

func (v *verifier) define(n Node, x *Var, loop *For) {
	if x == nil {
		v.fail(n, "missing variable")
	}
	v.checkName(n, "variable", x.Name)
	if !x.DType.IsInt() {
		v.fail(n, "variable %s has type %s; loop and iteration variables are int32 or int64", x.Name, x.DType)
	}
	if v.onPath[x.Name] || v.sizes[x.Name] != nil {
		v.fail(n, "variable %s is defined again where it is already in scope", x.Name)
	}
	v.onPath[x.Name] = true
	v.scopes[len(v.scopes)-1][x.Name] = varInfo{x, loop}
}

// lookup finds a visible variable; a block body hides the loops outside it.
// ownsInstances reports whether a spatial binding takes a different value
// in each iteration of loop x while the loops around x hold theirs: it is
// c·x plus terms over the loops around x and the sizes, plus terms of
// loops inside x whose reach stays below c, for every value of the sizes
// (ownsBySpan, owns.go: a split of a split of the row loop, symbolic
// extents included), so concurrent iterations of x never meet on one
// instance.
func (v *verifier) ownsInstances(binding Expr, x string) bool {
	depth := v.scopeOf(x)
	if depth < 0 {
		return false
	}
	// Every loop variable of the binding counts from a constant 0 or more.
	fromZero := true
	Inspect(binding, func(n Node) bool {
		if y, ok := n.(*Var); ok {
			if info, _ := v.lookup(y.Name); info.loop != nil {
				m, ok := ConstIntValue(Simplify(info.loop.Min))
				fromZero = fromZero && ok && m >= 0
			}
		}
		return fromZero
	})
	if !fromZero {
		return false
	}
	inner := func(name string) bool { return v.scopeOf(name) >= depth }
	extent := func(name string) Expr {
		info, _ := v.lookup(name)
		if info.loop == nil {
			return nil
		}
		return Simplify(info.loop.Extent)
	}
	return ownsBySpan(Simplify(binding), x, inner, extent)
}

// scopeOf returns the index of the innermost visible scope that defines
// name, or -1 for a size (or an unknown name).
func (v *verifier) scopeOf(name string) int {
	floor := 0
	if len(v.barriers) > 0 {
		floor = v.barriers[len(v.barriers)-1]
	}
	for i := len(v.scopes) - 1; i >= floor; i-- {
		if _, ok := v.scopes[i][name]; ok {
			return i
		}
	}
	return -1
}

func (v *verifier) lookup(name string) (varInfo, bool) {
	floor := 0
	if len(v.barriers) > 0 {
		floor = v.barriers[len(v.barriers)-1]
	}
	for i := len(v.scopes) - 1; i >= floor; i-- {
		if info, ok := v.scopes[i][name]; ok {
			return info, true
		}
	}
	if s, ok := v.sizes[name]; ok {
		return varInfo{v: s}, true
	}
	return varInfo{}, false
}

func (v *verifier) declareBuffer(n Node, b *Buffer) {
	if b == nil {
		v.fail(n, "missing buffer")
	}
	v.checkName(n, "buffer", b.Name)
	if v.bufNames[b.Name] {
		v.fail(n, "buffer %s is declared twice", b.Name)
	}
	if !b.DType.Valid() {
		v.fail(n, "buffer %s has invalid element type %s", b.Name, b.DType)
	}
	if !b.Scope.Valid() {
		v.fail(n, "buffer %s has an invalid storage scope", b.Name)
	}
	for i, d := range b.Shape {
		v.expr(d, n)
		if !d.Type().IsInt() {
			v.fail(d, "dimension %d of buffer %s has type %s, not an integer type", i, b.Name, d.Type())
		}
	}
	v.bufNames[b.Name] = true
	v.bufs[len(v.bufs)-1][b.Name] = b
}

func (v *verifier) checkBuffer(n Node, b *Buffer) {
	if b == nil {
		v.fail(n, "access of a nil buffer")
	}
	for i := len(v.bufs) - 1; i >= 0; i-- {
		if d, ok := v.bufs[i][b.Name]; ok {
			if d != b {
				v.fail(n, "buffer %s here is not the buffer %s declared in scope", b.Name, b.Name)
			}
			return
		}
	}
	if v.trustVars {
		return
	}
	v.fail(n, "buffer %s is not declared here: it is neither a parameter nor allocated in an enclosing statement list", b.Name)
}

// The function.

func (v *verifier) fn(f *Func) {
	if f == nil {
		v.fail(nil, "nil function")
	}
	v.checkName(f, "function", f.Name)
	for _, s := range f.Sizes {
		if s == nil {
			v.fail(f, "nil symbolic size")
		}
		v.checkName(s, "size", s.Name)
		if !s.DType.IsInt() {
			v.fail(s, "size %s has type %s; sizes are int32 or int64", s.Name, s.DType)
		}
		if v.sizes[s.Name] != nil {
			v.fail(s, "size %s is declared twice", s.Name)
		}
		v.sizes[s.Name] = s
	}
	for _, b := range f.Params {
		v.declareBuffer(b, b)
		if b.Scope != Global {
			v.fail(b, "parameter %s is in %s memory; parameters are global", b.Name, b.Scope)
		}
		if v.sizes[b.Name] != nil {
			v.fail(b, "parameter %s has the name of a symbolic size (both are arguments of the compiled kernel)", b.Name)
		}
	}
	if isNilStmt(f.Body) {
		v.fail(f, "function %s has no body", f.Name)
	}
	v.push()
	v.stmt(f.Body)
	v.pop()
}

// Statements.

func (v *verifier) stmt(s Stmt) {
	switch s := s.(type) {
	case *For:
		v.forStmt(s)
	case *ScheduleBlock:
		v.block(s)
	case *Store:
		v.access(s, s.Buffer, s.Indices)
		v.expr(s.Value, s)
		if s.Value.Type() != s.Buffer.DType {
			v.fail(s.Value, "stored value has type %s but buffer %s holds %s", s.Value.Type(), s.Buffer.Name, s.Buffer.DType)
		}
	case *IfThenElse:
		v.cond(s.Cond, s, "if condition")
		v.body(s.Then, s, "then-branch")
		if !isNilStmt(s.Else) {
			v.body(s.Else, s, "else-branch")
		}
	case *Seq:
		v.bufs = append(v.bufs, map[string]*Buffer{})
		for _, st := range s.Stmts {
			if isNilStmt(st) {
				v.fail(s, "nil statement in a sequence")
			}
			v.stmt(st)
		}
		v.bufs = v.bufs[:len(v.bufs)-1]
	case *Alloc:
		v.declareBuffer(s, s.Buffer)
	default:
		panic(fmt.Sprintf("ast.Verify: unexpected statement %T", s))
	}
}

// body checks a required sub-statement in a scope of its own.
func (v *verifier) body(s Stmt, parent Node, what string) {
	if isNilStmt(s) {
		v.fail(parent, "missing %s", what)
	}
	v.bufs = append(v.bufs, map[string]*Buffer{})
	v.stmt(s)
	v.bufs = v.bufs[:len(v.bufs)-1]
}

func (v *verifier) forStmt(f *For) {
	if !f.Kind.Valid() {
		v.fail(f, "invalid loop kind %d", f.Kind)
	}
	v.expr(f.Min, f)
	v.expr(f.Extent, f)
	if !f.Min.Type().IsInt() || f.Min.Type() != f.Extent.Type() {
		v.fail(f, "loop bounds have types %s and %s; they must be the same integer type", f.Min.Type(), f.Extent.Type())
	}
	if f.Var != nil && f.Var.DType != f.Extent.Type() {
		v.fail(f, "loop variable %s has type %s but its extent has type %s", f.Var.Name, f.Var.DType, f.Extent.Type())
	}
	v.annotations(f, f.Annotations)
	v.push()
	v.define(f, f.Var, f)
	v.body(f.Body, f, "loop body")
	v.pop()
}

func (v *verifier) block(b *ScheduleBlock) {
	v.checkName(b, "block", b.Name)
	if v.blocks[b.Name] {
		v.fail(b, "block name %s is used twice", b.Name)
	}
	v.blocks[b.Name] = true

	// Bindings and the predicate are in the enclosing scope.
	for _, it := range b.Iters {
		if it == nil || it.Var == nil {
			v.fail(b, "block %s has a nil iteration variable", b.Name)
		}
		v.expr(it.Binding, b)
		if it.Binding.Type() != it.Var.DType {
			v.fail(it.Binding, "block %s: binding of %s has type %s, but %s is %s", b.Name, it.Var.Name, it.Binding.Type(), it.Var.Name, it.Var.DType)
		}
		if it.Kind != Spatial && it.Kind != Reduce {
			v.fail(it.Var, "block %s: iteration variable %s has an invalid kind", b.Name, it.Var.Name)
		}
		if it.Kind == Reduce {
			v.reduceBinding(b, it)
		}
	}
	if !isNilExpr(b.Predicate) {
		v.cond(b.Predicate, b, "block predicate")
	}

	// The rest sees only the iteration variables (and the sizes).
	v.barriers = append(v.barriers, len(v.scopes))
	v.push()
	for _, it := range b.Iters {
		v.expr(it.Dom.Min, it.Var)
		v.expr(it.Dom.Extent, it.Var)
		if it.Dom.Min.Type() != it.Var.DType || it.Dom.Extent.Type() != it.Var.DType {
			v.fail(it.Var, "block %s: domain of %s has types %s and %s, but %s is %s", b.Name, it.Var.Name, it.Dom.Min.Type(), it.Dom.Extent.Type(), it.Var.Name, it.Var.DType)
		}
	}
	for _, it := range b.Iters {
		v.define(it.Var, it.Var, nil)
	}
	v.regions(b, b.Reads, "read")
	v.regions(b, b.Writes, "write")
	v.annotations(b, b.Annotations)
	if !isNilStmt(b.Init) {
		if !b.IsReduction() {
			v.fail(b, "block %s has an init but no reduce iteration variable", b.Name)
		}
		v.body(b.Init, b, "init")
	}
	v.body(b.Body, b, "block body")
	v.pop()
	v.barriers = v.barriers[:len(v.barriers)-1]

	v.coverage(b)
}

// reduceBinding rejects a reduce variable bound to a loop whose iterations
// run at the same time, except GPU threads (a cross-thread reduction).
// A loop that gives each of its iterations its own instance of a spatial
// variable is no such loop: each iteration has its own reduction, and the
// loop only shapes the reduce variable's range (a split of a triangle's
// inner loop, whose extent depends on the row; see ownsInstances).
func (v *verifier) reduceBinding(b *ScheduleBlock, it *IterVar) {
	Inspect(it.Binding, func(n Node) bool {
		x, ok := n.(*Var)
		if !ok {
			return true
		}
		if slices.ContainsFunc(b.Iters, func(s *IterVar) bool {
			return s.Kind == Spatial && v.ownsInstances(s.Binding, x.Name)
		}) {
			return true
		}
		info, _ := v.lookup(x.Name)
		if info.loop == nil {
			return true
		}
		switch k := info.loop.Kind; {
		case k == Parallel, k == Vectorized, k.IsGPUBlock():
			v.fail(info.loop, "block %s: reduce variable %s is bound to %s loop %s, whose iterations would race on the reduction (rfactor it first)", b.Name, it.Var.Name, k, x.Name)
		}
		return true
	})
}

func (v *verifier) regions(b *ScheduleBlock, rs []Region, what string) {
	for _, r := range rs {
		v.checkBuffer(b, r.Buffer)
		if len(r.Ranges) != r.Buffer.Rank() {
			v.fail(b, "block %s: %s region of %s has %s, but %s has %s", b.Name, what, r.Buffer.Name, count(len(r.Ranges), "dimension"), r.Buffer.Name, count(r.Buffer.Rank(), "dimension"))
		}
		for _, rg := range r.Ranges {
			v.expr(rg.Min, b)
			v.expr(rg.Extent, b)
			if !rg.Min.Type().IsInt() || !rg.Extent.Type().IsInt() {
				v.fail(b, "block %s: %s region of %s has a non-integer range", b.Name, what, r.Buffer.Name)
			}
		}
	}
}

// coverage checks that the block's own accesses use buffers its regions
// list. Accesses inside nested blocks are their blocks' business, except in
// a nested block's bindings, domains and predicate, which are evaluated
// before that block starts and so belong to this one. Buffers the block
// allocates itself are private to it.
func (v *verifier) coverage(b *ScheduleBlock) {
	reads := map[*Buffer]bool{}
	writes := map[*Buffer]bool{}
	for _, r := range b.Reads {
		reads[r.Buffer] = true
	}
	for _, r := range b.Writes {
		writes[r.Buffer] = true
	}
	own := map[*Buffer]bool{}
	var visit func(n Node) bool
	visit = func(n Node) bool {
		switch n := n.(type) {
		case *ScheduleBlock:
			for _, it := range n.Iters {
				Inspect(it.Binding, visit)
				Inspect(it.Dom.Min, visit)
				Inspect(it.Dom.Extent, visit)
			}
			Inspect(n.Predicate, visit)
			return false
		case *Alloc:
			own[n.Buffer] = true
		case *Load:
			if !reads[n.Buffer] && !own[n.Buffer] {
				v.fail(n, "block %s reads %s, but %s is not in its reads", b.Name, n.Buffer.Name, n.Buffer.Name)
			}
		case *Store:
			if !writes[n.Buffer] && !own[n.Buffer] {
				v.fail(n, "block %s writes %s, but %s is not in its writes", b.Name, n.Buffer.Name, n.Buffer.Name)
			}
		}
		return true
	}
	for _, s := range []Stmt{b.Init, b.Body} {
		if !isNilStmt(s) {
			Inspect(s, visit)
		}
	}
}

func (v *verifier) annotations(n Node, a Annotations) {
	for _, k := range a.Keys() {
		if err := checkAnnotationValue(k, a[k]); err != nil {
			v.fail(n, "%v", err)
		}
	}
}

func (v *verifier) cond(e Expr, parent Node, what string) {
	v.expr(e, parent)
	if e.Type() != Bool {
		v.fail(e, "%s has type %s, not bool", what, e.Type())
	}
}

func (v *verifier) access(n Node, b *Buffer, indices []Expr) {
	v.checkBuffer(n, b)
	if len(indices) != b.Rank() {
		v.fail(n, "access of %s has %s, but %s has %s", b.Name, count(len(indices), "index"), b.Name, count(b.Rank(), "dimension"))
	}
	for _, i := range indices {
		v.expr(i, n)
		if !i.Type().IsInt() {
			v.fail(i, "index of %s has type %s, not an integer type", b.Name, i.Type())
		}
	}
}

// Expressions.

func (v *verifier) expr(e Expr, parent Node) {
	if isNilExpr(e) {
		v.fail(parent, "missing expression")
	}
	switch e := e.(type) {
	case *Const:
		v.constant(e)
	case *Var:
		if v.trustVars {
			if !e.DType.Valid() {
				v.fail(e, "variable %s has an invalid type", e.Name)
			}
			return
		}
		info, ok := v.lookup(e.Name)
		if !ok {
			if v.onPath[e.Name] {
				v.fail(e, "variable %s is not visible here: a block body sees only its iteration variables, not the loops around the block", e.Name)
			}
			v.fail(e, "undefined variable %s", e.Name)
		}
		if info.v.DType != e.DType {
			v.fail(e, "variable %s is used as %s but defined as %s", e.Name, e.DType, info.v.DType)
		}
	case *Binary:
		v.binary(e)
	case *Not:
		v.expr(e.X, e)
		if e.X.Type() != Bool {
			v.fail(e, "operand of ! has type %s, not bool", e.X.Type())
		}
	case *Select:
		v.cond(e.Cond, e, "select condition")
		v.expr(e.T, e)
		v.expr(e.F, e)
		if e.T.Type() != e.F.Type() {
			v.fail(e, "select operands have types %s and %s", e.T.Type(), e.F.Type())
		}
	case *Cast:
		if !e.To.Valid() {
			v.fail(e, "cast to invalid type")
		}
		v.expr(e.X, e)
	case *Call:
		if !e.Func.Valid() {
			v.fail(e, "call of an unknown intrinsic")
		}
		if len(e.Args) != e.Func.Arity() {
			v.fail(e, "%s takes %s, not %d", e.Func, count(e.Func.Arity(), "argument"), len(e.Args))
		}
		for _, a := range e.Args {
			v.expr(a, e)
			if a.Type() != e.Args[0].Type() {
				v.fail(e, "arguments of %s have types %s and %s", e.Func, e.Args[0].Type(), a.Type())
			}
		}
		t := e.Args[0].Type()
		if !t.IsFloat() && !(t.IsInt() && e.Func.AcceptsInt()) {
			v.fail(e, "%s of a %s value; it takes floating-point values", e.Func, t)
		}
	case *Load:
		v.access(e, e.Buffer, e.Indices)
	default:
		panic(fmt.Sprintf("ast.Verify: unexpected expression %T", e))
	}
}

func (v *verifier) constant(c *Const) {
	switch {
	case c.DType == Bool:
		if c.Int != 0 && c.Int != 1 {
			v.fail(c, "bool constant holds %d", c.Int)
		}
	case c.DType.IsInt():
		if lo, hi := intRange(c.DType); c.Int < lo || c.Int > hi {
			v.fail(c, "constant %d is out of the %s range", c.Int, c.DType)
		}
	case c.DType.IsFloat():
		if !math.IsNaN(c.Float) && roundFloat(c.DType, c.Float) != c.Float {
			v.fail(c, "constant %v is not exactly representable as %s", c.Float, c.DType)
		}
	default:
		v.fail(c, "constant of invalid type")
	}
}

func (v *verifier) binary(e *Binary) {
	if !e.Op.Valid() {
		v.fail(e, "invalid binary operator")
	}
	v.expr(e.A, e)
	v.expr(e.B, e)
	ta, tb := e.A.Type(), e.B.Type()
	if ta != tb {
		v.fail(e, "operands of %s have types %s and %s; convert one with a cast", e.Op, ta, tb)
	}
	switch {
	case e.Op.IsLogical():
		if ta != Bool {
			v.fail(e, "operands of %s have type %s, not bool", e.Op, ta)
		}
	case e.Op == OpEQ || e.Op == OpNE:
		if !ta.Valid() {
			v.fail(e, "operands of %s have an invalid type", e.Op)
		}
	case e.Op == OpMod || e.Op == OpFloorDiv || e.Op == OpFloorMod:
		if !ta.IsInt() {
			v.fail(e, "operands of %s have type %s, not an integer type", e.Op, ta)
		}
	default:
		if !ta.IsNumeric() {
			v.fail(e, "operands of %s have type %s, not a numeric type", e.Op, ta)
		}
	}
}

// count returns "1 index", "2 indices", "3 dimensions" and so on.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if noun == "index" {
		return fmt.Sprintf("%d indices", n)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
