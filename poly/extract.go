package poly

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/loom-go/loom/ast"
)

// Program is the polyhedral model of a function: the instances of each of
// its leaf blocks (blocks with no block inside), in the order they appear.
// Outer blocks, such as the root block, only give context: their
// iteration variables and predicates constrain the blocks inside them.
// A Program computes its dependences on first use and keeps them: it is
// not safe for concurrent use.
type Program struct {
	Func   *ast.Func
	Params []string // the function's symbolic sizes
	Blocks []*Instances

	deps     []*Dependence            // all of them, computed on first use
	pairDeps map[[2]int][]*Dependence // by source and sink index, computed on first use
	// depWork is the solver's work the program's dependences have left
	// (see programDependenceWork), made on first use.
	depWork *effort
}

// Instances are the executions of one leaf block.
//
// An instance is identified by the values of the loops around the block
// (outermost first) followed by the block's iteration variables: Domain is
// the set of those tuples that execute, over the function's sizes as
// parameters. Its tuple is named after the block.
type Instances struct {
	Block  *ast.ScheduleBlock
	Loops  []*ast.For
	Domain Set
	Reads  []Access
	Writes []Access
	// Exact is false when a loop bound, condition, predicate, binding or
	// region was not affine and was left out: then Domain and the accesses
	// over-approximate the truth, which keeps dependence analysis safe.
	Exact bool
	// ExactDomain is false when Domain over-approximates (a loop bound,
	// condition, predicate or binding that is not affine); the regions
	// do not count (see Access.Exact).
	ExactDomain bool

	path []pathElem // the position in the function, for execution order
}

// Access is the part of a buffer one instance reads or writes: a relation
// from the instance tuple to buffer indices.
type Access struct {
	Buffer *ast.Buffer
	Map    Map
	Exact  bool // the region is affine (else Map over-approximates it)
}

// pathElem is one step from the function's body to a block: a loop, or the
// index of a statement among its siblings.
type pathElem struct {
	loop *ast.For
	pos  int
}

// Tuple returns the names of the instance tuple: the loop variables, then
// the block's iteration variables.
func (in *Instances) Tuple() []string { return in.Domain.Dims }

// Block returns the instances of the block named name, or nil.
func (p *Program) Block(name string) *Instances {
	for _, b := range p.Blocks {
		if b.Block.Name == name {
			return b
		}
	}
	return nil
}

// Extract builds the polyhedral model of f, which must be well formed (see
// ast.Verify).
func Extract(f *ast.Func) (*Program, error) {
	if err := ast.Verify(f); err != nil {
		return nil, err
	}
	p := &Program{Func: f}
	for _, s := range f.Sizes {
		p.Params = append(p.Params, s.Name)
	}
	w := &walker{prog: p}
	if err := w.walk(f.Body); err != nil {
		return nil, err
	}
	return p, nil
}

// walk models s, refusing what the model cannot hold: every access must be
// in the init or body of a leaf block, where its block's declared regions
// cover it. A store outside one, or a load in a loop bound, an if
// condition, or a block's predicate, bindings or domain, would otherwise
// be missing from the dependences.
func (w *walker) walk(s ast.Stmt) (err error) {
	defer func() {
		if r := recover(); r != nil {
			u, ok := r.(unmodelled)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%w: %s", ErrUnsupported, string(u))
		}
	}()
	w.stmt(s)
	return nil
}

// unmodelled carries the reason Extract refuses a function.
type unmodelled string

// noLoads refuses a load in an expression that controls statements.
func noLoads(what string, exprs ...ast.Expr) {
	for _, e := range exprs {
		if e == nil {
			continue
		}
		ast.Inspect(e, func(n ast.Node) bool {
			if l, ok := n.(*ast.Load); ok {
				panic(unmodelled(fmt.Sprintf("%s reads buffer %s; dependences through it are not modelled", what, l.Buffer.Name)))
			}
			return true
		})
	}
}

