// Package partition splits a loop whose iterations are guarded by a tail
// predicate into a main part, where the predicate provably holds and is
// dropped, and a tail that keeps it (Halide's PartitionLoops, TVM's
// LoopPartition).
//
// A schedule splits a loop of symbolic extent S by a constant factor with
// a predicated tail:
//
//	for (i0, 0, floordiv(S + 7, 8)) {
//	  for (k, 0, 256) { unrolled for (i1, 0, 8) {
//	    ScheduleBlock(C) { predicate(i0 * 8 + i1 < S) ... } } } }
//
// The predicate, tested in the innermost loops, costs more than the test:
// it keeps a matrix multiply's accumulators in memory (a guarded store
// cannot be promoted to a register), three times the kernel's time at
// S = 128. Func rewrites the loop into
//
//	for (i0, 0, floordiv(S, 8)) { ... no predicate ... }
//	for (i0_tail, floordiv(S, 8), floordiv(S + 7, 8) - floordiv(S, 8)) { ... as before ... }
//
// The main part's end is derived, not guessed: for a conjunct of the
// predicate that is affine in the loop's variable x (coefficient c > 0)
// and in the variables of the loops between it and the block (constant
// ranges), written d(x, y) <= k, it holds for every inner iteration when
// c*x + max_y(rest) <= k, that is for x <= floordiv(k - max_y(rest), c).
// A conjunct that is not of that form stays, in both parts. Serial and
// parallel loops are partitioned (each part keeps the loop's kind and
// annotations); a parallel loop whose main part would run fewer than two
// iterations is versioned inside its body instead (each iteration
// chooses the main part's body or the tail's); unrolled, vectorized and
// GPU-bound loops are left alone. A temporary that compacts at a loop
// gets a buffer of its own in each copy of that loop (the tail's, each
// version's, the interior's and the border's), so that each copy's
// still compacts to a tile.
//
// Borders does the same for the tests of a padded read (a select whose
// condition holds away from an image's border): it versions the loop
// over the interior, where the tests and the clamps of the index are
// dropped, and keeps the border as it was.
package partition

import (
	"fmt"

	"github.com/loom-go/loom/ast"
)

// maxParts bounds the loops one function partitions: each doubles the
// code under it.
const maxParts = 4

// Func returns f with its predicated loops partitioned (f itself when
// none is).
func Func(f *ast.Func) *ast.Func {
	p := &partitioner{names: map[string]bool{}, origin: map[string]string{}, blocks: map[string]bool{}, fallbacks: map[ast.Stmt]bool{}, ranges: ast.NewAnalyzer()}
	for _, b := range f.Params {
		p.names[b.Name] = true
	}
	// Sizes are never negative: a main part's end over a tile loop of
	// floordiv(S + 31, 32) iterations, max(0, floordiv(S - 32, 32) + 1),
	// is floordiv(S, 32), which package poly holds exactly (and so
	// proves the tail's temporaries carry no value between tiles).
	p.ranges.BindSizes(f.Sizes)
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Var:
			p.names[n.Name] = true
		case *ast.Alloc:
			p.names[n.Buffer.Name] = true
		case *ast.ScheduleBlock:
			p.blocks[n.Name] = true
		}
		return true
	})
	body := p.stmt(f.Body)
	if p.parts == 0 {
		return f
	}
	// The copies' own temporaries (see tail_buffers.go).
	out := *f
	out.Body = privatize(body, localTemporaries(f), p.origin, p.names, "_tail")
	return &out
}

type partitioner struct {
	names  map[string]bool // every variable and buffer name of the function
	blocks map[string]bool // every block name
	// origin maps the variable of a split's tail to the split loop's.
	origin map[string]string
	parts  int
	// fallbacks are the bodies versionTail keeps for the values of its
	// bound no version takes: left as they are (no part of the budget).
	fallbacks map[ast.Stmt]bool
	// ranges knows the ranges of the loops around the statement being
	// partitioned: a main part's bound simplifies over them (see split).
	ranges *ast.Analyzer
}

