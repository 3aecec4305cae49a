package ast

import "fmt"

// Inspect walks the tree rooted at n in depth-first order, calling f for each
// node. If f returns false, Inspect skips the node's children.
//
// Children are the sub-expressions and sub-statements in the order the text
// form prints them. Variables are visited where they are used, not where
// they are defined (the Var of a For or an IterVar is not visited), and a
// buffer is visited where it is declared (a [Func] parameter or an [Alloc]),
// not at each Load and Store.
func Inspect(n Node, f func(Node) bool) {
	if n == nil || isNilNode(n) || !f(n) {
		return
	}
	switch n := n.(type) {
	case *Const, *Var:
	case *Binary:
		Inspect(n.A, f)
		Inspect(n.B, f)
	case *Not:
		Inspect(n.X, f)
	case *Select:
		Inspect(n.Cond, f)
		Inspect(n.T, f)
		Inspect(n.F, f)
	case *Cast:
		Inspect(n.X, f)
	case *Call:
		for _, a := range n.Args {
			Inspect(a, f)
		}
	case *Load:
		for _, i := range n.Indices {
			Inspect(i, f)
		}
	case *For:
		Inspect(n.Min, f)
		Inspect(n.Extent, f)
		Inspect(n.Body, f)
	case *ScheduleBlock:
		for _, it := range n.Iters {
			Inspect(it.Binding, f)
		}
		for _, it := range n.Iters {
			Inspect(it.Dom.Min, f)
			Inspect(it.Dom.Extent, f)
		}
		Inspect(n.Predicate, f)
		for _, regions := range [][]Region{n.Reads, n.Writes} {
			for _, r := range regions {
				for _, rg := range r.Ranges {
					Inspect(rg.Min, f)
					Inspect(rg.Extent, f)
				}
			}
		}
		Inspect(n.Init, f)
		Inspect(n.Body, f)
	case *Store:
		for _, i := range n.Indices {
			Inspect(i, f)
		}
		Inspect(n.Value, f)
	case *IfThenElse:
		Inspect(n.Cond, f)
		Inspect(n.Then, f)
		Inspect(n.Else, f)
	case *Seq:
		for _, s := range n.Stmts {
			Inspect(s, f)
		}
	case *Alloc:
		Inspect(n.Buffer, f)
	case *Buffer:
		for _, d := range n.Shape {
			Inspect(d, f)
		}
	case *Func:
		for _, b := range n.Params {
			Inspect(b, f)
		}
		Inspect(n.Body, f)
	default:
		panic(fmt.Sprintf("ast.Inspect: unexpected node %T", n))
	}
}

// isNilNode reports whether n is an interface holding a nil pointer, as an
// optional field (a nil Predicate, Init or Else) is when passed as a Node.
func isNilNode(n Node) bool {
	switch n := n.(type) {
	case Expr:
		return isNilExpr(n)
	case Stmt:
		return isNilStmt(n)
	case *Buffer:
		return n == nil
	case *Func:
		return n == nil
	}
	return false
}

func isNilExpr(e Expr) bool {
	switch e := e.(type) {
	case nil:
		return true
	case *Const:
		return e == nil
	case *Var:
		return e == nil
	case *Binary:
		return e == nil
	case *Not:
		return e == nil
	case *Select:
		return e == nil
	case *Cast:
		return e == nil
	case *Call:
		return e == nil
	case *Load:
		return e == nil
	}
	return false
}

func isNilStmt(s Stmt) bool {
	switch s := s.(type) {
	case nil:
		return true
	case *For:
		return s == nil
	case *ScheduleBlock:
		return s == nil
	case *Store:
		return s == nil
	case *IfThenElse:
		return s == nil
	case *Seq:
		return s == nil
	case *Alloc:
		return s == nil
	}
	return false
}

// MapChildren returns n with stmt applied to each child statement and expr
// to each child expression (not to n itself). It returns n unchanged, the
// same pointer, when every function returned its argument, so out == in is a
// cheap test for "nothing changed"; otherwise it returns a shallow copy of n
// with the new children. Nil optional children (a missing predicate, init or
// else branch) are not passed to the functions. Defining variables and
// buffer references are not children: use [Substitute] to replace variables.
//
// A pass handles the nodes it cares about and lets MapChildren recurse
// through the rest:
//
//	func (p *pass) stmt(s ast.Stmt) ast.Stmt {
//		if f, ok := s.(*ast.For); ok {
//			return p.loop(f)
//		}
//		return ast.MapChildren(s, p.stmt, p.expr)
//	}
//
// MapChildren panics if stmt or expr returns nil for a non-nil child, or if
// the result no longer has n's type N (which cannot happen for N = Stmt, Expr
// or the node's own pointer type).
func MapChildren[N Node](n N, stmt func(Stmt) Stmt, expr func(Expr) Expr) N {
	return mapChildren(Node(n), stmt, expr).(N)
}

