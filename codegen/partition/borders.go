package partition

import (
	"github.com/loom-go/loom/ast"
)

// maxBorderVersions bounds the loops Borders versions in one function:
// each adds a copy of the loop's body.
const maxBorderVersions = 8

// Borders versions the loops whose blocks read a padded border through
// tests: a convolution or a pool that reads its input as if padded
// (fusion's inline padding) tests every tap,
//
//	select(h - 1 >= 0 && h - 1 < 112 && ..., X[min(max(h - 1, 0), 111), ...], 0)
//
// though the test fails only near the border. For a loop over x (serial
// or parallel) under which such a conjunct holds, for every iteration of
// the loops between x and the block, over a range [S, E) of x, the body
// becomes
//
//	if (x >= S && x < E) { body, those conjuncts true, the clamps they make needless dropped }
//	else { body }
//
// The range is derived as the tail partition derives its main part: a
// conjunct affine in x and in the inner loops' variables (constant
// ranges) holds for x at or after a start (x's coefficient negative) or
// before an end (positive); S and E may use the loops around x (a tile's
// columns start where its tile does). A min or max whose comparison
// holds over the whole of [S, E) becomes the operand it picks there (the
// clamp of a padded read).
//
// Each conjunct is taken by one loop (taker): the innermost that can
// take it among those that are not the block's reduction loops (a tile
// loop, not the window's taps), so that the tests run only in the tiles
// that touch the border; a border (an else) is not versioned again.
// Unrolled, vectorized and GPU-bound loops are left alone.
func Borders(f *ast.Func) *ast.Func {
	v := &versioner{blocks: map[string]bool{}, buffers: map[string]bool{}, budget: maxBorderVersions}
	for _, b := range f.Params {
		v.buffers[b.Name] = true
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ScheduleBlock:
			v.blocks[n.Name] = true
		case *ast.Alloc:
			v.buffers[n.Buffer.Name] = true
		}
		return true
	})
	body := v.stmt(f.Body)
	if v.budget == maxBorderVersions {
		return f
	}
	// The interior's and the border's own temporaries (see
	// tail_buffers.go).
	out := *f
	out.Body = privatize(body, localTemporaries(f), nil, v.buffers, "_in")
	return &out
}

type versioner struct {
	blocks  map[string]bool // every block name
	buffers map[string]bool // every buffer name
	budget  int
}

// stmt versions the loops of s, outermost first. A border (the else of
// a version) stays as it is: versioned again, a tile's code would be
// copied once more for a few iterations (the window's taps inside the
// image, at a compile time a third longer, measured no faster).
func (v *versioner) stmt(s ast.Stmt) ast.Stmt {
	l, ok := s.(*ast.For)
	if !ok {
		return ast.MapChildren(s, v.stmt, keepExpr)
	}
	out := *l
	if v.budget > 0 && versionable(l) {
		if cond, then, ok := v.version(l); ok {
			v.budget--
			if k, ok := cond.(*ast.Const); ok && k.Int != 0 {
				out.Body = v.stmt(then)
			} else {
				out.Body = ast.NewIf(cond, v.stmt(then), l.Body)
			}
			return &out
		}
	}
	out.Body = v.stmt(l.Body)
	return &out
}

func keepExpr(e ast.Expr) ast.Expr { return e }

// blockExprs calls f for every expression of block b's own statements
// (not those of the loops and blocks nested in it).
func blockExprs(b *ast.ScheduleBlock, f func(ast.Expr)) {
	var stmts func(s ast.Stmt)
	stmts = func(s ast.Stmt) {
		ast.Inspect(s, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.For, *ast.ScheduleBlock:
				return false
			case ast.Expr:
				f(n)
			}
			return true
		})
	}
	if b.Init != nil {
		stmts(b.Init)
	}
	stmts(b.Body)
}

