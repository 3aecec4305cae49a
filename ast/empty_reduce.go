package ast

import "fmt"

// Empty reductions.
//
// A reduction block's init runs in the instance whose reduce variables are
// at their minimum, before its first update. An output element whose reduce
// loops give it no iteration at all (a sum over a symbolic axis of size 0, a
// matrix multiply with K = 0, the first row of a triangle k < i) has no such
// instance, yet its value is defined: the reduction's identity, what the
// init writes. InitEmptyReductions makes that explicit, and the interpreter
// and the code generators run the function it returns.

// InitEmptyReductions returns f where every reduction block B with an init
// whose reduce loops may run no instance of B for some of its output
// elements is preceded, just before the outermost of those loops, by a
// copy of the loops between there and B that bind only spatial variables,
// around a block that runs B's init (named B_empty). That block's predicate
// keeps B's conditions on the spatial loops and adds the condition under
// which the instance of B at the reduce loops' first iteration may not run
// (a reduce loop or reduce domain of extent 0 or less, or a condition on
// the reduce loops that their first iteration fails) while that iteration
// is where the reduce domain starts (a copy of B over a later part of its
// domain, a tail that a code generator peeled, runs after the copy that
// holds the start, and keeps its updates). When that condition is
// about sizes alone it guards the whole copy instead. Where it holds and B
// runs after all (a condition that a later iteration meets), B's own init
// writes the same identity again, before any update: the init is never
// missed and never follows an update.
//
// Reduce loops are those whose variable is in a reduce binding of B, seen
// through the bindings of the blocks around B (a blockized nest). Blocks
// whose reduce loops have constant positive extents and no condition that
// their first iteration may fail are left alone, so a function of constant
// sizes usually comes back unchanged: InitEmptyReductions returns f itself
// when nothing changed. Where a loop binds spatial and reduce variables of
// B at once (the two fused), the nest runs over B's spatial domain where
// the reduce domain is empty (fusedInit). Blocks it cannot handle are left
// alone: a write of B that depends on a reduce variable, or a buffer B
// writes allocated under the outermost reduce loop.
func InitEmptyReductions(f *Func) *Func {
	e := &emptyInits{names: namesOf(f), before: map[*For][]Stmt{}}
	e.visit(f.Body, nil)
	if len(e.before) == 0 {
		return f
	}
	body := e.insert(f.Body)
	if body == f.Body {
		return f
	}
	g := *f
	g.Body = body
	return &g
}

// emptyInits collects, per outermost reduce loop, the init nests to place
// before it.
type emptyInits struct {
	names  map[string]bool
	before map[*For][]Stmt
}

// frame is one statement on the path from the function's body down to a
// block: a loop, a branch of an if (then or else), an enclosing block, or
// the buffers allocated before the path's next statement in a list.
type frame struct {
	loop   *For
	cond   Expr // the if's condition on the taken branch (negated for else)
	block  *ScheduleBlock
	allocs []*Buffer
}

func (e *emptyInits) visit(s Stmt, path []frame) {
	switch s := s.(type) {
	case nil:
	case *For:
		e.visit(s.Body, append(path, frame{loop: s}))
	case *IfThenElse:
		e.visit(s.Then, append(path, frame{cond: s.Cond}))
		if !isNilStmt(s.Else) {
			e.visit(s.Else, append(path, frame{cond: LogicalNot(s.Cond)}))
		}
	case *Seq:
		var allocs []*Buffer
		for _, st := range s.Stmts {
			if a, ok := st.(*Alloc); ok {
				allocs = append(allocs, a.Buffer)
				continue
			}
			e.visit(st, append(path, frame{allocs: allocs}))
		}
	case *ScheduleBlock:
		if s.Init != nil && s.IsReduction() && !s.HoldsBlock() {
			e.block(s, path)
			return
		}
		e.visit(s.Init, append(path, frame{block: s}))
		e.visit(s.Body, append(path, frame{block: s}))
	}
}

