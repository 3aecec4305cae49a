package ast

// Select is the conditional expression select(Cond, T, F): T where Cond
// holds, F otherwise. Both operands are evaluated (neither has side effects).
type Select struct {
	Cond, T, F Expr
}

// Type returns the type of T.
func (e *Select) Type() DType {
	if e.T == nil {
		return Invalid
	}
	return e.T.Type()
}

// NewSelect returns select(cond, t, f).
func NewSelect(cond, t, f Expr) *Select { return &Select{Cond: cond, T: t, F: f} }