// version returns the condition x in [S, E) and l's body with what holds
// there simplified, when some select under l has a conjunct that holds
// over such a range.
func (v *versioner) version(l *ast.For) (ast.Expr, ast.Stmt, bool) {
	x := l.Var
	var starts, ends []ast.Expr
	walkBlocks(l.Body, scope{sub: map[string]ast.Expr{}}, func(b *ast.ScheduleBlock, sc scope) {
		blockExprs(b, func(e ast.Expr) {
			sel, ok := e.(*ast.Select)
			if !ok {
				return
			}
			for _, c := range conjuncts(sel.Cond) {
				c = ast.Substitute(c, sc.sub)
				if taker(c, append([]*ast.For{l}, sc.inner...), b) != l {
					continue
				}
				start, end, ok := holds(c, x, sc.inner)
				if !ok {
					continue
				}
				if start != nil {
					starts = append(starts, start)
				}
				if end != nil {
					ends = append(ends, end)
				}
			}
		})
	})
	if len(starts)+len(ends) == 0 {
		return nil, nil, false
	}
	// S and E must be known when an iteration starts.
	inside := boundIn(l.Body)
	inside[x.Name] = true
	for _, e := range append(starts[:len(starts):len(starts)], ends...) {
		for name := range inside {
			if ast.Mentions(e, name) {
				return nil, nil, false
			}
		}
	}
	lo, hi := l.Min, ast.Add(l.Min, l.Extent)
	var s, e ast.Expr = lo, hi
	var cond ast.Expr
	if len(starts) > 0 {
		s = starts[0]
		for _, t := range starts[1:] {
			s = ast.Max(s, t)
		}
		s = ast.Simplify(s)
		cond = ast.GE(x, s)
	}
	if len(ends) > 0 {
		e = ends[0]
		for _, t := range ends[1:] {
			e = ast.Min(e, t)
		}
		e = ast.Simplify(e)
		lt := ast.LT(x, e)
		if cond == nil {
			cond = lt
		} else {
			cond = ast.And(cond, lt)
		}
	}
	// A range of fewer than two iterations, or none of the loop's, is
	// not worth a copy of the body.
	if n, ok := ast.ConstIntValue(ast.Simplify(ast.Sub(ast.Min(e, hi), ast.Max(s, lo)))); ok && n < 2 {
		return nil, nil, false
	}
	then := mapBlocks(l.Body, func(b *ast.ScheduleBlock) *ast.ScheduleBlock {
		nb := *b
		nb.Name = freshIn(v.blocks, b.Name+"_in")
		return &nb
	})
	then = v.ownTemporaries(then)
	r := refiner{x: x, s: s, e: e}
	then = r.stmt(then, scope{sub: map[string]ast.Expr{}})
	// Over the loop's own range the test may always hold (a border the
	// loop never reaches): then the version is the body.
	a := ast.NewAnalyzer()
	a.BindRange(x.Name, l.Min, l.Extent)
	return a.Simplify(cond), then, true
}

// ownTemporaries gives each temporary declared in body (a tile's
// accumulators that the tail partition declared beside its loop) a new
// buffer of the same type and shape: the version and the border are two
// copies of the body, and a buffer is declared once.
func (v *versioner) ownTemporaries(body ast.Stmt) ast.Stmt {
	var bufs []*ast.Buffer
	ast.Inspect(body, func(n ast.Node) bool {
		if a, ok := n.(*ast.Alloc); ok {
			bufs = append(bufs, a.Buffer)
		}
		return true
	})
	for _, old := range bufs {
		nb := *old
		nb.Name = freshIn(v.buffers, old.Name+"_in")
		body = ast.RebindBuffer(body, old, &nb)
	}
	return body
}

// refiner rewrites the blocks under x's loop for x in [s, e): the
// conjuncts of selects and the comparisons of mins and maxes that hold
// over the whole range are decided.
type refiner struct {
	x    *ast.Var
	s, e ast.Expr
}

func (r refiner) stmt(s ast.Stmt, sc scope) ast.Stmt {
	switch n := s.(type) {
	case *ast.For:
		out := *n
		out.Body = r.stmt(n.Body, sc.under(n))
		return &out
	case *ast.ScheduleBlock:
		inner := sc.in(n)
		out := *n
		if n.Init != nil {
			out.Init = r.stmt(n.Init, inner)
		}
		out.Body = r.stmt(n.Body, inner)
		return &out
	}
	return ast.MapChildren(s, func(c ast.Stmt) ast.Stmt { return r.stmt(c, sc) }, func(e ast.Expr) ast.Expr { return r.expr(e, sc) })
}

// expr rewrites e bottom-up: a clamp inside a tested index is decided
// before the test around it.
func (r refiner) expr(e ast.Expr, sc scope) ast.Expr {
	e = ast.MapChildren(e, keepStmt, func(c ast.Expr) ast.Expr { return r.expr(c, sc) })
	switch n := e.(type) {
	case *ast.Select:
		var kept ast.Expr
		for _, c := range conjuncts(n.Cond) {
			if r.covers(c, sc) {
				continue
			}
			if kept == nil {
				kept = c
			} else {
				kept = ast.And(kept, c)
			}
		}
		if kept == nil {
			return n.T
		}
		return ast.NewSelect(kept, n.T, n.F)
	case *ast.Binary:
		if n.Op != ast.OpMin && n.Op != ast.OpMax || !isInt(n.A.Type()) {
			return e
		}
		// min(a, b) is a where a <= b; max(a, b) is a where b <= a.
		aFirst, bFirst := ast.LE(n.A, n.B), ast.LE(n.B, n.A)
		if n.Op == ast.OpMax {
			aFirst, bFirst = bFirst, aFirst
		}
		if r.covers(aFirst, sc) {
			return n.A
		}
		if r.covers(bFirst, sc) {
			return n.B
		}
	}
	return e
}