// stmt partitions the loops of s, outermost first.
func (p *partitioner) stmt(s ast.Stmt) ast.Stmt {
	if p.fallbacks[s] {
		return s
	}
	if l, ok := s.(*ast.For); ok {
		defer p.ranges.BindRange(l.Var.Name, l.Min, l.Extent)()
	}
	if l, ok := s.(*ast.For); ok && p.parts < maxParts && (l.Kind == ast.Serial || l.Kind == ast.Parallel) {
		main, tail, ok := p.split(l)
		if ok && l.Kind == ast.Parallel && fewerThanTwo(main) {
			return p.versionParallel(l, main, tail)
		}
		if ok {
			p.parts++
			// The tail keeps the conjuncts that made the split: split
			// again, its main part would be empty. Only the loops
			// inside it are partitioned.
			return ast.NewSeq(p.stmt(main), ast.MapChildren(p.versionTail(narrowTail(tail)), p.stmt, func(e ast.Expr) ast.Expr { return e }))
		}
	}
	return ast.MapChildren(s, p.stmt, func(e ast.Expr) ast.Expr { return e })
}

// versionParallel partitions parallel loop l, whose main part (main)
// would run fewer than two iterations, inside its body instead: each
// iteration runs the main part's body, its predicate dropped, before the
// main part's end, and the tail's after it (narrowed where the tail is
// one iteration), so that the iterations still spread over the threads.
// Left whole, the predicate stayed in the innermost loops: a depthwise
// 5x5 over 672 channels at 7x7 in two parallel tiles of four rows and
// three tested each row of its unrolled register tile (a branch around
// every vector FMA), twice the work of the partitioned one-thread code.
func (p *partitioner) versionParallel(l, main, tail *ast.For) ast.Stmt {
	p.parts++
	end := ast.Simplify(ast.Add(main.Min, main.Extent))
	var tailBody ast.Stmt
	if narrowed := narrowTail(tail); narrowed != tail {
		tailBody = narrowed.Body // the tail's variable fixed at its one value
	} else {
		tailBody = ast.Substitute(tail.Body, map[string]ast.Expr{tail.Var.Name: l.Var})
	}
	out := *l
	out.Body = ast.NewIf(ast.LT(l.Var, end), p.stmt(main.Body), p.stmt(tailBody))
	return &out
}

// fewerThanTwo reports whether loop l runs a constant number of
// iterations below two. A parallel loop whose main part would run so few
// is not partitioned (the loops inside it are): the part runs serially,
// then the tail after it, alone (a matrix product of 49 rows in two
// parallel tiles of 25 ran on one thread, each part one iteration).
func fewerThanTwo(l *ast.For) bool {
	n, ok := ast.ConstIntValue(ast.Simplify(l.Extent))
	return ok && n < 2
}

