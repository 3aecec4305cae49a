package ast

// Not is the logical negation !X of a bool.
type Not struct {
	X Expr
}

// Type returns Bool.
func (*Not) Type() DType { return Bool }

// LogicalNot returns !x.
func LogicalNot(x Expr) *Not { return &Not{X: x} }
