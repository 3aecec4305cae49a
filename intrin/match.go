package intrin

import (
	"fmt"

	"github.com/loom-go/loom/ast"
)

// Match is a loop nest matched with an intrinsic: the nest's loops, outer
// first, and for each parameter of the description the buffer it is and
// the offset of the tile in each of the buffer's dimensions (over the
// loops outside the nest; a buffer of more dimensions than the operand
// holds the tile in its last ones).
type Match struct {
	Intrinsic *Intrinsic
	Loops     []*ast.For
	Block     *ast.ScheduleBlock
	Buffers   map[string]*ast.Buffer
	Offsets   map[string][]ast.Expr
}

// MismatchError says why a loop nest is not an intrinsic's computation,
// and where.
type MismatchError struct {
	Intrinsic string
	At        ast.Node // the loop, block or expression that differs
	Reason    string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("the nest is not %s's computation: %s", e.Intrinsic, e.Reason)
}

// shape returns the perfect nest of f's description and its block.
func shape(f *ast.Func) ([]*ast.For, *ast.ScheduleBlock, error) {
	root, ok := f.Body.(*ast.ScheduleBlock)
	if !ok {
		return nil, nil, fmt.Errorf("no root block")
	}
	loops, blk, why := nest(root.Body, -1)
	if why != "" {
		return nil, nil, fmt.Errorf("%s", why)
	}
	return loops, blk, nil
}

// nest returns the perfect loop nest at s (n loops, or any number when n <
// 0) and the block inside it, or why it is not one.
func nest(s ast.Stmt, n int) ([]*ast.For, *ast.ScheduleBlock, string) {
	var loops []*ast.For
	for {
		if seq, ok := s.(*ast.Seq); ok && len(seq.Stmts) == 1 {
			s = seq.Stmts[0]
			continue
		}
		l, ok := s.(*ast.For)
		if !ok || len(loops) == n {
			break
		}
		loops = append(loops, l)
		s = l.Body
	}
	if n >= 0 && len(loops) != n {
		return nil, nil, fmt.Sprintf("it has %d loops in a perfect nest, the intrinsic %d", len(loops), n)
	}
	blk, ok := s.(*ast.ScheduleBlock)
	if !ok {
		return nil, nil, "the innermost loop's body is not one block"
	}
	return loops, blk, ""
}

// Match checks that the loop nest at l computes exactly what in's
// description does, on tiles of other buffers (see the package doc).
func (in *Intrinsic) Match(l *ast.For) (*Match, error) {
	fail := func(at ast.Node, format string, a ...any) (*Match, error) {
		return nil, &MismatchError{Intrinsic: in.Name, At: at, Reason: fmt.Sprintf(format, a...)}
	}
	dLoops, dBlk, _ := shape(in.Desc)
	loops, blk, why := nest(l, len(dLoops))
	if why != "" {
		return fail(l, "%s", why)
	}
	// Each loop: the description's extent; the description's loop
	// variable is the nest's less where it starts.
	fromDesc := map[string]ast.Expr{}
	for i, lp := range loops {
		want, _ := ast.ConstIntValue(dLoops[i].Extent)
		n, ok := ast.ConstIntValue(ast.Simplify(lp.Extent))
		if !ok || n != want {
			return fail(lp, "loop %s (the nest's loop %d) runs %s times, the intrinsic's %d", lp.Var.Name, i+1, ast.Print(lp.Extent), want)
		}
		if lp.Kind != ast.Serial {
			return fail(lp, "loop %s is %s; the instruction runs the whole nest", lp.Var.Name, lp.Kind)
		}
		for _, inner := range loops[i:] {
			if ast.Mentions(lp.Min, inner.Var.Name) {
				return fail(lp, "loop %s starts at %s, which depends on loop %s inside it: the nest is not a box", lp.Var.Name, ast.Print(lp.Min), inner.Var.Name)
			}
		}
		rel := ast.Expr(ast.Sub(lp.Var, lp.Min))
		if dt := dLoops[i].Var.DType; dt != lp.Var.DType {
			rel = ast.NewCast(dt, rel)
		}
		fromDesc[dLoops[i].Var.Name] = rel
	}
	switch {
	case blk.Init != nil:
		return fail(blk, "block %s has an init: decompose it first (decompose_reduction), the instruction accumulates", blk.Name)
	case blk.Predicate != nil:
		return fail(blk, "block %s has a predicate (%s): the instruction computes the whole tile", blk.Name, ast.Print(blk.Predicate))
	}
	store, ok := blk.Body.(*ast.Store)
	if !ok {
		return fail(blk, "block %s's body is not one store", blk.Name)
	}
	dStore := dBlk.Body.(*ast.Store)
	// Iteration kinds: each loop binds the iteration variables of the
	// description's kind.
	for i, lp := range loops {
		want := kindOf(dBlk, dLoops[i])
		got := kindOf(blk, lp)
		if got != want {
			return fail(lp, "loop %s binds %s iteration variables of block %s; the intrinsic's loop %d binds %s ones", lp.Var.Name, got, blk.Name, i+1, want)
		}
	}
	// Both updates over the description's loop variables.
	bindings := func(b *ast.ScheduleBlock, sub map[string]ast.Expr) map[string]ast.Expr {
		m := map[string]ast.Expr{}
		for _, it := range b.Iters {
			m[it.Var.Name] = ast.Substitute(it.Binding, sub)
		}
		return m
	}
	tb := bindings(blk, nil)
	db := bindings(dBlk, fromDesc)
	m := &matcher{in: in, loops: loops, match: &Match{Intrinsic: in, Loops: loops, Block: blk, Buffers: map[string]*ast.Buffer{}, Offsets: map[string][]ast.Expr{}}}
	dst := &ast.Load{Buffer: dStore.Buffer, Indices: dStore.Indices}
	tst := &ast.Load{Buffer: store.Buffer, Indices: store.Indices}
	if !m.expr(ast.Substitute[ast.Expr](dst, db), ast.Substitute[ast.Expr](tst, tb)) ||
		!m.expr(ast.Substitute(dStore.Value, db), ast.Substitute(store.Value, tb)) {
		if m.at == nil {
			m.at = store
		}
		return fail(m.at, "%s", m.why)
	}
	// The instruction reads its factors before it writes the accumulator:
	// a factor in the accumulator's buffer would read partial sums.
	acc := m.match.Buffers[in.Operands["C"]]
	for _, op := range []string{"A", "B"} {
		if b := m.match.Buffers[in.Operands[op]]; b != nil && acc != nil && b.Name == acc.Name {
			return fail(store, "buffer %s is both the accumulator and factor %s: the instruction reads the factors before it writes", b.Name, op)
		}
	}
	return m.match, nil
}

