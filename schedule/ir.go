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
