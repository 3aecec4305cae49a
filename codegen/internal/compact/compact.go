// Package compact plans buffer compaction for the code generators.
//
// The schedule primitives declare their temporaries at full size, where
// the function declares its buffers (a cache_write's local tile is a whole
// copy of the output, an rfactor's partial sums a row per lane). Lowering
// allocates each such buffer instead at the start of each iteration of the
// deepest loop around all its uses, only as large as the region one
// iteration touches, and indexes it from that region's first element:
//
//	alloc C_local: float32[1024, 1024] in local    (at the root)
//
// becomes, per iteration of the tile loop j_0, a [8, 32] array on the
// stack, which LLVM keeps in registers. A buffer compacts at a loop only if
// no value flows through it from one iteration of that loop (or of a loop
// outside it) to another: the dependences it carries must be carried by
// loops inside. The code generator says which loops it can allocate at
// (the CPU one none inside a vectorized loop, where each lane would need
// its own copy; the GPU one none inside a thread loop for shared memory).
package compact

import (
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// Compaction says where and how small a temporary buffer is allocated.
type Compaction struct {
	Loop   *ast.For   // the buffer lives for one iteration of Loop
	Shape  []ast.Expr // extents of the region an iteration uses (over the sizes)
	Origin []ast.Expr // its first index (over the sizes and the loops up to Loop)
	// Smaller is whether Shape is smaller than the buffer. A GPU buffer
	// moves into the kernel either way; a CPU one stays where it is
	// declared when it would not shrink.
	Smaller bool
}

// Allowed reports whether buf may be allocated once per iteration of the
// last of loops (the loops from the outermost down to it).
type Allowed func(buf *ast.Buffer, loops []*ast.For) bool

// Plan finds the compaction of every temporary of f that has one at a
// loop allowed accepts. A function the polyhedral model cannot hold gets
// none.
func Plan(f *ast.Func, allowed Allowed) map[*ast.Buffer]*Compaction {
	allocLoops := map[*ast.Buffer][]*ast.For{}
	var order []*ast.Buffer // by declaration: the dependence budget goes to the first
	var walk func(s ast.Stmt, loops []*ast.For)
	walk = func(s ast.Stmt, loops []*ast.For) {
		switch s := s.(type) {
		case *ast.Alloc:
			allocLoops[s.Buffer] = loops
			order = append(order, s.Buffer)
		case *ast.For:
			walk(s.Body, append(slices.Clone(loops), s))
		case *ast.Seq:
			for _, st := range s.Stmts {
				walk(st, loops)
			}
		case *ast.IfThenElse:
			walk(s.Then, loops)
			walk(s.Else, loops)
		case *ast.ScheduleBlock:
			walk(s.Init, loops)
			walk(s.Body, loops)
		}
	}
	walk(f.Body, nil)
	if len(allocLoops) == 0 {
		return nil
	}
	p, err := poly.Extract(f)
	if err != nil {
		return nil
	}
	plans := map[*ast.Buffer]*Compaction{}
	for _, buf := range order {
		if c := planCompaction(f, p, buf, len(allocLoops[buf]), allowed); c != nil {
			plans[buf] = c
		}
	}
	return plans
}

// planCompaction tries the loops around every use of buf, deepest first,
// below the depth of its declaration.
func planCompaction(f *ast.Func, p *poly.Program, buf *ast.Buffer, declDepth int, allowed Allowed) *Compaction {
	var users []*poly.Instances
	for _, in := range p.Blocks {
		if accesses(in, buf) {
			users = append(users, in)
		}
	}
	if len(users) == 0 {
		return nil
	}
	deps := p.DepsOn(users, buf, poly.RAW, poly.WAR)
	common := users[0].Loops
	for _, u := range users[1:] {
		n := 0
		for n < len(common) && n < len(u.Loops) && common[n] == u.Loops[n] {
			n++
		}
		common = common[:n]
	}
	for k := len(common) - 1; k >= declDepth; k-- {
		if !allowed(buf, common[:k+1]) {
			continue
		}
		if carriesFlow(deps, buf, k) && !writtenFirst(p, deps, users, buf, common[k], k) {
			continue
		}
		if c := regionAt(f, p, users, buf, common[:k+1]); c != nil {
			return c
		}
	}
	return nil
}

func accesses(in *poly.Instances, buf *ast.Buffer) bool {
	for _, a := range append(slices.Clone(in.Reads), in.Writes...) {
		if a.Buffer == buf {
			return true
		}
	}
	return false
}

// carriesFlow reports whether a value of buf flows from one iteration of
// one of the loops 0..k around its uses to another.
func carriesFlow(deps []*poly.Dependence, buf *ast.Buffer, k int) bool {
	for _, d := range deps {
		if d.Buffer != buf || d.Kind != poly.RAW {
			continue
		}
		for _, level := range d.Carried {
			if level <= k {
				return true
			}
		}
	}
	return false
}

// writtenFirst reports whether, in every iteration of loop (at depth k),
// each element of buf that is read was written earlier in that same
// iteration. Then no value flows into the iteration from another, even
// where memory-based dependences say one iteration's write and a later
// one's read touch the same element: a cache refilled in each iteration of
// a tile loop. It checks two things: the reads of each block lie within
// what the blocks write in the same iteration, and no read comes before a
// write of the same element in one iteration (no anti dependence inside
// one). When poly cannot decide, the answer is no.
func writtenFirst(p *poly.Program, deps []*poly.Dependence, users []*poly.Instances, buf *ast.Buffer, loop *ast.For, k int) bool {
	for _, d := range deps {
		if d.Buffer != buf || d.Kind != poly.WAR {
			continue
		}
		if d.Independent || slices.ContainsFunc(d.Carried, func(level int) bool { return level > k }) {
			return false
		}
	}
	var written *poly.Set
	for _, u := range users {
		w, err := p.Accessed(u.Block.Name, buf, loop, true)
		if err != nil {
			continue // no write of buf
		}
		if written != nil {
			w = poly.Union(*written, w)
		}
		written = &w
	}
	if written == nil {
		return false
	}
	for _, u := range users {
		r, err := p.Accessed(u.Block.Name, buf, loop, false)
		if err != nil {
			continue // no read of buf
		}
		if ok, err := poly.Subset(r, *written); err != nil || !ok {
			return false
		}
	}
	return true
}

// regionAt returns the compaction of buf at the last of loops, if the
// region one iteration uses has a size that depends on the symbolic sizes
// only.
func regionAt(f *ast.Func, p *poly.Program, users []*poly.Instances, buf *ast.Buffer, loops []*ast.For) *Compaction {
	loop := loops[len(loops)-1]
	var parts []poly.Set
	for _, u := range users {
		for _, write := range []bool{false, true} {
			if s, err := p.Accessed(u.Block.Name, buf, loop, write); err == nil {
				parts = append(parts, s)
			}
		}
	}
	if len(parts) == 0 {
		return nil
	}
	region := parts[0]
	for _, s := range parts[1:] {
		region = poly.Union(region, s)
	}
	sizes := map[string]*ast.Var{}
	for _, s := range f.Sizes {
		sizes[s.Name] = s
	}
	inScope := map[string]*ast.Var{}
	for k, v := range sizes {
		inScope[k] = v
	}
	var loopNames []string
	for _, l := range loops {
		inScope[l.Var.Name] = l.Var
		loopNames = append(loopNames, l.Var.Name)
	}
	// The loops' ranges decide the mins of the origin (a thread's rows
	// against the whole tile's).
	an := ast.NewAnalyzer()
	for _, l := range loops {
		an.BindRange(l.Var.Name, l.Min, l.Extent)
	}
	c := &Compaction{Loop: loop}
	for d := range buf.Shape {
		origin, width, ok := exactExtent(parts, region, d, inScope, sizes, loopNames)
		if !ok {
			origin, width, ok = spanExtent(parts, region, d, inScope)
		}
		if !ok {
			return nil
		}
		full, fok := ast.ConstIntValue(ast.Simplify(buf.Shape[d]))
		w, wok := ast.ConstIntValue(width)
		if wok && fok && w < full || wok && !fok {
			c.Smaller = true
		}
		c.Shape = append(c.Shape, width)
		c.Origin = append(c.Origin, an.Simplify(origin))
	}
	return c
}

// exactExtent returns the origin and the width of dimension d of the
// region when every part's least index is exact (attained) and the same
// expression: the region's width (the most indices one iteration spans)
// counts from it. (The union's own bound would not be exact: its parts
// may be empty at some parameters. For the same reason parts that start
// at different indices are left to spanExtent: the least of their
// starts is not attained where its part is empty.)
func exactExtent(parts []poly.Set, region poly.Set, d int, inScope, sizes map[string]*ast.Var, loopNames []string) (origin, width ast.Expr, ok bool) {
	for _, part := range parts {
		lo, _ := part.DimBounds(d)
		if !lo.Exact {
			return nil, nil, false
		}
		e, ok := poly.BoundExpr(lo, inScope, ast.Int64)
		if !ok {
			return nil, nil, false
		}
		switch {
		case origin == nil:
			origin = e
		case !ast.Equal(origin, e):
			// Parts that start at different indices: the least of
			// them may belong to a part that is empty where the
			// others are not (the branches of an if, say), and is
			// then not attained; spanExtent checks a bound before
			// it counts from it.
			return nil, nil, false
		}
	}
	w := region.Width(d, loopNames)
	if c, ok := w.ConstUpper(); ok {
		// A constant bound, not its pieces in the sizes (which only
		// tighten it where a size is small): an array needs a constant
		// extent.
		return origin, ast.I64(c), true
	}
	width, ok = poly.BoundExpr(w, sizes, ast.Int64)
	if !ok {
		return nil, nil, false
	}
	return origin, ast.Simplify(width), true
}

// spanExtent returns the origin and the width of dimension d of the region
// from a lower bound that is valid but may not be attained (a part with
// floor divisions, as a fused and split copy loop makes): the width then
// counts from that bound, and must be a constant. The candidates are the
// affine pieces of the parts' lower bounds; the narrowest valid one wins.
func spanExtent(parts []poly.Set, region poly.Set, d int, inScope map[string]*ast.Var) (origin, width ast.Expr, ok bool) {
	var best int64
	for _, part := range parts {
		lo, _ := part.DimBounds(d)
		for _, a := range lo.Pieces() {
			span, ok := region.SpanFrom(d, a)
			n, ok2 := span.Int64()
			if !ok || !ok2 || origin != nil && n >= best {
				continue
			}
			e, ok := poly.AffExpr(a, true, inScope, ast.Int64)
			if !ok {
				continue
			}
			origin, best = e, n
		}
	}
	if origin == nil {
		return nil, nil, false
	}
	return origin, ast.I64(best), true
}