func mapChildren(n Node, stmt func(Stmt) Stmt, expr func(Expr) Expr) Node {
	m := &mapper{stmt: stmt, expr: expr}
	switch n := n.(type) {
	case *Const, *Var:
		return n
	case *Binary:
		a, b := m.e(n.A), m.e(n.B)
		if !m.changed {
			return n
		}
		return &Binary{Op: n.Op, A: a, B: b}
	case *Not:
		x := m.e(n.X)
		if !m.changed {
			return n
		}
		return &Not{X: x}
	case *Select:
		c, t, f := m.e(n.Cond), m.e(n.T), m.e(n.F)
		if !m.changed {
			return n
		}
		return &Select{Cond: c, T: t, F: f}
	case *Cast:
		x := m.e(n.X)
		if !m.changed {
			return n
		}
		return &Cast{To: n.To, X: x}
	case *Call:
		args := m.exprs(n.Args)
		if !m.changed {
			return n
		}
		return &Call{Func: n.Func, Args: args}
	case *Load:
		idx := m.exprs(n.Indices)
		if !m.changed {
			return n
		}
		return &Load{Buffer: n.Buffer, Indices: idx}
	case *For:
		min, ext, body := m.e(n.Min), m.e(n.Extent), m.s(n.Body)
		if !m.changed {
			return n
		}
		c := *n
		c.Min, c.Extent, c.Body = min, ext, body
		return &c
	case *ScheduleBlock:
		iters := make([]*IterVar, len(n.Iters))
		for i, it := range n.Iters {
			b, lo, ext := m.e(it.Binding), m.e(it.Dom.Min), m.e(it.Dom.Extent)
			if b == it.Binding && lo == it.Dom.Min && ext == it.Dom.Extent {
				iters[i] = it
			} else {
				iters[i] = &IterVar{Var: it.Var, Kind: it.Kind, Dom: Range{lo, ext}, Binding: b}
			}
		}
		pred := m.e(n.Predicate)
		reads, writes := m.regions(n.Reads), m.regions(n.Writes)
		init, body := m.s(n.Init), m.s(n.Body)
		if !m.changed {
			return n
		}
		c := *n
		c.Iters, c.Predicate, c.Reads, c.Writes, c.Init, c.Body = iters, pred, reads, writes, init, body
		return &c
	case *Store:
		idx, v := m.exprs(n.Indices), m.e(n.Value)
		if !m.changed {
			return n
		}
		return &Store{Buffer: n.Buffer, Indices: idx, Value: v}
	case *IfThenElse:
		c, t, e := m.e(n.Cond), m.s(n.Then), m.s(n.Else)
		if !m.changed {
			return n
		}
		return &IfThenElse{Cond: c, Then: t, Else: e}
	case *Seq:
		stmts := make([]Stmt, len(n.Stmts))
		for i, s := range n.Stmts {
			stmts[i] = m.s(s)
		}
		if !m.changed {
			return n
		}
		return &Seq{Stmts: stmts}
	case *Alloc, *Buffer:
		return n
	case *Func:
		body := m.s(n.Body)
		if !m.changed {
			return n
		}
		c := *n
		c.Body = body
		return &c
	}
	panic(fmt.Sprintf("ast.MapChildren: unexpected node %T", n))
}

// mapper applies the callbacks of one MapChildren call and remembers whether
// any child changed.
type mapper struct {
	stmt    func(Stmt) Stmt
	expr    func(Expr) Expr
	changed bool
}

func (m *mapper) e(x Expr) Expr {
	if isNilExpr(x) {
		return x
	}
	y := m.expr(x)
	if y == nil {
		panic("ast.MapChildren: expression callback returned nil")
	}
	if y != x {
		m.changed = true
	}
	return y
}

func (m *mapper) s(x Stmt) Stmt {
	if isNilStmt(x) {
		return x
	}
	y := m.stmt(x)
	if y == nil {
		panic("ast.MapChildren: statement callback returned nil")
	}
	if y != x {
		m.changed = true
	}
	return y
}

func (m *mapper) exprs(xs []Expr) []Expr {
	before := m.changed
	m.changed = false
	out := make([]Expr, len(xs))
	for i, x := range xs {
		out[i] = m.e(x)
	}
	if !m.changed {
		out = xs
	}
	m.changed = m.changed || before
	return out
}

func (m *mapper) regions(rs []Region) []Region {
	before := m.changed
	m.changed = false
	out := make([]Region, len(rs))
	for i, r := range rs {
		ranges := make([]Range, len(r.Ranges))
		for j, rg := range r.Ranges {
			ranges[j] = Range{m.e(rg.Min), m.e(rg.Extent)}
		}
		out[i] = Region{Buffer: r.Buffer, Ranges: ranges}
	}
	if !m.changed {
		out = rs
	}
	m.changed = m.changed || before
	return out
}

// Substitute returns n with every use of a variable named in m replaced by
// the expression m maps it to. Definitions (loop and iteration variables)
// are left alone. Like [MapChildren], it returns n itself when nothing
// changed.
func Substitute[N Node](n N, m map[string]Expr) N {
	if len(m) == 0 {
		return n
	}
	s := substituter(m)
	return mapChildrenOrSelf(Node(n), s.stmt, s.expr).(N)
}

type substituter map[string]Expr

func (m substituter) expr(e Expr) Expr {
	if v, ok := e.(*Var); ok {
		if r, ok := m[v.Name]; ok {
			return r
		}
		return e
	}
	return MapChildren(e, m.stmt, m.expr)
}

func (m substituter) stmt(s Stmt) Stmt { return MapChildren(s, m.stmt, m.expr) }

// mapChildrenOrSelf applies the callbacks to n itself where n is an Expr or a
// Stmt, and to its children otherwise.
func mapChildrenOrSelf(n Node, stmt func(Stmt) Stmt, expr func(Expr) Expr) Node {
	switch n := n.(type) {
	case Expr:
		return expr(n)
	case Stmt:
		return stmt(n)
	}
	return mapChildren(n, stmt, expr)
}
