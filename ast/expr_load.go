package ast

// Load reads one element of a buffer: Buffer[Indices...]. There is one index
// per dimension; a 0-d buffer is read as B[].
type Load struct {
	Buffer  *Buffer
	Indices []Expr
}

// Type returns the buffer's element type.
func (e *Load) Type() DType {
	if e.Buffer == nil {
		return Invalid
	}
	return e.Buffer.DType
}

// NewLoad returns b[indices...].
func NewLoad(b *Buffer, indices ...Expr) *Load { return &Load{Buffer: b, Indices: indices} }