// split partitions loop l when some block under it has a conjunct of
// its predicate that holds over a leading range of l's iterations.
func (p *partitioner) split(l *ast.For) (main, tail *ast.For, ok bool) {
	x := l.Var
	t := x.DType
	var ends []ast.Expr
	dropped := map[*ast.ScheduleBlock][]int{} // conjuncts proven in the main part, by index
	walkBlocks(l.Body, scope{sub: map[string]ast.Expr{}}, func(b *ast.ScheduleBlock, sc scope) {
		if b.Predicate == nil {
			return
		}
		for i, c := range conjuncts(b.Predicate) {
			if !ast.Mentions(c, x.Name) {
				continue
			}
			if end, ok := mainEnd(c, x, sc.inner); ok {
				ends = append(ends, end)
				dropped[b] = append(dropped[b], i)
			}
		}
	})
	// An end may only use what is bound before the loop starts.
	inside := boundIn(l.Body)
	inside[x.Name] = true
	for _, e := range ends {
		for name := range inside {
			if ast.Mentions(e, name) {
				return nil, nil, false // over the block's own variables: leave the loop whole
			}
		}
	}
	if len(ends) == 0 {
		return nil, nil, false
	}
	// The main part is [Min, m), m the least of the ends, clamped into
	// the loop's range.
	lo, hi := l.Min, ast.Add(l.Min, l.Extent)
	m := ends[0]
	for _, e := range ends[1:] {
		m = ast.Min(m, e)
	}
	// Simplified over the loops around l: a parallel tile loop's
	// main part ends at min(5, max(0, 9 - 5*j0)) for j0 in [0, 2), which
	// is min(5, 9 - 5*j0); package poly holds that bound exactly and the
	// max not, so that a temporary compacted in the main part could not
	// be proven to carry no value between tiles (at two threads,
	// ResNet-50's 3x3 convolutions at 56x56 kept their 800 KB of
	// accumulators in memory).
	m = p.ranges.Simplify(ast.Min(ast.Max(m, lo), hi))
	dropPredicates := func(s ast.Stmt) ast.Stmt {
		return mapBlocks(s, func(b *ast.ScheduleBlock) *ast.ScheduleBlock {
			idx, ok := dropped[b]
			if !ok {
				return b
			}
			nb := *b
			nb.Predicate = without(b.Predicate, idx)
			return &nb
		})
	}
	main = &ast.For{Var: x, Min: lo, Extent: ast.Simplify(ast.Sub(m, lo)), Kind: l.Kind, Annotations: l.Annotations, Body: dropPredicates(l.Body)}
	tv := ast.NewVar(p.fresh(x.Name+"_tail"), t)
	p.origin[tv.Name] = x.Name
	if o, ok := p.origin[x.Name]; ok {
		p.origin[tv.Name] = o
	}
	// The tail's blocks are copies: they get names of their own (block
	// names are unique in a function).
	tailBody := mapBlocks(ast.Substitute(l.Body, map[string]ast.Expr{x.Name: tv}), func(b *ast.ScheduleBlock) *ast.ScheduleBlock {
		nb := *b
		nb.Name = freshIn(p.blocks, b.Name+"_tail")
		return &nb
	})
	tail = &ast.For{Var: tv, Min: m, Extent: ast.Simplify(ast.Sub(hi, m)), Kind: l.Kind, Annotations: l.Annotations, Body: tailBody}
	return main, tail, true
}

// narrowTail fixes the variable of a tail of one iteration at its value
// and narrows the loops inside it to the iterations their blocks'
// predicates keep. A tile of 32 lanes whose tail keeps 17 (49 pixels in
// tiles of 32) runs as a loop of 17: whole vectors and a last lane,
// unmasked, where a vector loop of 32 with a mask would keep a matrix
// multiply's accumulators in memory.
func narrowTail(tail *ast.For) *ast.For {
	first, ok1 := ast.ConstIntValue(ast.Simplify(tail.Min))
	n, ok2 := ast.ConstIntValue(ast.Simplify(tail.Extent))
	if !ok1 || !ok2 || n != 1 {
		return tail
	}
	out := *tail
	body := ast.Substitute(tail.Body, map[string]ast.Expr{tail.Var.Name: ast.IntConst(tail.Var.DType, first)})
	out.Body = narrowLoops(body)
	return &out
}

// maxVersions bounds the iterations of a loop versionTail specializes
// the tail for: one copy of the tail's body per value but the last.
const maxVersions = 8