// context is what the walker knows at a statement: the loops around it,
// the conditions that hold there, the blocks around it.
type context struct {
	loops  []*ast.For
	conds  []cond
	blocks []*ast.ScheduleBlock
	path   []pathElem
}

// cond is a condition in force: an if condition (negated in the else
// branch) or a block predicate.
type cond struct {
	e      ast.Expr
	negate bool
}

type walker struct {
	prog *Program
	ctx  context
	// only, when set, is the one leaf block to model, as replace (a copy
	// with other regions; see Program.Touches).
	only, replace *ast.ScheduleBlock
}

func (w *walker) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.For:
		noLoads("the bounds of loop "+s.Var.Name, s.Min, s.Extent)
		saved := w.ctx
		w.ctx.loops = append(slices.Clone(w.ctx.loops), s)
		w.ctx.path = append(slices.Clone(w.ctx.path), pathElem{loop: s})
		w.stmt(s.Body)
		w.ctx = saved
	case *ast.Seq:
		for i, st := range s.Stmts {
			saved := w.ctx
			w.ctx.path = append(slices.Clone(w.ctx.path), pathElem{pos: i})
			w.stmt(st)
			w.ctx = saved
		}
	case *ast.IfThenElse:
		noLoads("an if condition", s.Cond)
		saved := w.ctx
		w.ctx.conds = append(slices.Clone(w.ctx.conds), cond{e: s.Cond})
		w.ctx.path = append(slices.Clone(w.ctx.path), pathElem{pos: 0})
		w.stmt(s.Then)
		w.ctx = saved
		if s.Else != nil {
			w.ctx.conds = append(slices.Clone(w.ctx.conds), cond{e: s.Cond, negate: true})
			w.ctx.path = append(slices.Clone(w.ctx.path), pathElem{pos: 1})
			w.stmt(s.Else)
			w.ctx = saved
		}
	case *ast.ScheduleBlock:
		noLoads("the predicate of block "+s.Name, s.Predicate)
		for _, it := range s.Iters {
			noLoads("the binding or domain of "+s.Name+"."+it.Var.Name, it.Binding, it.Dom.Min, it.Dom.Extent)
		}
		if !s.HoldsBlock() {
			switch {
			case w.only == nil:
				w.prog.Blocks = append(w.prog.Blocks, w.instances(s))
			case w.only == s:
				w.prog.Blocks = append(w.prog.Blocks, w.instances(w.replace))
			}
			return
		}
		saved := w.ctx
		w.ctx.blocks = append(slices.Clone(w.ctx.blocks), s)
		if s.Predicate != nil {
			w.ctx.conds = append(slices.Clone(w.ctx.conds), cond{e: s.Predicate})
		}
		for i, part := range []ast.Stmt{s.Init, s.Body} {
			if part != nil {
				w.ctx.path = append(slices.Clone(saved.path), pathElem{pos: i})
				w.stmt(part)
			}
		}
		w.ctx = saved
	case *ast.Store:
		panic(unmodelled(fmt.Sprintf("a store to %s outside a leaf block; only leaf blocks' accesses are modelled", s.Buffer.Name)))
	case *ast.Alloc:
	default:
		panic(fmt.Sprintf("poly.Extract: unexpected statement %T", s))
	}
}