// block plans the init nest of reduction block b, reached by path.
func (e *emptyInits) block(b *ScheduleBlock, path []frame) {
	// b's bindings over loops: the variables of the blocks around b
	// replaced by their bindings. They tell the reduce loops.
	all := liftFrom(path, 0)
	var reduceBindings, spatialBindings []Expr
	for _, it := range b.Iters {
		if it.Kind == Reduce {
			reduceBindings = append(reduceBindings, all(it.Binding))
		} else {
			spatialBindings = append(spatialBindings, all(it.Binding))
		}
	}
	mentionsAny := func(x Expr, vars map[string]bool) bool {
		found := false
		Inspect(x, func(n Node) bool {
			if v, ok := n.(*Var); ok && vars[v.Name] {
				found = true
			}
			return !found
		})
		return found
	}
	// The reduce loops, and the outermost of them. A loop that binds
	// spatial and reduce variables at once (a spatial loop fused with a
	// reduce loop, or one whose value sizes a split of the reduce loops)
	// is not one of them when loops that bind only reduce variables lie
	// inside it; with none, the fused loop gets its own nest (fusedInit).
	reduce := map[string]bool{}
	var reduceLoops []*For
	top, firstBoth, lastBoth := -1, -1, -1
	for i, fr := range path {
		if fr.loop == nil {
			continue
		}
		name := fr.loop.Var.Name
		inReduce, inSpatial := false, false
		for _, x := range reduceBindings {
			inReduce = inReduce || Mentions(x, name)
		}
		for _, x := range spatialBindings {
			inSpatial = inSpatial || Mentions(x, name)
		}
		switch {
		case !inReduce:
		case inSpatial:
			if firstBoth < 0 {
				firstBoth = i
			}
			lastBoth = i
		default:
			reduce[name] = true
			reduceLoops = append(reduceLoops, fr.loop)
			if top < 0 {
				top = i
			}
		}
	}
	switch {
	case top < 0 && firstBoth >= 0:
		e.fusedInit(b, path, firstBoth)
		return
	case top < 0, lastBoth > top:
		return // no reduce loop, or a mixed one inside them: not handled
	}
	// A loop bound to no variable of b that a condition ties to the
	// reduce loops is one of them: the outer part of a split reduce loop,
	// or of a padded loop fused with one, whose binding simplified away
	// (rc0 * 5 + floordiv(f, 8) < 1, f fused from the rest of rc and
	// another reduce loop). Its later iterations run b's instances for
	// the same output elements, or none: the init must not run again
	// there, after the updates of its first.
	var tied []Expr
	for _, fr := range path {
		switch {
		case fr.cond != nil:
			tied = append(tied, all(fr.cond))
		case fr.block != nil && !isNilExpr(fr.block.Predicate):
			tied = append(tied, conjunctsOf(all(fr.block.Predicate))...)
		}
	}
	if !isNilExpr(b.Predicate) {
		tied = append(tied, conjunctsOf(all(b.Predicate))...)
	}
	for grown := true; grown; {
		grown = false
		for _, c := range tied {
			if !mentionsAny(c, reduce) {
				continue
			}
			for _, fr := range path {
				if fr.loop == nil || reduce[fr.loop.Var.Name] || !Mentions(c, fr.loop.Var.Name) {
					continue
				}
				bound := false
				for _, x := range append(spatialBindings[:len(spatialBindings):len(spatialBindings)], reduceBindings...) {
					bound = bound || Mentions(x, fr.loop.Var.Name)
				}
				if !bound {
					reduce[fr.loop.Var.Name], grown = true, true
				}
			}
		}
	}
	reduceLoops, top = nil, -1
	for i, fr := range path {
		if fr.loop != nil && reduce[fr.loop.Var.Name] {
			reduceLoops = append(reduceLoops, fr.loop)
			if top < 0 {
				top = i
			}
		}
	}
	for _, w := range b.Writes {
		for _, rg := range w.Ranges {
			for _, it := range b.Iters {
				if it.Kind == Reduce && (Mentions(rg.Min, it.Var.Name) || Mentions(rg.Extent, it.Var.Name)) {
					return
				}
			}
		}
		for _, fr := range path[top+1:] {
			for _, a := range fr.allocs {
				if a == w.Buffer {
					return
				}
			}
		}
	}
	// From here on the init nest is built where the outermost reduce loop
	// is, inside the blocks around it: only the variables of the blocks
	// between there and b are replaced by their bindings.
	lift := liftFrom(path, top+1)
	var conds []cond // every condition on the path, over what is visible there
	for i, fr := range path {
		switch {
		case fr.cond != nil:
			conds = append(conds, cond{lift(fr.cond), i})
		case fr.block != nil && !isNilExpr(fr.block.Predicate):
			for _, c := range conjunctsOf(lift(fr.block.Predicate)) {
				conds = append(conds, cond{c, i})
			}
		}
	}
	if !isNilExpr(b.Predicate) {
		for _, c := range conjunctsOf(lift(b.Predicate)) {
			conds = append(conds, cond{c, len(path)})
		}
	}
	// The reduce loops at their first iteration.
	first := map[string]Expr{}
	atFirst := func(x Expr) Expr { return zeroQuotients(Simplify(Substitute(x, first))) }
	for _, l := range reduceLoops {
		first[l.Var.Name] = atFirst(lift(l.Min))
	}
	// The condition under which the first instance may not run.
	var empty Expr = BoolConst(false)
	or := func(c Expr) { empty = Or(empty, c) }
	for _, l := range reduceLoops {
		or(LE(atFirst(lift(l.Extent)), IntConst(l.Extent.Type(), 0)))
	}
	for _, it := range b.Iters {
		if it.Kind == Reduce {
			or(LE(atFirst(lift(it.Dom.Extent)), IntConst(it.Dom.Extent.Type(), 0)))
		}
	}
	var spatialConds []Expr // those the copy must keep
	for _, c := range conds {
		switch {
		case mentionsAny(c.x, reduce):
			or(LogicalNot(atFirst(c.x)))
		case c.at > top:
			spatialConds = append(spatialConds, c.x)
		}
	}
	// The reduce loops here must start the reduce domain: a block that a
	// code generator copied (a loop's tail peeled apart) has another copy
	// where the domain starts, before this one, and that copy's updates
	// must not be overwritten.
	for _, it := range b.Iters {
		if it.Kind == Reduce {
			empty = And(empty, EQ(atFirst(lift(it.Binding)), lift(it.Dom.Min)))
		}
	}
	empty = Simplify(empty)
	if c, ok := empty.(*Const); ok && c.DType == Bool && c.Int == 0 {
		return
	}
	// The spatial loops under the outermost reduce loop, copied.
	copies := map[string]Expr{}
	var loops []*For
	for _, fr := range path[top:] {
		if fr.loop == nil || reduce[fr.loop.Var.Name] {
			continue
		}
		v := NewVar(fresh(e.names, fr.loop.Var.Name+"_e"), fr.loop.Var.DType)
		loops = append(loops, &For{Var: v, Min: Substitute(atFirst(lift(fr.loop.Min)), copies), Extent: Substitute(atFirst(lift(fr.loop.Extent)), copies), Kind: fr.loop.Kind})
		copies[fr.loop.Var.Name] = v
	}
	copied := map[string]bool{}
	for name := range copies {
		copied[name] = true
	}
	under := func(x Expr) Expr { return Substitute(x, copies) }
	init := &ScheduleBlock{Name: fresh(e.names, b.Name+"_empty"), Body: b.Init, Writes: b.Writes}
	for _, it := range b.Iters {
		if it.Kind == Spatial {
			init.Iters = append(init.Iters, &IterVar{Var: it.Var, Kind: Spatial, Dom: Range{Min: under(lift(it.Dom.Min)), Extent: under(lift(it.Dom.Extent))}, Binding: under(lift(it.Binding))})
		}
	}
	init.Reads = initReads(b)
	var pred Expr
	and := func(c Expr) {
		if pred == nil {
			pred = c
		} else {
			pred = And(pred, c)
		}
	}
	for _, c := range spatialConds {
		and(under(c))
	}
	// A condition on the reduce loops may guard a spatial tail as well
	// (i0 * 8 + k < 16 with i0 past the end): the instance runs only where
	// its spatial variables lie in their domains.
	for _, it := range init.Iters {
		if c := Simplify(And(GE(it.Binding, it.Dom.Min), LT(it.Binding, Add(it.Dom.Min, it.Dom.Extent)))); !isTrue(c) {
			and(c)
		}
	}
	hoist := !mentionsAny(empty, copied)
	if !hoist {
		and(under(empty))
	}
	init.Predicate = pred
	var nest Stmt = init
	for i := len(loops) - 1; i >= 0; i-- {
		loops[i].Body = nest
		nest = loops[i]
	}
	if hoist {
		nest = &IfThenElse{Cond: empty, Then: nest}
	}
	at := path[top].loop
	e.before[at] = append(e.before[at], nest)
}

