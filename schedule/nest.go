package schedule

import (
	"slices"

	"github.com/loom-go/loom/ast"
)

// Blocks around nests.
//
// A block other than the root may hold loops and blocks of its own: the
// block Blockize makes around a nest (TVM's outer block). It is context:
// poly models only the blocks inside it (leaf blocks), under its
// iteration variables and predicate. Its regions declare what the blocks
// inside it access; commit recomputes them after every primitive
// (refreshNests), so that a primitive that changes the inside (a cache, an
// inlined producer) leaves no stale region. Primitives that move blocks or
// make new ones next to a block (compute_at, reverse_compute_at, the
// inlines, decompose_reduction, rfactor) work at the root's level only:
// they refuse a block or loop inside a block around a nest (inNest), and
// every primitive that needs a leaf block refuses one around a nest
// (notLeaf).

// nestOf returns the innermost block around the statement at place at
// (the statement itself not counted) other than f's root block, or nil.
func nestOf(f *ast.Func, at place) *ast.ScheduleBlock {
	for k := len(at) - 2; k >= 0; k-- {
		if b, ok := at[k].(*ast.ScheduleBlock); ok && ast.Stmt(b) != f.Body {
			return b
		}
	}
	return nil
}

// rootLoops returns the loops of place at that are outside every block
// but the root, outermost first.
func rootLoops(f *ast.Func, at place) []*ast.For {
	var out []*ast.For
	for _, s := range at {
		switch x := s.(type) {
		case *ast.For:
			out = append(out, x)
		case *ast.ScheduleBlock:
			if ast.Stmt(x) != f.Body {
				return out
			}
		}
	}
	return out
}

// inNest is the refusal of a primitive that does not work inside a block
// around a nest, given n (a block or loop) inside block outer.
func inNest(prim string, f *ast.Func, n ast.Node, outer *ast.ScheduleBlock) *Error {
	return illegal(prim, f, []ast.Node{n, outer}, "%s is inside block %s, a block around a nest (as Blockize makes); %s works outside such blocks only", describe(n), outer.Name, prim)
}

// notLeaf is the refusal of a primitive that needs a leaf block, given b,
// a block around a nest.
func notLeaf(prim string, f *ast.Func, b *ast.ScheduleBlock) *Error {
	return illegal(prim, f, nodes(b), "block %s holds other blocks (it is a block around a nest, as Blockize makes); %s works on the blocks inside it", b.Name, prim)
}

// leafAtRoot refuses block b (at place at) unless it is a leaf block
// outside every block around a nest.
func leafAtRoot(prim string, f *ast.Func, b *ast.ScheduleBlock, at place) error {
	if ast.Stmt(b) != f.Body && b.HoldsBlock() {
		return notLeaf(prim, f, b)
	}
	if outer := nestOf(f, at); outer != nil {
		return inNest(prim, f, b, outer)
	}
	return nil
}

// refreshNests returns f with the regions of every block around a nest
// (but the root) recomputed from the blocks inside it (nestRegions),
// innermost first; f itself when it has no such block, or when none
// changed. A block that accesses buffers in statements of its own keeps
// its regions.
func refreshNests(f *ast.Func) *ast.Func {
	root := f.Body
	has := false
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if b, ok := n.(*ast.ScheduleBlock); ok && ast.Stmt(b) != root && b.HoldsBlock() {
			has = true
		}
		return !has
	})
	if !has {
		return f
	}
	var stmt func(s ast.Stmt) ast.Stmt
	stmt = func(s ast.Stmt) ast.Stmt {
		n := ast.MapChildren(s, stmt, keepExpr)
		b, ok := n.(*ast.ScheduleBlock)
		if !ok || s == root || !b.HoldsBlock() || accessesOwn(b) {
			return n
		}
		reads, writes := nestRegions(f, b)
		if sameRegions(reads, b.Reads) && sameRegions(writes, b.Writes) {
			return n
		}
		c := *b
		c.Reads, c.Writes = reads, writes
		return &c
	}
	return ast.MapChildren(f, stmt, keepExpr)
}

// accessesOwn reports whether b loads or stores in statements of its own
// (outside the blocks inside it).
func accessesOwn(b *ast.ScheduleBlock) bool {
	found := false
	for _, s := range []ast.Stmt{b.Init, b.Body} {
		if s == nil {
			continue
		}
		ast.Inspect(s, func(n ast.Node) bool {
			switch n.(type) {
			case *ast.ScheduleBlock:
				return false // its bindings, domains and predicate read nothing (poly refuses loads there)
			case *ast.Load, *ast.Store:
				found = true
			}
			return !found
		})
	}
	return found
}

