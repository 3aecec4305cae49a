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
}

// Allowed reports whether buf may be allocated once per iteration of the
// last of loops (the loops from the outermost down to it).
type Allowed func(buf *ast.Buffer, loops []*ast.For) bool

// Plan finds the compaction of every temporary of f that has one at a
// loop allowed accepts. A function the polyhedral model cannot hold gets
// none.
func Plan(f *ast.Func, allowed Allowed) map[*ast.Buffer]*Compaction {
	allocLoops := map[*ast.Buffer][]*ast.For{}
	var walk func(s ast.Stmt, loops []*ast.For)
	walk = func(s ast.Stmt, loops []*ast.For) {
		switch s := s.(type) {
		case *ast.Alloc:
			allocLoops[s.Buffer] = loops
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
	deps := p.Deps()
	plans := map[*ast.Buffer]*Compaction{}
	for buf, outer := range allocLoops {
		if c := planCompaction(f, p, deps, buf, len(outer), allowed); c != nil {
			plans[buf] = c
		}
	}
	return plans
}

// planCompaction tries the loops around every use of buf, deepest first,
// below the depth of its declaration.
func planCompaction(f *ast.Func, p *poly.Program, deps []*poly.Dependence, buf *ast.Buffer, declDepth int, allowed Allowed) *Compaction {
	var users []*poly.Instances
	for _, in := range p.Blocks {
		if accesses(in, buf) {
			users = append(users, in)
		}
	}
	if len(users) == 0 {
		return nil
	}
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
		if carriesFlow(deps, buf, k) {
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

// regionAt returns the compaction of buf at the last of loops, if the
// region one iteration uses has a size that depends on the symbolic sizes
// only and is smaller than the buffer.
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
	c := &Compaction{Loop: loop}
	smaller := false
	for d := range buf.Shape {
		// The origin is the least of the parts' least indices, each exact
		// (attained), so the least is attained too. (The union's own bound
		// would not be exact: its parts may be empty at some parameters.)
		var origin ast.Expr
		for _, part := range parts {
			lo, _ := part.DimBounds(d)
			if !lo.Exact {
				return nil
			}
			e, ok := poly.BoundExpr(lo, inScope, ast.Int64)
			if !ok {
				return nil
			}
			switch {
			case origin == nil:
				origin = e
			case !ast.Equal(origin, e):
				origin = ast.Min(origin, e)
			}
		}
		width, ok := poly.BoundExpr(region.Width(d, loopNames), sizes, ast.Int64)
		if !ok {
			return nil
		}
		width = ast.Simplify(width)
		full, fok := ast.ConstIntValue(ast.Simplify(buf.Shape[d]))
		w, wok := ast.ConstIntValue(width)
		if wok && fok && w < full || wok && !fok {
			smaller = true
		}
		c.Shape = append(c.Shape, width)
		c.Origin = append(c.Origin, origin)
	}
	if !smaller {
		return nil
	}
	return c
}