// fusedInit plans the init nest of reduction block b whose reduce loops,
// the outermost at path[top], include one that binds a spatial variable
// too (a spatial loop fused with a reduce loop): no loop can be copied
// for the spatial variables alone. Where b's reduce domain is empty (an
// extent of 0 or less), the nest runs the init over the spatial domain
// of each variable bound under path[top], directly; elsewhere the fused
// loop, which covers every pair of the two, runs b's own init.
func (e *emptyInits) fusedInit(b *ScheduleBlock, path []frame, top int) {
	for _, w := range b.Writes {
		for _, fr := range path[top+1:] {
			for _, a := range fr.allocs {
				if a == w.Buffer {
					return
				}
			}
		}
	}
	lift := liftFrom(path, top+1)
	below := map[string]bool{}
	for _, fr := range path[top:] {
		if fr.loop != nil {
			below[fr.loop.Var.Name] = true
		}
	}
	under := lift
	var empty Expr = BoolConst(false)
	var loops []*For
	init := &ScheduleBlock{Name: fresh(e.names, b.Name+"_empty"), Body: b.Init, Writes: b.Writes}
	for _, it := range b.Iters {
		if it.Kind == Reduce {
			empty = Or(empty, LE(under(it.Dom.Extent), IntConst(it.Dom.Extent.Type(), 0)))
			continue
		}
		dom := Range{Min: under(it.Dom.Min), Extent: under(it.Dom.Extent)}
		binding := lift(it.Binding)
		inner := false
		Inspect(binding, func(n Node) bool {
			if v, ok := n.(*Var); ok && below[v.Name] {
				inner = true
			}
			return !inner
		})
		if inner {
			v := NewVar(fresh(e.names, it.Var.Name+"_e"), it.Var.DType)
			loops = append(loops, &For{Var: v, Min: dom.Min, Extent: dom.Extent})
			binding = v
		}
		init.Iters = append(init.Iters, &IterVar{Var: it.Var, Kind: Spatial, Dom: dom, Binding: binding})
	}
	empty = Simplify(empty)
	if c, ok := empty.(*Const); ok && c.DType == Bool && c.Int == 0 {
		return
	}
	init.Reads = initReads(b)
	var nest Stmt = init
	for i := len(loops) - 1; i >= 0; i-- {
		loops[i].Body = nest
		nest = loops[i]
	}
	at := path[top].loop
	e.before[at] = append(e.before[at], &IfThenElse{Cond: empty, Then: nest})
}

