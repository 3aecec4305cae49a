package ast

import "slices"

// IsUpdate reports whether b stores to one buffer at its spatial iteration
// variables (each once; constants for those that take one value) and
// reads that buffer, in its body and its init, only at that element: each
// instance updates its own element, and the instances of one element are
// those that differ only in their reduce variables.
func (b *ScheduleBlock) IsUpdate() bool {
	st, ok := b.Body.(*Store)
	if !ok || len(b.Writes) != 1 || b.Writes[0].Buffer != st.Buffer {
		return false
	}
	seen := map[string]bool{}
	for _, x := range st.Indices {
		if _, isConst := ConstIntValue(x); isConst {
			continue
		}
		v, isVar := x.(*Var)
		if !isVar {
			return false
		}
		if it := b.IterVarByName(v.Name); it == nil || it.Kind == Reduce || seen[v.Name] {
			return false
		}
		seen[v.Name] = true
	}
	// A spatial variable the indices leave out must take one value.
	for _, it := range b.Iters {
		if it.Kind == Reduce || seen[it.Var.Name] {
			continue
		}
		if n, isConst := ConstIntValue(Simplify(it.Dom.Extent)); !isConst || n != 1 {
			return false
		}
	}
	readsOnlyThere := func(n Node) bool {
		ok := true
		Inspect(n, func(n Node) bool {
			if ld, isLoad := n.(*Load); isLoad && ld.Buffer == st.Buffer {
				ok = ok && sameExprs(ld.Indices, st.Indices)
			}
			return ok
		})
		return ok
	}
	if !readsOnlyThere(st.Value) {
		return false
	}
	if b.Init != nil {
		in, ok := b.Init.(*Store)
		if !ok || in.Buffer != st.Buffer || !sameExprs(in.Indices, st.Indices) || !readsOnlyThere(in.Value) {
			return false
		}
	}
	return true
}

// ReductionUpdate matches st, out[s] = out[s] op f or f op out[s] with op
// associative and commutative (+, *, min, max) and f not reading out, and
// returns op and f.
func ReductionUpdate(st *Store) (BinaryOp, Expr, bool) {
	b, ok := st.Value.(*Binary)
	if !ok {
		return 0, nil, false
	}
	switch b.Op {
	case OpAdd, OpMul, OpMin, OpMax:
	default:
		return 0, nil, false
	}
	self := &Load{Buffer: st.Buffer, Indices: st.Indices}
	readsOut := func(x Expr) bool {
		found := false
		Inspect(x, func(n Node) bool {
			if ld, ok := n.(*Load); ok && ld.Buffer == st.Buffer {
				found = true
			}
			return !found
		})
		return found
	}
	if Equal(b.A, self) && !readsOut(b.B) {
		return b.Op, b.B, true
	}
	if Equal(b.B, self) && !readsOut(b.A) {
		return b.Op, b.A, true
	}
	return 0, nil, false
}

// sameExprs reports whether two lists of expressions are equal.
func sameExprs(a, b []Expr) bool {
	return slices.EqualFunc(a, b, func(x, y Expr) bool { return Equal(x, y) })
}