// versionTail specializes a tail of symbolic bounds for the number of
// iterations its predicates keep of a short inner loop. A matrix of M
// rows in register tiles of 4 rows ends in a tile where the predicate
// i0*4 + i1 < M keeps the first M mod 4 rows of the unrolled loop i1:
// tested row by row inside the reduction, it keeps the accumulators in
// memory (two to three times slower per row than a whole tile). Each
// conjunct affine in one such loop's variable y (coefficient 1; a
// constant range of at most maxVersions iterations; not vectorized) is
// y <= E, E over the tail's variable and what is bound outside the tail;
// when every such conjunct's E differs from the first one's by a
// constant, the tail's body becomes
//
//	if E == first { body, y's loops narrowed to 1 iteration, those conjuncts dropped }
//	else if E == first+1 { ... 2 iterations ... }
//	...
//	else { body }
//
// (a value of E outside those, the body as it was). Other conjuncts stay.
func (p *partitioner) versionTail(tail *ast.For) *ast.For {
	if _, ok := ast.ConstIntValue(ast.Simplify(tail.Extent)); ok {
		return tail // narrowTail's, or a tail of constant length
	}
	inside := boundIn(tail.Body)
	type site struct {
		conj  int
		delta int64
		y     *ast.Var
	}
	var first ast.Expr // E of the first conjunct
	var span [2]int64  // its loop's first value and iterations
	sites := map[*ast.ScheduleBlock][]site{}
	ok := true
	var visit func(s ast.Stmt, loops []*ast.For)
	visit = func(s ast.Stmt, loops []*ast.For) {
		ast.Inspect(s, func(n ast.Node) bool {
			if !ok {
				return false
			}
			switch n := n.(type) {
			case *ast.For:
				visit(n.Body, append(loops[:len(loops):len(loops)], n))
				return false
			case *ast.ScheduleBlock:
				if n.Predicate != nil {
					for i, c := range conjuncts(n.Predicate) {
						e, r, y, found := tailBound(c, loops, inside)
						if !found {
							continue
						}
						if first == nil {
							first, span = e, r
						}
						d, isConst := ast.ConstIntValue(ast.Simplify(ast.Sub(e, first)))
						if !isConst || r != span {
							ok = false // bounds that do not move together
							return false
						}
						sites[n] = append(sites[n], site{i, d, y})
					}
				}
				if n.Init != nil {
					visit(n.Init, loops)
				}
				visit(n.Body, loops)
				return false
			}
			return true
		})
	}
	visit(tail.Body, nil)
	if !ok || first == nil {
		return tail
	}
	// One version per value of E that keeps part of y's range: y <= E
	// keeps span[0]..E, from one iteration to all but the last.
	body := tail.Body
	p.fallbacks[body] = true
	for v := span[0] + span[1] - 2; v >= span[0]; v-- {
		version := mapBlocks(tail.Body, func(b *ast.ScheduleBlock) *ast.ScheduleBlock {
			nb := *b
			nb.Name = freshIn(p.blocks, b.Name+"_v")
			ss, ok := sites[b]
			if !ok {
				return &nb
			}
			var pred ast.Expr
			for i, c := range conjuncts(b.Predicate) {
				for _, st := range ss {
					if st.conj == i {
						c = ast.LE(st.y, ast.IntConst(st.y.DType, v+st.delta))
					}
				}
				if pred == nil {
					pred = c
				} else {
					pred = ast.And(pred, c)
				}
			}
			nb.Predicate = pred
			return &nb
		})
		body = ast.NewIf(ast.EQ(first, ast.IntConst(first.Type(), v)), narrowLoops(version), body)
	}
	out := *tail
	out.Body = body
	return &out
}