// insert places the planned init nests before their loops.
func (e *emptyInits) insert(s Stmt) Stmt {
	out := MapChildren(s, e.insert, func(x Expr) Expr { return x })
	if l, ok := s.(*For); ok {
		if nests := e.before[l]; len(nests) > 0 {
			return &Seq{Stmts: append(append([]Stmt{}, nests...), out)}
		}
	}
	return out
}

// initReads returns the regions b's init reads.
func initReads(b *ScheduleBlock) []Region {
	var loads []*Load
	Inspect(b.Init, func(n Node) bool {
		if ld, ok := n.(*Load); ok {
			loads = append(loads, ld)
		}
		return true
	})
	return RegionsOf(loads)
}

// isTrue reports whether x is the constant true.
func isTrue(x Expr) bool {
	c, ok := x.(*Const)
	return ok && c.DType == Bool && c.Int != 0
}

// zeroQuotients returns x with every quotient and remainder of 0 folded
// to 0. A loop fused from two has its parts as floordiv(f, n) and
// floormod(f, n), 0 at its first iteration: also where n, the extent of
// the inner part, is 0 and the loop runs nothing, which is when the init
// nest asks. The dividend is judged after its own quotients are folded
// and it is simplified: a fused loop split and fused again divides
// n * floordiv(0, m) + floormod(0, m), which is 0 too.
func zeroQuotients(x Expr) Expr {
	var fold func(Expr) Expr
	fold = func(e Expr) Expr {
		e = MapChildren(e, func(s Stmt) Stmt { return s }, fold)
		if b, ok := e.(*Binary); ok {
			switch b.Op {
			case OpDiv, OpMod, OpFloorDiv, OpFloorMod:
				if v, ok := ConstIntValue(Simplify(b.A)); ok && v == 0 {
					return IntConst(b.Type(), 0)
				}
			}
		}
		return e
	}
	return fold(x)
}