func sameRegions(a, b []ast.Region) bool {
	return slices.EqualFunc(a, b, func(x, y ast.Region) bool { return x.Buffer == y.Buffer && x.SameRanges(y) })
}

// nestRegions returns what the blocks directly inside block b (not inside
// another block in b) read and write, as regions over b's iteration
// variables: each block's regions at its bindings, over every iteration of
// the loops between b and it (relaxRegions), in order, each listed once.
// Buffers b allocates inside itself are private to it and left out.
func nestRegions(f *ast.Func, b *ast.ScheduleBlock) (reads, writes []ast.Region) {
	// What the regions may be simplified with: b's variables in their
	// domains, the sizes non-negative.
	a := analyzerFor(f, nil)
	for _, it := range b.Iters {
		a.BindRange(it.Var.Name, it.Dom.Min, it.Dom.Extent)
	}
	own := map[*ast.Buffer]bool{}
	var walk func(s ast.Stmt, loops []*ast.For)
	walk = func(s ast.Stmt, loops []*ast.For) {
		switch x := s.(type) {
		case *ast.For:
			walk(x.Body, append(loops[:len(loops):len(loops)], x))
		case *ast.Seq:
			for _, st := range x.Stmts {
				walk(st, loops)
			}
		case *ast.IfThenElse:
			walk(x.Then, loops)
			if x.Else != nil {
				walk(x.Else, loops)
			}
		case *ast.Alloc:
			own[x.Buffer] = true
		case *ast.ScheduleBlock:
			bind := map[string]ast.Expr{}
			for _, it := range x.Iters {
				bind[it.Var.Name] = it.Binding
			}
			reads = append(reads, relaxRegions(x.Reads, bind, loops, a)...)
			writes = append(writes, relaxRegions(x.Writes, bind, loops, a)...)
		}
	}
	if b.Init != nil {
		walk(b.Init, nil)
	}
	walk(b.Body, nil)
	keep := func(rs []ast.Region) []ast.Region {
		return dedupRegions(slices.DeleteFunc(rs, func(r ast.Region) bool { return own[r.Buffer] }))
	}
	return keep(reads), keep(writes)
}

// relaxRegions returns the regions of a block whose iteration variables
// take the given bindings, over every iteration of the loops of chain
// (outermost first, each bounded by the loops before it): the regions of
// the block around them. Each range is clipped to the buffer's shape
// where a knows that simplifies it (the accesses are inside the buffer).
// A dimension whose bounds cannot be relaxed (not monotone in the loops)
// is the buffer's whole dimension. Regions that come out the same are
// listed once.
func relaxRegions(rs []ast.Region, bindings map[string]ast.Expr, chain []*ast.For, a *ast.Analyzer) []ast.Region {
	var out []ast.Region
	for _, r := range rs {
		nr := ast.Region{Buffer: r.Buffer, Ranges: make([]ast.Range, len(r.Ranges))}
		for d, rg := range r.Ranges {
			t := rg.Min.Type()
			shape := r.Buffer.Shape[d]
			lo := ast.Substitute(rg.Min, bindings)
			hi := ast.Substitute(ast.Sub(ast.Add(rg.Min, rg.Extent), ast.One(t)), bindings)
			l, ok1 := relax(lo, chain, false)
			h, ok2 := relax(hi, chain, true)
			if !ok1 || !ok2 || l.Type() != t || h.Type() != t || shape.Type() != t {
				nr.Ranges[d] = ast.Range{Min: ast.Zero(shape.Type()), Extent: shape}
				continue
			}
			if c := a.Simplify(ast.Max(l, ast.Zero(t))); !isMinMax(c) {
				l = c
			}
			if c := a.Simplify(ast.Min(h, ast.Sub(shape, ast.One(t)))); !isMinMax(c) {
				h = c
			}
			nr.Ranges[d] = ast.Range{Min: l, Extent: a.Simplify(ast.Add(ast.Sub(h, l), ast.One(t)))}
		}
		if !slices.ContainsFunc(out, func(o ast.Region) bool { return o.Buffer == nr.Buffer && o.SameRanges(nr) }) {
			out = append(out, nr)
		}
	}
	return out
}