// narrowLoops narrows each loop of constant range in s (outermost first)
// to the iterations where some block under it can run: where every block
// under the loop has a conjunct in the loop's variable alone, the loop
// ends where the last of them stops holding, and the conjuncts that hold
// over the whole narrowed range are dropped.
func narrowLoops(s ast.Stmt) ast.Stmt {
	l, ok := s.(*ast.For)
	if !ok {
		return ast.MapChildren(s, narrowLoops, func(e ast.Expr) ast.Expr { return e })
	}
	lo, ok1 := ast.ConstIntValue(ast.Simplify(l.Min))
	n, ok2 := ast.ConstIntValue(ast.Simplify(l.Extent))
	if !ok1 || !ok2 || n < 1 {
		return ast.MapChildren(s, narrowLoops, func(e ast.Expr) ast.Expr { return e })
	}
	// Each block's end: the least end of its conjuncts in l's variable
	// alone, by index.
	type bound struct {
		end  int64
		ends map[int]int64
	}
	bounds := map[*ast.ScheduleBlock]bound{}
	every := true
	ast.Inspect(l.Body, func(nd ast.Node) bool {
		b, ok := nd.(*ast.ScheduleBlock)
		if !ok || !every {
			return every
		}
		if b.HoldsBlock() || b.Predicate == nil {
			every = false
			return false
		}
		bd := bound{end: lo + n, ends: map[int]int64{}}
		for i, c := range conjuncts(b.Predicate) {
			if !ast.Mentions(c, l.Var.Name) {
				continue
			}
			m, ok := mainEnd(c, l.Var, nil)
			if !ok {
				continue
			}
			if e, ok := ast.ConstIntValue(ast.Simplify(m)); ok {
				bd.ends[i] = e
				bd.end = min(bd.end, e)
			}
		}
		if len(bd.ends) == 0 {
			every = false
			return false
		}
		bounds[b] = bd
		return false
	})
	if !every || len(bounds) == 0 {
		return ast.MapChildren(s, narrowLoops, func(e ast.Expr) ast.Expr { return e })
	}
	end := lo
	for _, bd := range bounds {
		end = max(end, bd.end)
	}
	end = min(end, lo+n)
	out := *l
	out.Extent = ast.IntConst(l.Extent.Type(), end-lo)
	out.Body = mapBlocks(l.Body, func(b *ast.ScheduleBlock) *ast.ScheduleBlock {
		bd, ok := bounds[b]
		if !ok {
			return b
		}
		var drop []int
		for i, e := range bd.ends {
			if e >= end {
				drop = append(drop, i)
			}
		}
		nb := *b
		nb.Predicate = without(b.Predicate, drop)
		return &nb
	})
	out.Body = narrowLoops(out.Body)
	return &out
}

// fresh returns name, or name with a number, naming no variable of the
// function.
func (p *partitioner) fresh(name string) string { return freshIn(p.names, name) }

// freshIn returns name, or name with a number, not in used, and adds it.
func freshIn(used map[string]bool, name string) string {
	out := name
	for k := 1; used[out]; k++ {
		out = fmt.Sprintf("%s%d", name, k)
	}
	used[out] = true
	return out
}

// conjuncts splits a predicate at its &&s.
func conjuncts(e ast.Expr) []ast.Expr {
	if b, ok := e.(*ast.Binary); ok && b.Op == ast.OpAnd {
		return append(conjuncts(b.A), conjuncts(b.B)...)
	}
	return []ast.Expr{e}
}

// without returns the conjunction of pred's conjuncts but those at the
// indexes drop (nil for none left).
func without(pred ast.Expr, drop []int) ast.Expr {
	var out ast.Expr
	for i, c := range conjuncts(pred) {
		if contains(drop, i) {
			continue
		}
		if out == nil {
			out = c
		} else {
			out = ast.And(out, c)
		}
	}
	return out
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// mapBlocks rewrites every schedule block of s by f (outermost first;
// blocks nested in a rewritten block are rewritten too).
func mapBlocks(s ast.Stmt, f func(*ast.ScheduleBlock) *ast.ScheduleBlock) ast.Stmt {
	var rec func(ast.Stmt) ast.Stmt
	rec = func(s ast.Stmt) ast.Stmt {
		if b, ok := s.(*ast.ScheduleBlock); ok {
			s = f(b)
		}
		return ast.MapChildren(s, rec, func(e ast.Expr) ast.Expr { return e })
	}
	return rec(s)
}

// scope is what a block's expressions are analysed in: the loops between
// the loop being split or versioned and the block, and the block
// iteration variables around it by the loop expressions they are bound
// to.
type scope struct {
	inner []*ast.For
	sub   map[string]ast.Expr
}

// under is the scope inside loop l.
func (sc scope) under(l *ast.For) scope {
	return scope{append(sc.inner[:len(sc.inner):len(sc.inner)], l), sc.sub}
}

// in is the scope inside block b: its iteration variables stand for
// their bindings.
func (sc scope) in(b *ast.ScheduleBlock) scope {
	sub := make(map[string]ast.Expr, len(sc.sub)+len(b.Iters))
	for k, e := range sc.sub {
		sub[k] = e
	}
	for _, it := range b.Iters {
		sub[it.Var.Name] = ast.Substitute(it.Binding, sc.sub)
	}
	return scope{sc.inner, sub}
}

// walkBlocks calls f for each block under s with its scope; the loops
// between x's loop and the block are inner.
func walkBlocks(s ast.Stmt, sc scope, f func(b *ast.ScheduleBlock, sc scope)) {
	ast.Inspect(s, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.For:
			walkBlocks(n.Body, sc.under(n), f)
			return false
		case *ast.ScheduleBlock:
			inner := sc.in(n)
			f(n, inner)
			if n.Init != nil {
				walkBlocks(n.Init, inner, f)
			}
			walkBlocks(n.Body, inner, f)
			return false
		}
		return true
	})
}

