package schedule

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// scopeVars returns the variables a region computed at a place may use: the
// function's sizes and the loops of the place.
func scopeVars(f *ast.Func, loops []*ast.For) map[string]*ast.Var {
	vars := map[string]*ast.Var{}
	for _, v := range f.Sizes {
		vars[v.Name] = v
	}
	for _, l := range loops {
		vars[l.Var.Name] = l.Var
	}
	return vars
}

// analyzerFor returns an analyzer that knows the ranges of the given loops
// and that sizes are non-negative.
func analyzerFor(f *ast.Func, loops []*ast.For) *ast.Analyzer {
	a := ast.NewAnalyzer()
	a.BindSizes(f.Sizes)
	for _, l := range loops {
		a.BindRange(l.Var.Name, l.Min, l.Extent)
	}
	return a
}

// iterRange is the range one iteration variable of a moved block takes
// inside the new loop: [lo, hi], both expressions over the loops above,
// and width, the largest hi - lo + 1 over every iteration of those loops
// (the extent the new loop needs).
type iterRange struct {
	lo, hi, width ast.Expr
	// widest, when not 0, is a constant bound of the region's width: a
	// loop of that extent from lo, guarded, covers [lo, hi] where hi - lo
	// + 1 provably is at most it.
	widest int64
}

// loopRanges turns a region (a set of buffer indices whose parameters are
// the sizes and the loops above) into ranges of the iteration variables
// that write each dimension.
func loopRanges(region poly.Set, perm []*ast.IterVar, vars map[string]*ast.Var, above []*ast.For) (map[string]iterRange, error) {
	var loopNames []string
	for _, l := range above {
		loopNames = append(loopNames, l.Var.Name)
	}
	out := map[string]iterRange{}
	for d, it := range perm {
		if it == nil {
			continue // a dimension of extent one (see regionIters)
		}
		t := it.Var.DType
		loB, hiB := region.DimBounds(d)
		lo, ok1 := poly.BoundExpr(loB, vars, t)
		hi, ok2 := poly.BoundExpr(hiB, vars, t)
		width, ok3 := poly.BoundExpr(region.Width(d, loopNames), vars, t)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("dimension %d has no finite bounds", d)
		}
		// A loop of the region's width covers the region only from its
		// least value (or up to its greatest): where neither bound is
		// attained (a row of a fused loop, floormod of the loop, has the
		// bounds 0 and 7 but one value), the loop spans the bounds.
		// A constant bound of the width makes a loop of constant extent
		// (the guard v < hi - lo + 1 of buildNest keeps it to the
		// region): pieces in the sizes, which only tighten it where a
		// size is small (min(4, N, N/2 + 2)), would make it one the
		// dependence model cannot bound exactly.
		widest, _ := region.Width(d, loopNames).ConstUpper()
		switch {
		case loB.Exact:
			if widest > 0 {
				width = ast.IntConst(t, widest)
			}
		case hiB.Exact:
			lo = ast.Add(ast.Sub(hi, width), ast.One(t))
		default:
			width = nil
		}
		out[it.Var.Name] = iterRange{lo: lo, hi: hi, width: width, widest: widest}
	}
	return out, nil
}