// instances builds the model of one leaf block in the current context.
func (w *walker) instances(b *ast.ScheduleBlock) *Instances {
	in := &Instances{Block: b, Loops: w.ctx.loops, Exact: true, path: w.ctx.path}
	ab := newAffineBuilder()
	for _, p := range w.prog.Params {
		ab.known[p] = true
	}
	var tuple []string
	for _, l := range in.Loops {
		ab.known[l.Var.Name] = true
		tuple = append(tuple, l.Var.Name)
	}
	// Outer blocks' iteration variables are locals defined by their
	// bindings; this block's are tuple dimensions.
	for _, ob := range w.ctx.blocks {
		for _, it := range ob.Iters {
			ab.alias[it.Var.Name] = ab.local()
		}
	}
	for _, it := range b.Iters {
		ab.known[it.Var.Name] = true
		tuple = append(tuple, it.Var.Name)
	}
	// The domain: a union of conjunctions.
	disjuncts := []conj{{}}
	and := func(c conj) {
		for i := range disjuncts {
			disjuncts[i].eqs = append(slices.Clone(disjuncts[i].eqs), c.eqs...)
			disjuncts[i].ineqs = append(slices.Clone(disjuncts[i].ineqs), c.ineqs...)
		}
	}
	andAny := func(cs []conj) {
		var out []conj
		for _, d := range disjuncts {
			for _, c := range cs {
				out = append(out, conj{eqs: append(slices.Clone(d.eqs), c.eqs...), ineqs: append(slices.Clone(d.ineqs), c.ineqs...)})
			}
		}
		disjuncts = out
	}
	inRange := func(v lin, min, ext ast.Expr) bool {
		// min <= v <= min + ext - 1. An end min(e1, e2, ...) (a loop's
		// main part when a tail is split off) bounds v by each ei; a
		// start min(s1, s2, ...) (that tail's) by one of them at least.
		var upper []lin
		for _, part := range minOperands(ast.Simplify(ast.Add(min, ext))) {
			n, ok := ab.expr(part)
			if !ok {
				return false
			}
			upper = append(upper, n.plus(constLin(IntOf(1)), IntOf(-1)).plus(v, IntOf(-1)))
		}
		var lower []conj
		for _, part := range minOperands(min) {
			lo, ok := ab.expr(part)
			if !ok {
				return false
			}
			lower = append(lower, conj{ineqs: []lin{v.plus(lo, IntOf(-1))}})
		}
		and(conj{ineqs: upper})
		andAny(lower)
		return true
	}
	for _, l := range in.Loops {
		if !inRange(varLin(l.Var.Name), l.Min, l.Extent) {
			in.Exact = false
		}
	}
	bind := func(blk *ast.ScheduleBlock) {
		for _, it := range blk.Iters {
			v := varLin(it.Var.Name)
			if a, ok := ab.alias[it.Var.Name]; ok {
				v = varLin(a)
			}
			if !inRange(v, it.Dom.Min, it.Dom.Extent) {
				in.Exact = false
			}
			if e, ok := ab.expr(it.Binding); ok {
				and(conj{eqs: []lin{v.plus(e, IntOf(-1))}})
			} else {
				in.Exact = false
			}
		}
	}
	for _, ob := range w.ctx.blocks {
		bind(ob)
	}
	bind(b)
	conds := w.ctx.conds
	if b.Predicate != nil {
		conds = append(slices.Clone(conds), cond{e: b.Predicate})
	}
	for _, c := range conds {
		// Each conjunct on its own: a condition that is not affine in
		// one part (a guard of a fused loop with a symbolic size, say)
		// still bounds the domain by its affine parts.
		for _, e := range conjuncts(c.e, c.negate, nil) {
			if cs, ok := ab.condition(e, c.negate); ok {
				andAny(cs)
			} else {
				in.Exact = false
			}
		}
	}
	in.ExactDomain = in.Exact
	domainLocals := ab.nLocal
	and(ab.defs)
	ab.defs = conj{}

	in.Domain = Set{Params: w.prog.Params, Name: b.Name, Dims: tuple}
	for _, d := range disjuncts {
		bs, ok := assemble(w.prog.Params, nil, tuple, ab.nLocal, d)
		if !ok {
			panic("poly.Extract: a domain constraint uses a variable without a column")
		}
		if c := bs.simplify(); !c.trivial() {
			in.Domain.parts = append(in.Domain.parts, c)
		}
	}
	for _, r := range b.Reads {
		in.Reads = append(in.Reads, w.access(in, ab, domainLocals, disjuncts, tuple, r))
	}
	for _, r := range b.Writes {
		in.Writes = append(in.Writes, w.access(in, ab, domainLocals, disjuncts, tuple, r))
	}
	return in
}

