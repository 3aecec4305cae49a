package schedule

import (
	"fmt"
	"strconv"

	"github.com/loom-go/loom/ast"
)

// place is where a statement sits: the chain of statements from the
// function body down to it (the statement itself last).
type place []ast.Stmt

// findBlock returns the block named name and its place, or false.
func findBlock(f *ast.Func, name string) (*ast.ScheduleBlock, place, bool) {
	var found *ast.ScheduleBlock
	var at place
	walkPlaces(f.Body, nil, func(s ast.Stmt, p place) bool {
		if b, ok := s.(*ast.ScheduleBlock); ok && b.Name == name {
			found, at = b, p
		}
		return found == nil
	})
	return found, at, found != nil
}

// blockPlaces returns the place of every block of f, by name, in one walk
// (findBlock for each block would walk f once per block).
func blockPlaces(f *ast.Func) map[string]place {
	at := map[string]place{}
	walkPlaces(f.Body, nil, func(s ast.Stmt, p place) bool {
		if b, ok := s.(*ast.ScheduleBlock); ok {
			if _, seen := at[b.Name]; !seen {
				at[b.Name] = p
			}
		}
		return true
	})
	return at
}

// findLoop returns the loop whose variable is named name and its place.
func findLoop(f *ast.Func, name string) (*ast.For, place, bool) {
	var found *ast.For
	var at place
	walkPlaces(f.Body, nil, func(s ast.Stmt, p place) bool {
		if l, ok := s.(*ast.For); ok && l.Var.Name == name {
			found, at = l, p
		}
		return found == nil
	})
	return found, at, found != nil
}

// walkPlaces visits every statement with its place, outer before inner.
// visit returns false to stop the walk.
func walkPlaces(s ast.Stmt, above place, visit func(ast.Stmt, place) bool) bool {
	if s == nil {
		return true
	}
	p := append(append(place(nil), above...), s)
	if !visit(s, p) {
		return false
	}
	switch s := s.(type) {
	case *ast.For:
		return walkPlaces(s.Body, p, visit)
	case *ast.ScheduleBlock:
		return walkPlaces(s.Init, p, visit) && walkPlaces(s.Body, p, visit)
	case *ast.IfThenElse:
		return walkPlaces(s.Then, p, visit) && walkPlaces(s.Else, p, visit)
	case *ast.Seq:
		for _, st := range s.Stmts {
			if !walkPlaces(st, p, visit) {
				return false
			}
		}
	}
	return true
}

// loops returns the loops of a place, outermost first.
func (p place) loops() []*ast.For {
	var out []*ast.For
	for _, s := range p {
		if l, ok := s.(*ast.For); ok {
			out = append(out, l)
		}
	}
	return out
}

// parent returns the statement directly containing the last one.
func (p place) parent() ast.Stmt {
	if len(p) < 2 {
		return nil
	}
	return p[len(p)-2]
}

// replace returns f with the statement old (found by identity) replaced by
// new. new may be nil to delete old from its sequence.
func replace(f *ast.Func, old, new ast.Stmt) *ast.Func {
	var stmt func(s ast.Stmt) ast.Stmt
	stmt = func(s ast.Stmt) ast.Stmt {
		if s == old {
			if new == nil {
				return &ast.Seq{}
			}
			return new
		}
		if seq, ok := s.(*ast.Seq); ok {
			// Splice replacements that are sequences, and drop deletions.
			var out []ast.Stmt
			changed := false
			for _, st := range seq.Stmts {
				if st == old {
					changed = true
					if new == nil {
						continue
					}
					if inner, ok := new.(*ast.Seq); ok {
						out = append(out, inner.Stmts...)
					} else {
						out = append(out, new)
					}
					continue
				}
				n := stmt(st)
				changed = changed || n != st
				out = append(out, n)
			}
			if !changed {
				return s
			}
			if len(out) == 1 {
				return out[0]
			}
			return &ast.Seq{Stmts: out}
		}
		return ast.MapChildren(s, stmt, keepExpr)
	}
	return ast.MapChildren(f, stmt, keepExpr)
}

func keepExpr(e ast.Expr) ast.Expr { return e }

// names collects every variable, buffer and block name of f.
func names(f *ast.Func) map[string]bool {
	used := map[string]bool{f.Name: true}
	for _, v := range f.Sizes {
		used[v.Name] = true
	}
	for _, b := range f.Params {
		used[b.Name] = true
	}
	ast.Inspect(f.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.For:
			used[n.Var.Name] = true
		case *ast.ScheduleBlock:
			used[n.Name] = true
			for _, it := range n.Iters {
				used[it.Var.Name] = true
			}
		case *ast.Buffer:
			used[n.Name] = true
		}
		return true
	})
	return used
}

// fresh returns base, or base_1, base_2, ..., the first not in used, and
// adds it to used.
func fresh(used map[string]bool, base string) string {
	name := base
	for n := 1; used[name]; n++ {
		name = base + "_" + strconv.Itoa(n)
	}
	used[name] = true
	return name
}