// boundIn returns the variables s binds: its loops' and its blocks'
// iteration variables.
func boundIn(s ast.Stmt) map[string]bool {
	out := map[string]bool{}
	ast.Inspect(s, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.For:
			out[n.Var.Name] = true
		case *ast.ScheduleBlock:
			for _, it := range n.Iters {
				out[it.Var.Name] = true
			}
		}
		return true
	})
	return out
}

// tailBound reads a conjunct c as y <= E: y the variable of one of loops
// (its coefficient 1, its range constant, of 2 to maxVersions
// iterations, serial or unrolled), E free of every variable in inside.
// It returns E, y's loop's first value and iterations, and y.
func tailBound(c ast.Expr, loops []*ast.For, inside map[string]bool) (ast.Expr, [2]int64, *ast.Var, bool) {
	d, k, ok := leForm(c)
	if !ok {
		return nil, [2]int64{}, nil, false
	}
	vars := map[string]bool{}
	for _, l := range loops {
		vars[l.Var.Name] = true
	}
	lin, ok := linearize(d, vars)
	if !ok {
		return nil, [2]int64{}, nil, false
	}
	var loop *ast.For
	for name, a := range lin.coef {
		if a == 0 {
			continue
		}
		if a != 1 || loop != nil {
			return nil, [2]int64{}, nil, false
		}
		for _, l := range loops {
			if l.Var.Name == name {
				loop = l
			}
		}
	}
	if loop == nil || loop.Kind != ast.Serial && loop.Kind != ast.Unrolled {
		return nil, [2]int64{}, nil, false
	}
	first, ok1 := ast.ConstIntValue(ast.Simplify(loop.Min))
	n, ok2 := ast.ConstIntValue(ast.Simplify(loop.Extent))
	if !ok1 || !ok2 || n < 2 || n > maxVersions {
		return nil, [2]int64{}, nil, false
	}
	for name := range inside {
		if ast.Mentions(lin.rest, name) {
			return nil, [2]int64{}, nil, false
		}
	}
	// y + rest <= k  <=>  y <= k - rest.
	e := ast.Simplify(ast.Sub(ast.IntConst(loop.Var.DType, k), lin.rest))
	return e, [2]int64{first, n}, loop.Var, true
}

// leForm writes a comparison c as d <= k.
func leForm(c ast.Expr) (ast.Expr, int64, bool) {
	b, ok := c.(*ast.Binary)
	if !ok {
		return nil, 0, false
	}
	switch b.Op {
	case ast.OpLT:
		return ast.Sub(b.A, b.B), -1, true
	case ast.OpLE:
		return ast.Sub(b.A, b.B), 0, true
	case ast.OpGT:
		return ast.Sub(b.B, b.A), -1, true
	case ast.OpGE:
		return ast.Sub(b.B, b.A), 0, true
	}
	return nil, 0, false
}

