package ast

// Node is any element of the IR: an [Expr], a [Stmt], a [*Buffer] or a
// [*Func]. Nodes are plain structs that callers may build directly; the
// printer, the verifier and the interpreter treat them as immutable values,
// and the rewriting helpers ([MapChildren], [Substitute], [Simplify]) return
// new nodes instead of changing their input.
type Node interface {
	// String returns the node in the text form (see [Print]).
	String() string
}

// Expr is an expression. Its dynamic type is one of
//   - [*Const], [*Var], [*Binary], [*Not], [*Select], [*Cast], [*Call], [*Load]
type Expr interface {
	Node
	// Type returns the element type of the expression's value. It is
	// computed from the operands and never fails; an ill-typed expression
	// is reported by [Verify], not here.
	Type() DType
	exprNode() // unexported, so only package ast can add expressions
}

// Stmt is a statement of a loop nest. Its dynamic type is one of
//   - [*For], [*ScheduleBlock], [*Store], [*IfThenElse], [*Seq], [*Alloc]
type Stmt interface {
	Node
	stmtNode() // unexported, so only package ast can add statements
}

func (*Const) exprNode()  {}
func (*Var) exprNode()    {}
func (*Binary) exprNode() {}
func (*Not) exprNode()    {}
func (*Select) exprNode() {}
func (*Cast) exprNode()   {}
func (*Call) exprNode()   {}
func (*Load) exprNode()   {}

func (*For) stmtNode()           {}
func (*ScheduleBlock) stmtNode() {}
func (*Store) stmtNode()         {}
func (*IfThenElse) stmtNode()    {}
func (*Seq) stmtNode()           {}
func (*Alloc) stmtNode()         {}

// String returns the expression in the text form.
func (e *Const) String() string { return exprString(e) }

// String returns the expression in the text form.
func (e *Var) String() string { return exprString(e) }

// String returns the expression in the text form.
func (e *Binary) String() string { return exprString(e) }

// String returns the expression in the text form.
func (e *Not) String() string { return exprString(e) }

// String returns the expression in the text form.
func (e *Select) String() string { return exprString(e) }

// String returns the expression in the text form.
func (e *Cast) String() string { return exprString(e) }

// String returns the expression in the text form.
func (e *Call) String() string { return exprString(e) }

// String returns the expression in the text form.
func (e *Load) String() string { return exprString(e) }

// String returns the statement in the text form.
func (s *For) String() string { return stmtString(s) }

// String returns the statement in the text form.
func (s *ScheduleBlock) String() string { return stmtString(s) }

// String returns the statement in the text form.
func (s *Store) String() string { return stmtString(s) }

// String returns the statement in the text form.
func (s *IfThenElse) String() string { return stmtString(s) }

// String returns the statement in the text form.
func (s *Seq) String() string { return stmtString(s) }

// String returns the statement in the text form.
func (s *Alloc) String() string { return stmtString(s) }