// uniqueLoops renames loops so that no two loops of f share a variable name
// (siblings may in the builder's output: every nest has its i and j),
// which lets a loop be named by its variable. The first loop of a name
// keeps it; a later one takes the name of the first block inside it as a
// suffix (i_B), or a number if that is taken too.
func uniqueLoops(f *ast.Func) *ast.Func {
	seen := map[string]bool{}
	dup := false
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.For); ok {
			if seen[l.Var.Name] {
				dup = true
			}
			seen[l.Var.Name] = true
		}
		return true
	})
	if !dup {
		return f
	}
	used := names(f)
	taken := map[string]bool{}
	var stmt func(s ast.Stmt) ast.Stmt
	stmt = func(s ast.Stmt) ast.Stmt {
		if l, ok := s.(*ast.For); ok {
			name := l.Var.Name
			if taken[name] {
				base := name
				if b := firstBlock(l.Body); b != nil {
					base = name + "_" + b.Name
				}
				nv := ast.NewVar(fresh(used, base), l.Var.DType)
				body := ast.Substitute(l.Body, map[string]ast.Expr{name: nv})
				l = &ast.For{Var: nv, Min: l.Min, Extent: l.Extent, Kind: l.Kind, Annotations: l.Annotations, Body: body}
			}
			taken[l.Var.Name] = true
			return ast.MapChildren(ast.Stmt(l), stmt, keepExpr)
		}
		return ast.MapChildren(s, stmt, keepExpr)
	}
	return ast.MapChildren(f, stmt, keepExpr)
}

func describe(n ast.Node) string {
	switch n := n.(type) {
	case *ast.For:
		return "loop " + n.Var.Name
	case *ast.ScheduleBlock:
		return "block " + n.Name
	}
	return fmt.Sprintf("%T", n)
}

// firstBlock returns the first block inside s, or nil.
func firstBlock(s ast.Stmt) *ast.ScheduleBlock {
	var found *ast.ScheduleBlock
	ast.Inspect(s, func(n ast.Node) bool {
		if b, ok := n.(*ast.ScheduleBlock); ok && found == nil {
			found = b
		}
		return found == nil
	})
	return found
}

// removeBlock returns f without block b, and without the loops (and ifs)
// that held nothing else.
func removeBlock(f *ast.Func, b *ast.ScheduleBlock, at place) *ast.Func {
	// The outermost statement that contains only b.
	victim := ast.Stmt(b)
	for k := len(at) - 2; k >= 0; k-- {
		switch s := at[k].(type) {
		case *ast.For:
			if s.Body != victim {
				return replace(f, victim, nil)
			}
			victim = s
		case *ast.IfThenElse:
			if s.Then != victim || s.Else != nil {
				return replace(f, victim, nil)
			}
			victim = s
		default:
			return replace(f, victim, nil)
		}
	}
	return replace(f, victim, nil)
}

// dropUnusedAlloc removes the Alloc of buf if nothing accesses buf any more.
func dropUnusedAlloc(f *ast.Func, buf *ast.Buffer) *ast.Func {
	var alloc *ast.Alloc
	used := false
	ast.Inspect(f.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Alloc:
			if n.Buffer == buf {
				alloc = n
			}
		case *ast.Load:
			used = used || n.Buffer == buf
		case *ast.Store:
			used = used || n.Buffer == buf
		case *ast.ScheduleBlock:
			for _, r := range append(append([]ast.Region(nil), n.Reads...), n.Writes...) {
				used = used || r.Buffer == buf
			}
		}
		return true
	})
	if alloc == nil || used {
		return f
	}
	return replace(f, alloc, nil)
}

// mapLoads returns s with every load of buf rewritten by fn.
func mapLoads[N ast.Node](n N, buf *ast.Buffer, fn func(*ast.Load) ast.Expr) N {
	var expr func(e ast.Expr) ast.Expr
	var stmt func(s ast.Stmt) ast.Stmt
	expr = func(e ast.Expr) ast.Expr {
		e = ast.MapChildren(e, stmt, expr)
		if l, ok := e.(*ast.Load); ok && l.Buffer == buf {
			return fn(l)
		}
		return e
	}
	stmt = func(s ast.Stmt) ast.Stmt { return ast.MapChildren(s, stmt, expr) }
	switch x := any(n).(type) {
	case ast.Expr:
		return any(expr(x)).(N)
	case ast.Stmt:
		return any(stmt(x)).(N)
	}
	return ast.MapChildren(n, stmt, expr)
}

// loadsOf returns the loads of buf in s (in order).
func loadsOf(s ast.Node, buf *ast.Buffer) []*ast.Load {
	var out []*ast.Load
	ast.Inspect(s, func(n ast.Node) bool {
		if l, ok := n.(*ast.Load); ok && l.Buffer == buf {
			out = append(out, l)
		}
		return true
	})
	return out
}

// writers returns the leaf blocks of f that write buf, and readers those
// that read it.
func accessors(f *ast.Func, buf *ast.Buffer) (writers, readers []*ast.ScheduleBlock) {
	for _, b := range f.Blocks() {
		if b.HoldsBlock() {
			continue // the root, or a block around a nest: its regions are the leaves'
		}
		for _, r := range b.Writes {
			if r.Buffer == buf {
				writers = append(writers, b)
				break
			}
		}
		for _, r := range b.Reads {
			if r.Buffer == buf {
				readers = append(readers, b)
				break
			}
		}
	}
	return writers, readers
}

