package ast

// Var is a scalar variable: a loop variable, a block iteration variable or a
// symbolic size of the function (such as S1 in float32[S1, 1024]).
//
// Variables are identified by name. A well-formed function never defines a
// name twice where both definitions are in scope (see [Verify]), so two Var
// nodes with the same name in the same scope denote the same variable.
type Var struct {
	Name  string
	DType DType
}

// Type returns v.DType.
func (v *Var) Type() DType { return v.DType }

// NewVar returns a variable of the given name and type.
func NewVar(name string, t DType) *Var { return &Var{Name: name, DType: t} }