// access builds the relation from instances to the indices of one region.
func (w *walker) access(in *Instances, ab *affineBuilder, domainLocals int, domain []conj, tuple []string, r ast.Region) Access {
	// Start each access from the domain's locals, so that the locals of
	// other regions do not accumulate.
	ab.nLocal, ab.defs = domainLocals, conj{}
	var out []string
	var c conj
	exact := true
	for d, rg := range r.Ranges {
		x := "$x" + strconv.Itoa(d)
		out = append(out, x)
		v := varLin(x)
		lo, ok1 := ab.expr(rg.Min)
		n, ok2 := ab.expr(rg.Extent)
		if !ok1 || !ok2 {
			in.Exact, exact = false, false
			// Anywhere in the buffer's dimension.
			if shape, ok := ab.expr(r.Buffer.Shape[d]); ok {
				c.ineqs = append(c.ineqs, v, shape.plus(constLin(IntOf(1)), IntOf(-1)).plus(v, IntOf(-1)))
			}
			continue
		}
		if n.isConst() && n.c.IsOne() {
			c.eqs = append(c.eqs, v.plus(lo, IntOf(-1)))
			continue
		}
		c.ineqs = append(c.ineqs, v.plus(lo, IntOf(-1)), lo.plus(n, IntOf(1)).plus(constLin(IntOf(1)), IntOf(-1)).plus(v, IntOf(-1)))
	}
	c.eqs = append(c.eqs, ab.defs.eqs...)
	c.ineqs = append(c.ineqs, ab.defs.ineqs...)
	names := make([]string, len(out))
	for i := range names {
		names[i] = "x" + strconv.Itoa(i)
	}
	m := Map{Params: w.prog.Params, InName: in.Block.Name, In: tuple, OutName: r.Buffer.Name, Out: names}
	for _, d := range domain {
		all := conj{eqs: append(slices.Clone(d.eqs), c.eqs...), ineqs: append(slices.Clone(d.ineqs), c.ineqs...)}
		bs, ok := assemble(w.prog.Params, tuple, out, ab.nLocal, all)
		if !ok {
			panic("poly.Extract: an access constraint uses a variable without a column")
		}
		if s := bs.simplify(); !s.trivial() {
			m.parts = append(m.parts, s)
		}
	}
	return Access{Buffer: r.Buffer, Map: m, Exact: exact}
}

// order compares the positions of two blocks: it returns the number of
// loops around both and whether a's statement comes before b's once those
// loops are at equal values (false when a and b are the same block).
func order(a, b *Instances) (common int, aFirst bool) {
	for i := 0; i < len(a.path) && i < len(b.path); i++ {
		x, y := a.path[i], b.path[i]
		if x.loop != nil && x.loop == y.loop {
			common++
			continue
		}
		if x.loop == nil && y.loop == nil && x.pos == y.pos {
			continue
		}
		return common, x.loop == nil && y.loop == nil && x.pos < y.pos
	}
	return common, false
}

// conjuncts appends to out the parts of condition e (of its negation when
// negate) that must all hold: the operands of a && (of a || when negated,
// !(a || b) being !a && !b), each taken with the same negate.
func conjuncts(e ast.Expr, negate bool, out []ast.Expr) []ast.Expr {
	if b, ok := e.(*ast.Binary); ok && b.Op == map[bool]ast.BinaryOp{false: ast.OpAnd, true: ast.OpOr}[negate] {
		return conjuncts(b.B, negate, conjuncts(b.A, negate, out))
	}
	return append(out, e)
}

// minOperands returns the operands of e's nested mins (e itself when it
// is no min).
func minOperands(e ast.Expr) []ast.Expr {
	if b, ok := e.(*ast.Binary); ok && b.Op == ast.OpMin {
		return append(minOperands(b.A), minOperands(b.B)...)
	}
	return []ast.Expr{e}
}