// isParam reports whether buf is a parameter of f.
func isParam(f *ast.Func, buf *ast.Buffer) bool {
	for _, p := range f.Params {
		if p == buf {
			return true
		}
	}
	return false
}

// singleStore returns the block's body as one store, or nil.
func singleStore(b *ast.ScheduleBlock) *ast.Store {
	st, _ := b.Body.(*ast.Store)
	return st
}

// iterPermutation returns, for each index of an access to buf, the
// iteration variable of b it is, when the indices name every iteration
// variable of b once. A dimension of buf of extent one indexed by 0 (a
// batch of one, whose variable the simplifier replaced by 0) maps to nil,
// and a variable of a domain of one value may be missing.
func iterPermutation(b *ast.ScheduleBlock, buf *ast.Buffer, indices []ast.Expr) ([]*ast.IterVar, bool) {
	seen := map[string]bool{}
	out := make([]*ast.IterVar, len(indices))
	for d, e := range indices {
		if unitIndex(buf, d, e) {
			continue
		}
		v, ok := e.(*ast.Var)
		if !ok || seen[v.Name] {
			return nil, false
		}
		it := b.IterVarByName(v.Name)
		if it == nil {
			return nil, false
		}
		seen[v.Name] = true
		out[d] = it
	}
	for _, it := range b.Iters {
		if !seen[it.Var.Name] && !ast.IsConstInt(it.Dom.Extent, 1) {
			return nil, false
		}
	}
	return out, true
}

// unitIndex reports whether index e of dimension d of buf is 0 where the
// dimension has extent one: whoever accesses the buffer there accesses
// all of that dimension.
func unitIndex(buf *ast.Buffer, d int, e ast.Expr) bool {
	return ast.IsConstInt(e, 0) && d < len(buf.Shape) && ast.IsConstInt(buf.Shape[d], 1)
}

// regionIters returns, for each dimension of region r, the iteration
// variable of b it is, when r is a point at distinct iteration variables
// (spatial ones only, with spatialOnly). A dimension of extent one
// accessed at index 0 (a batch of one, whose iteration variable the
// simplifier has replaced by 0) has no variable: nil, and every iteration
// touches all of it.
func regionIters(b *ast.ScheduleBlock, r ast.Region, spatialOnly bool) ([]*ast.IterVar, bool) {
	out := make([]*ast.IterVar, len(r.Ranges))
	seen := map[*ast.IterVar]bool{}
	for d, rg := range r.Ranges {
		if unitDim(r, d) {
			continue
		}
		v, ok := rg.Min.(*ast.Var)
		if !ok || !ast.IsConstInt(rg.Extent, 1) {
			return nil, false
		}
		it := b.IterVarByName(v.Name)
		if it == nil || seen[it] || spatialOnly && it.Kind != ast.Spatial {
			return nil, false
		}
		seen[it] = true
		out[d] = it
	}
	return out, true
}

// unitDim reports whether dimension d of region r is one index where the
// buffer's dimension has extent one (see unitIndex).
func unitDim(r ast.Region, d int) bool {
	return ast.IsConstInt(r.Ranges[d].Extent, 1) && unitIndex(r.Buffer, d, r.Ranges[d].Min)
}

// permSubstitution maps the iteration variables of b to the indices of an
// access whose permutation perm is (see iterPermutation): perm[d] takes
// indices[d], and a variable perm leaves out takes its one value.
func permSubstitution(b *ast.ScheduleBlock, perm []*ast.IterVar, indices []ast.Expr) map[string]ast.Expr {
	sub := map[string]ast.Expr{}
	for _, it := range b.Iters {
		sub[it.Var.Name] = it.Dom.Min
	}
	for d, it := range perm {
		if it == nil {
			continue
		}
		idx := indices[d]
		if idx.Type() != it.Var.DType {
			// An index of another integer type (a gather's int64
			// position) takes the variable's type, as the variable's
			// uses expect.
			idx = ast.NewCast(it.Var.DType, idx)
		}
		sub[it.Var.Name] = idx
	}
	return sub
}

// blockNames returns the names of the blocks of f.
func blockNames(f *ast.Func) map[string]bool {
	out := map[string]bool{}
	for _, b := range f.Blocks() {
		out[b.Name] = true
	}
	return out
}

// loops resolves several loop handles.
func (s *Schedule) loops(prim string, ls []Loop) ([]*ast.For, []place, error) {
	fs := make([]*ast.For, len(ls))
	ps := make([]place, len(ls))
	for i, l := range ls {
		f, p, err := s.loop(prim, l)
		if err != nil {
			return nil, nil, err
		}
		fs[i], ps[i] = f, p
	}
	return fs, ps, nil
}

// loopArgs returns trace arguments referring to loop handles.
func loopArgs(ls []Loop) []Arg {
	args := make([]Arg, len(ls))
	for i, l := range ls {
		args[i] = Ref(l.rv)
	}
	return args
}
