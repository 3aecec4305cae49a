package ast

// IfThenElse runs Then where Cond holds and Else (which may be nil)
// otherwise.
type IfThenElse struct {
	Cond Expr
	Then Stmt
	Else Stmt
}

// NewIf returns if (cond) { then } else { els }; els may be nil.
func NewIf(cond Expr, then, els Stmt) *IfThenElse {
	return &IfThenElse{Cond: cond, Then: then, Else: els}
}