// isMinMax reports whether e is a min or a max.
func isMinMax(e ast.Expr) bool {
	b, ok := e.(*ast.Binary)
	return ok && (b.Op == ast.OpMin || b.Op == ast.OpMax)
}

// relax returns a bound of e (the greatest value if upper, else the least)
// over every iteration of the loops of chain, outermost first, each loop's
// bounds over the loops before it: an expression free of the loops' variables.
// An affine e is bounded exactly, one loop at a time from the innermost
// (each replaced by the end of its range that bounds e, which brings in
// the loops its bounds use); another is bounded term by term, through the
// operations monotone in their operands. ok is false when neither works.
func relax(e ast.Expr, chain []*ast.For, upper bool) (ast.Expr, bool) {
	e = ast.Simplify(e)
	loops := map[string]bool{}
	for _, x := range chain {
		loops[x.Var.Name] = true
	}
	if !mentionsNames(e, loops) {
		return e, true
	}
	if b, ok := relaxAffine(e, chain, upper); ok {
		return b, true
	}
	return relaxTerms(e, chain, loops, upper, 0)
}

// relaxAffine is relax for an e affine in each loop in turn.
func relaxAffine(e ast.Expr, chain []*ast.For, upper bool) (ast.Expr, bool) {
	t := e.Type()
	cur := e
	for k := len(chain) - 1; k >= 0; k-- {
		x := chain[k]
		coefs, rest, ok := linearIn(cur, map[string]bool{x.Var.Name: true})
		if !ok {
			return nil, false
		}
		a := coefs[x.Var.Name]
		if a == 0 {
			continue
		}
		if x.Min.Type() != t {
			return nil, false
		}
		end := x.Min
		if (a > 0) == upper {
			end = ast.Sub(ast.Add(x.Min, x.Extent), ast.One(t))
		}
		cur = ast.Simplify(ast.Add(rest, ast.Mul(end, ast.IntConst(t, a))))
	}
	return cur, true
}

// relaxTerms is relax through the operations monotone in their operands
// (depth bounds the recursion through loop bounds).
func relaxTerms(e ast.Expr, chain []*ast.For, loops map[string]bool, upper bool, depth int) (ast.Expr, bool) {
	if !mentionsNames(e, loops) {
		return e, true
	}
	if depth > 64 {
		return nil, false
	}
	rec := func(x ast.Expr, up bool) (ast.Expr, bool) { return relaxTerms(x, chain, loops, up, depth+1) }
	t := e.Type()
	switch x := e.(type) {
	case *ast.Var:
		for _, l := range chain {
			if l.Var.Name != x.Name || l.Min.Type() != t {
				continue
			}
			if upper {
				return rec(ast.Sub(ast.Add(l.Min, l.Extent), ast.One(t)), true)
			}
			return rec(l.Min, false)
		}
	case *ast.Binary:
		switch x.Op {
		case ast.OpAdd, ast.OpMin, ast.OpMax:
			a, ok1 := rec(x.A, upper)
			b, ok2 := rec(x.B, upper)
			if ok1 && ok2 {
				return ast.Simplify(&ast.Binary{Op: x.Op, A: a, B: b}), true
			}
		case ast.OpSub:
			a, ok1 := rec(x.A, upper)
			b, ok2 := rec(x.B, !upper)
			if ok1 && ok2 {
				return ast.Simplify(ast.Sub(a, b)), true
			}
		case ast.OpMul:
			for _, pair := range [][2]ast.Expr{{x.A, x.B}, {x.B, x.A}} {
				c, ok := ast.ConstIntValue(pair[1])
				if !ok {
					continue
				}
				a, ok := rec(pair[0], upper == (c >= 0))
				if ok {
					return ast.Simplify(ast.Mul(a, pair[1])), true
				}
			}
		case ast.OpFloorDiv, ast.OpDiv:
			// Both round monotonically: non-decreasing in the dividend
			// for a positive divisor.
			if c, ok := ast.ConstIntValue(x.B); ok && c > 0 {
				if a, ok := rec(x.A, upper); ok {
					return ast.Simplify(&ast.Binary{Op: x.Op, A: a, B: x.B}), true
				}
			}
		case ast.OpFloorMod:
			if c, ok := ast.ConstIntValue(x.B); ok && c > 0 {
				if upper {
					return ast.IntConst(t, c-1), true
				}
				return ast.Zero(t), true
			}
		}
	}
	return nil, false
}