// mainEnd returns, for a conjunct c of a predicate, an end m such that c
// holds for every x < m and every iteration of the loops inner (between
// x's loop and the block), when c is affine in x (with a positive
// coefficient) and in the inner loops' variables (whose ranges are
// constant).
func mainEnd(c ast.Expr, x *ast.Var, inner []*ast.For) (ast.Expr, bool) {
	d, k, ok := leForm(c)
	if !ok {
		return nil, false
	}
	vars := map[string]bool{x.Name: true}
	ranges := map[string][2]int64{} // first and last value of each inner variable
	for _, l := range inner {
		first, ok1 := ast.ConstIntValue(l.Min)
		n, ok2 := ast.ConstIntValue(l.Extent)
		vars[l.Var.Name] = true
		if ok1 && ok2 && n >= 1 {
			ranges[l.Var.Name] = [2]int64{first, first + n - 1}
		}
	}
	lin, ok := linearize(d, vars)
	if !ok {
		return nil, false
	}
	cx := lin.coef[x.Name]
	if cx <= 0 {
		return nil, false
	}
	// The largest value the inner variables' terms take.
	var most int64
	for name, a := range lin.coef {
		if name == x.Name || a == 0 {
			continue
		}
		r, ok := ranges[name]
		if !ok {
			return nil, false // a variable of unknown range
		}
		lo, ok1 := mul64(a, r[0])
		hi, ok2 := mul64(a, r[1])
		var ok3 bool
		if most, ok3 = add64(most, max(lo, hi)); !ok1 || !ok2 || !ok3 {
			return nil, false
		}
	}
	// cx*x + most + rest <= k  <=>  x <= floordiv(k - most - rest, cx).
	t := x.DType
	bound := ast.Sub(ast.IntConst(t, k-most), lin.rest)
	end := ast.Add(ast.FloorDiv(bound, ast.IntConst(t, cx)), ast.IntConst(t, 1))
	return end, true
}

func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	return c, c/b == a && !(a == -1 && b == -1<<63) && !(b == -1 && a == -1<<63)
}

func add64(a, b int64) (int64, bool) {
	c := a + b
	return c, (c > a) == (b > 0)
}

// affine is coef·vars + rest, rest free of the variables.
type affine struct {
	coef map[string]int64
	rest ast.Expr
}

// linearize writes e as an affine form in vars, or fails when e is not
// one (a variable of vars under a product of two variables, a division,
// a min, ...). Terms free of vars go to rest, whatever they are.
func linearize(e ast.Expr, vars map[string]bool) (affine, bool) {
	mentions := func(e ast.Expr) bool {
		for v := range vars {
			if ast.Mentions(e, v) {
				return true
			}
		}
		return false
	}
	if !mentions(e) {
		return affine{coef: map[string]int64{}, rest: e}, true
	}
	switch e := e.(type) {
	case *ast.Var:
		return affine{coef: map[string]int64{e.Name: 1}, rest: ast.IntConst(e.DType, 0)}, true
	case *ast.Cast:
		if e.To != ast.Int64 || e.X.Type() != ast.Int32 {
			return affine{}, false // only a widening cast keeps every value
		}
		return linearize(e.X, vars)
	case *ast.Binary:
		switch e.Op {
		case ast.OpAdd, ast.OpSub:
			a, ok1 := linearize(e.A, vars)
			b, ok2 := linearize(e.B, vars)
			if !ok1 || !ok2 {
				return affine{}, false
			}
			sign := int64(1)
			if e.Op == ast.OpSub {
				sign = -1
			}
			for name, c := range b.coef {
				a.coef[name] += sign * c
			}
			if e.Op == ast.OpSub {
				a.rest = ast.Sub(a.rest, b.rest)
			} else {
				a.rest = ast.Add(a.rest, b.rest)
			}
			return a, true
		case ast.OpMul:
			for _, pair := range [2][2]ast.Expr{{e.A, e.B}, {e.B, e.A}} {
				c, ok := ast.ConstIntValue(ast.Simplify(pair[1]))
				if !ok {
					continue
				}
				a, ok := linearize(pair[0], vars)
				if !ok {
					return affine{}, false
				}
				for name := range a.coef {
					if a.coef[name], ok = mul64(a.coef[name], c); !ok {
						return affine{}, false
					}
				}
				a.rest = ast.Mul(a.rest, pair[1])
				return a, true
			}
		}
	}
	return affine{}, false
}
