package ast

import "slices"

// RebindBuffer returns n with every reference to old (its Alloc, the
// Loads and Stores of it, the blocks' regions of it) pointing to new: a
// buffer's declaration changed (its scope), or a copy of a statement
// given a buffer of its own.
func RebindBuffer[N Node](n N, old, new *Buffer) N {
	var expr func(e Expr) Expr
	var stmt func(s Stmt) Stmt
	expr = func(e Expr) Expr {
		e = MapChildren(e, stmt, expr)
		if l, ok := e.(*Load); ok && l.Buffer == old {
			return &Load{Buffer: new, Indices: l.Indices}
		}
		return e
	}
	stmt = func(s Stmt) Stmt {
		s = MapChildren(s, stmt, expr)
		switch x := s.(type) {
		case *Alloc:
			if x.Buffer == old {
				return &Alloc{Buffer: new}
			}
		case *Store:
			if x.Buffer == old {
				return &Store{Buffer: new, Indices: x.Indices, Value: x.Value}
			}
		case *ScheduleBlock:
			c := *x
			for _, rs := range []*[]Region{&c.Reads, &c.Writes} {
				list := slices.Clone(*rs)
				for i := range list {
					if list[i].Buffer == old {
						list[i].Buffer = new
					}
				}
				*rs = list
			}
			return &c
		}
		return s
	}
	return MapChildren(n, stmt, expr)
}