// buildNest builds the loops and the rebound block for block b placed at a
// point under the given loops: each iteration variable in ranges runs over
// its range (intersected with its domain), the others over their whole
// domain. Loops of varying extent get a constant extent (an upper bound)
// and the block a predicate, so that inner loops stay vectorizable.
//
// The block may run only part of its domain where it was (a triangular
// nest: the inner loop's bounds move with the outer one): old, the loops
// around it there, give each iteration variable bound to one of them
// alone a guard that keeps it within that loop's bounds, written over the
// new bindings. Where a bound mentions a loop no variable is bound to
// that way, no guard can be written; checkInstancesKept then refuses the
// move if it runs instances the block did not.
func buildNest(f *ast.Func, b *ast.ScheduleBlock, ranges map[string]iterRange, above, old []*ast.For, used map[string]bool) ast.Stmt {
	a := analyzerFor(f, above)
	nb := *b
	nb.Iters = make([]*ast.IterVar, len(b.Iters))
	var loops []*ast.For
	var guards []ast.Expr
	for i, it := range b.Iters {
		t := it.Var.DType
		domLo := it.Dom.Min
		domHi := ast.Simplify(ast.Sub(ast.Add(it.Dom.Min, it.Dom.Extent), ast.One(t)))
		lo, hi := domLo, domHi
		var width ast.Expr
		var widest int64
		if r, ok := ranges[it.Var.Name]; ok {
			lo, hi, width, widest = a.Simplify(r.lo), a.Simplify(r.hi), a.Simplify(r.width), r.widest
		}
		ext := a.Simplify(ast.Add(ast.Sub(hi, lo), ast.One(t)))
		loopExt := ext
		if width != nil {
			loopExt = width
		}
		if _, constant := ast.ConstIntValue(loopExt); !constant && widest > 0 && a.CanProve(ast.LE(ext, ast.IntConst(t, widest))) {
			loopExt = ast.IntConst(t, widest) // guarded by v < ext below
		}
		if ast.IsConstInt(loopExt, 1) {
			// A single value: no loop.
			if !ast.IsConstInt(ext, 1) {
				guards = append(guards, a.Simplify(ast.LE(lo, hi)))
			}
			nb.Iters[i] = &ast.IterVar{Var: it.Var, Kind: it.Kind, Dom: it.Dom, Binding: lo}
			continue
		}
		v := ast.NewVar(fresh(used, "ax"+strconv.Itoa(len(loops))), t)
		loops = append(loops, &ast.For{Var: v, Min: ast.Zero(t), Extent: loopExt})
		a.BindRange(v.Name, ast.Zero(t), loopExt)
		if !ast.Equal(loopExt, ext) {
			guards = append(guards, a.Simplify(ast.LT(v, ext)))
		}
		nb.Iters[i] = &ast.IterVar{Var: it.Var, Kind: it.Kind, Dom: it.Dom, Binding: a.Simplify(ast.Add(lo, v))}
	}
	// In iterations of the loops above that need nothing (a tail, say), the
	// region's bounds mean nothing: keep every moved variable in its
	// domain.
	for _, it := range nb.Iters {
		if _, moved := ranges[it.Var.Name]; !moved {
			continue
		}
		guards = append(guards,
			a.Simplify(ast.GE(it.Binding, it.Dom.Min)),
			a.Simplify(ast.LT(it.Binding, ast.Add(it.Dom.Min, it.Dom.Extent))))
	}
	guards = append(guards, oldBounds(b, nb.Iters, old, a)...)
	for _, g := range guards {
		if c, ok := g.(*ast.Const); ok && c.Int != 0 {
			continue
		}
		if nb.Predicate == nil {
			nb.Predicate = g
		} else {
			nb.Predicate = ast.And(nb.Predicate, g)
		}
	}
	if len(loops) == 0 {
		return &nb
	}
	var nest ast.Stmt = &nb
	for i := len(loops) - 1; i >= 0; i-- {
		loops[i].Body = nest
		nest = loops[i]
	}
	return nest
}

// oldBounds returns the bounds of the loops old (around block b at its
// old place) on the iteration variables bound to one of them alone,
// written over the variables' new bindings iters (see buildNest).
func oldBounds(b *ast.ScheduleBlock, iters []*ast.IterVar, old []*ast.For, a *ast.Analyzer) []ast.Expr {
	sub := map[string]ast.Expr{}
	for i, it := range b.Iters {
		if v, ok := it.Binding.(*ast.Var); ok {
			sub[v.Name] = iters[i].Binding
		}
	}
	var guards []ast.Expr
	for _, l := range old {
		x, ok := sub[l.Var.Name]
		if !ok {
			continue
		}
		lo := ast.Substitute(l.Min, sub)
		hi := ast.Add(lo, ast.Substitute(l.Extent, sub))
		if mentionsAny(lo, old) || mentionsAny(hi, old) {
			continue // a bound over a loop no variable stands for
		}
		guards = append(guards, a.Simplify(ast.GE(x, lo)), a.Simplify(ast.LT(x, hi)))
	}
	return guards
}

// mentionsAny reports whether e mentions the variable of one of loops.
func mentionsAny(e ast.Expr, loops []*ast.For) bool {
	for _, l := range loops {
		if ast.Mentions(e, l.Var.Name) {
			return true
		}
	}
	return false
}

// insertInto returns loop l with s inserted in its body before (or after,
// if after) the first (or last) statement that holds one of the blocks.
func insertInto(l *ast.For, s ast.Stmt, blocks []*ast.ScheduleBlock, after bool) *ast.For {
	stmts := []ast.Stmt{l.Body}
	if seq, ok := l.Body.(*ast.Seq); ok {
		stmts = slices.Clone(seq.Stmts)
	}
	holds := func(x ast.Stmt) bool {
		found := false
		ast.Inspect(x, func(n ast.Node) bool {
			for _, b := range blocks {
				if n == ast.Node(b) {
					found = true
				}
			}
			return !found
		})
		return found
	}
	pos := 0
	if after {
		pos = len(stmts)
		for i := len(stmts) - 1; i >= 0; i-- {
			if holds(stmts[i]) {
				pos = i + 1
				break
			}
		}
	} else {
		for i, x := range stmts {
			if holds(x) {
				pos = i
				break
			}
		}
	}
	stmts = slices.Insert(stmts, pos, s)
	c := *l
	c.Body = &ast.Seq{Stmts: stmts}
	return &c
}