// liftFrom returns a function that replaces, in an expression over the
// scope of the path's end, the iteration variables of the blocks on the
// path from frame from on by their bindings (themselves so replaced): the
// expression over the loops, and over what is visible before frame from.
func liftFrom(path []frame, from int) func(Expr) Expr {
	sub := map[string]Expr{}
	for _, fr := range path[from:] {
		if fr.block == nil {
			continue
		}
		inner := map[string]Expr{}
		for _, it := range fr.block.Iters {
			inner[it.Var.Name] = Substitute(it.Binding, sub)
		}
		for k, v := range inner {
			sub[k] = v
		}
	}
	return func(x Expr) Expr { return Substitute(x, sub) }
}

// cond is a condition on the path to a block, and the index of the frame
// it comes from (the path's length for the block's own predicate).
type cond struct {
	x  Expr
	at int
}

// conjunctsOf splits a && b && ... into its parts.
func conjunctsOf(x Expr) []Expr {
	if b, ok := x.(*Binary); ok && b.Op == OpAnd {
		return append(conjunctsOf(b.A), conjunctsOf(b.B)...)
	}
	return []Expr{x}
}

// namesOf returns every name f defines: sizes, buffers, variables, blocks.
func namesOf(f *Func) map[string]bool {
	names := map[string]bool{f.Name: true}
	for _, s := range f.Sizes {
		names[s.Name] = true
	}
	for _, b := range f.Params {
		names[b.Name] = true
	}
	Inspect(f.Body, func(n Node) bool {
		switch n := n.(type) {
		case *For:
			names[n.Var.Name] = true
		case *ScheduleBlock:
			names[n.Name] = true
			for _, it := range n.Iters {
				names[it.Var.Name] = true
			}
		case *Alloc:
			names[n.Buffer.Name] = true
		case *Var:
			names[n.Name] = true
		}
		return true
	})
	return names
}

// fresh returns base, or base with the first number that makes it unused,
// and marks it used.
func fresh(used map[string]bool, base string) string {
	name := base
	for i := 1; used[name]; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	used[name] = true
	return name
}