func keepStmt(s ast.Stmt) ast.Stmt { return s }

func isInt(t ast.DType) bool { return t == ast.Int32 || t == ast.Int64 }

// covers reports whether comparison c holds for every x in [s, e) and
// every iteration of the inner loops.
func (r refiner) covers(c ast.Expr, sc scope) bool {
	start, end, ok := holds(ast.Substitute(c, sc.sub), r.x, sc.inner)
	if !ok {
		return false
	}
	if start != nil {
		return notBelow(r.s, start)
	}
	return notBelow(end, r.e)
}

// notBelow reports whether a >= b provably: their difference is a
// non-negative constant, or a is a max with such a term, or b a min.
func notBelow(a, b ast.Expr) bool {
	if d, ok := ast.ConstIntValue(ast.Simplify(ast.Sub(a, b))); ok {
		return d >= 0
	}
	if m, ok := a.(*ast.Binary); ok && m.Op == ast.OpMax {
		return notBelow(m.A, b) || notBelow(m.B, b)
	}
	if m, ok := b.(*ast.Binary); ok && m.Op == ast.OpMin {
		return notBelow(a, m.A) || notBelow(a, m.B)
	}
	return false
}

// taker returns the loop of path (from the loop being versioned down to
// block b) that versions for conjunct c: a versionable loop over whose
// variable c holds over a range, the innermost one that is not one of
// b's reduction loops, or else the innermost one. Its version's test
// runs once per iteration of that loop: an outer loop's would leave a
// whole tile of the border's width to the tests (a tile of 7 columns of
// an image of 28, 4 tiles: half the image), a reduction loop's (a
// window's taps) would test every tap.
func taker(c ast.Expr, path []*ast.For, b *ast.ScheduleBlock) *ast.For {
	var spatial, reduce *ast.For
	for i, m := range path {
		if !versionable(m) || !ast.Mentions(c, m.Var.Name) {
			continue
		}
		if _, _, ok := holds(c, m.Var, path[i+1:]); !ok {
			continue
		}
		if reduces(b, m) {
			reduce = m
		} else {
			spatial = m
		}
	}
	if spatial != nil {
		return spatial
	}
	return reduce
}

// reduces says whether loop m runs over a reduction of block b: its
// variable is in the binding of one of b's reduce iteration variables.
func reduces(b *ast.ScheduleBlock, m *ast.For) bool {
	for _, it := range b.Iters {
		if it.Kind == ast.Reduce && ast.Mentions(it.Binding, m.Var.Name) {
			return true
		}
	}
	return false
}

// versionable says whether loop l may be versioned: serial or parallel,
// of more than one iteration.
func versionable(l *ast.For) bool {
	if l.Kind != ast.Serial && l.Kind != ast.Parallel {
		return false
	}
	n, ok := ast.ConstIntValue(ast.Simplify(l.Extent))
	return !ok || n > 1
}

// holds returns where comparison c holds for every iteration of the
// loops inner: for x at or after start (x's coefficient negative) or
// before end (positive), when c is affine in x and in the inner loops'
// variables (constant ranges).
func holds(c ast.Expr, x *ast.Var, inner []*ast.For) (start, end ast.Expr, ok bool) {
	if !ast.Mentions(c, x.Name) {
		return nil, nil, false
	}
	if end, ok := mainEnd(c, x, inner); ok {
		return nil, end, true
	}
	// -a*x + rest <= k is a*x + (-rest) >= -k: negate both sides and
	// read the end of the mirrored variable, -x < m  <=>  x > -m.
	d, k, ok := leForm(c)
	if !ok {
		return nil, nil, false
	}
	t := x.DType
	neg := ast.NewVar(x.Name, t)
	mirrored := ast.Substitute(d, map[string]ast.Expr{x.Name: ast.Sub(ast.IntConst(t, 0), neg)})
	m, ok := mainEnd(ast.LE(mirrored, ast.IntConst(d.Type(), k)), neg, inner)
	if !ok {
		return nil, nil, false
	}
	// -x < m  <=>  x >= 1 - m.
	return ast.Sub(ast.IntConst(t, 1), m), nil, true
}
