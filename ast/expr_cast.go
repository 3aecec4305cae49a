package ast

// Cast converts X to type To. It prints as a call of the type's name:
// float32(i).
//
// A float-to-int cast truncates toward zero, saturating at the integer
// type's range (NaN gives 0); an int-to-int cast wraps; a cast to Bool tests
// for non-zero.
type Cast struct {
	To DType
	X  Expr
}

// Type returns e.To.
func (e *Cast) Type() DType { return e.To }

// NewCast returns x converted to type t.
func NewCast(t DType, x Expr) *Cast { return &Cast{To: t, X: x} }
