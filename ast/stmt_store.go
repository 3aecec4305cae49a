package ast

// Store writes Value to one element of a buffer: Buffer[Indices...] = Value.
type Store struct {
	Buffer  *Buffer
	Indices []Expr
	Value   Expr
}

// NewStore returns the statement b[indices...] = value.
func NewStore(b *Buffer, value Expr, indices ...Expr) *Store {
	return &Store{Buffer: b, Indices: indices, Value: value}
}