// kindOf returns the kind of the iteration variables of b that loop l
// binds ("spatial", "reduce", "mixed" or "no").
func kindOf(b *ast.ScheduleBlock, l *ast.For) string {
	kind := "no"
	for _, it := range b.Iters {
		if !ast.Mentions(it.Binding, l.Var.Name) {
			continue
		}
		k := "spatial"
		if it.Kind == ast.Reduce {
			k = "reduce"
		}
		switch kind {
		case "no":
			kind = k
		case k:
		default:
			kind = "mixed"
		}
	}
	return kind
}

// matcher compares the description's update with the nest's, operation by
// operation, collecting the operands' buffers and offsets.
type matcher struct {
	in    *Intrinsic
	loops []*ast.For // the nest's
	match *Match
	why   string
	at    ast.Node
}

func (m *matcher) no(at ast.Node, format string, a ...any) bool {
	if m.why == "" {
		m.why, m.at = fmt.Sprintf(format, a...), at
	}
	return false
}

// expr reports whether nest expression t is description expression d on
// the nest's tiles.
func (m *matcher) expr(d, t ast.Expr) bool {
	if d.Type() != t.Type() {
		return m.no(t, "%s has type %s where the intrinsic computes %s of type %s", show(t), t.Type(), show(d), d.Type())
	}
	switch d := d.(type) {
	case *ast.Load:
		tl, ok := t.(*ast.Load)
		if !ok {
			return m.no(t, "%s is not a load of a tile, as the intrinsic's %s", show(t), show(d))
		}
		return m.load(d, tl)
	case *ast.Binary:
		tb, ok := t.(*ast.Binary)
		if !ok || tb.Op != d.Op {
			return m.no(t, "%s is not the intrinsic's %s", show(t), show(d))
		}
		return m.expr(d.A, tb.A) && m.expr(d.B, tb.B)
	case *ast.Cast:
		tc, ok := t.(*ast.Cast)
		if !ok || tc.To != d.To || tc.X.Type() != d.X.Type() {
			return m.no(t, "%s is not the intrinsic's %s", show(t), show(d))
		}
		return m.expr(d.X, tc.X)
	}
	if !ast.Equal(d, t) {
		return m.no(t, "%s is not the intrinsic's %s", show(t), show(d))
	}
	return true
}

// load matches an access of a tile: the same element type, the
// description's indices plus offsets free of the nest's loops, the same
// offsets at every access of the operand.
func (m *matcher) load(d, t *ast.Load) bool {
	name := d.Buffer.Name
	if t.Buffer.DType != d.Buffer.DType || len(t.Indices) < len(d.Indices) {
		return m.no(t, "%s is not a %d-dimensional %s tile, as the intrinsic's operand %s", show(t), len(d.Indices), d.Buffer.DType, name)
	}
	// A buffer of more dimensions holds the tile in its last ones, at
	// indices of the others that the nest's loops leave alone (a head of
	// attention, a batch).
	extra := len(t.Indices) - len(d.Indices)
	if b, ok := m.match.Buffers[name]; ok && b.Name != t.Buffer.Name {
		return m.no(t, "the intrinsic's operand %s is both %s and %s", name, b.Name, t.Buffer.Name)
	}
	m.match.Buffers[name] = t.Buffer
	var offs []ast.Expr
	for i := range t.Indices {
		off := ast.Simplify(t.Indices[i])
		if i >= extra {
			off = ast.Simplify(ast.Sub(t.Indices[i], d.Indices[i-extra]))
		}
		for _, l := range m.loops {
			if !ast.Mentions(off, l.Var.Name) {
				continue
			}
			if i < extra {
				return m.no(t, "index %d of %s moves with loop %s of the nest, outside the intrinsic's tile", i+1, show(t), l.Var.Name)
			}
			return m.no(t, "index %d of %s is not the intrinsic's %s moved by an offset the nest's loops leave alone", i+1, show(t), show(d.Indices[i-extra]))
		}
		offs = append(offs, off)
	}
	if prev, ok := m.match.Offsets[name]; ok {
		for i := range offs {
			if diff, isConst := ast.ConstIntValue(ast.Simplify(ast.Sub(offs[i], prev[i]))); !isConst || diff != 0 {
				return m.no(t, "%s reads another tile of %s than the update writes or reads elsewhere (offset %s, not %s)", show(t), t.Buffer.Name, show(offs[i]), show(prev[i]))
			}
		}
		return true
	}
	m.match.Offsets[name] = offs
	return true
}

// show prints e simplified (the description's side is over the nest's
// loops, less where they start).
func show(e ast.Expr) string { return ast.Print(ast.Simplify(e)) }
