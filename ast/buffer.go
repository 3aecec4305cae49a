package ast

// Scope is the memory a buffer lives in.
type Scope uint8

// The storage scopes. Parameters are always Global. Shared is GPU shared
// memory, visible to the threads of one block; Local is private to one
// thread (registers on a GPU, the stack on a CPU).
const (
	Global Scope = iota
	Shared
	Local
)

var scopeNames = [...]string{Global: "global", Shared: "shared", Local: "local"}

// String returns "global", "shared" or "local".
func (s Scope) String() string {
	if s.Valid() {
		return scopeNames[s]
	}
	return "?"
}

// Valid reports whether s is one of the scopes.
func (s Scope) Valid() bool { return int(s) < len(scopeNames) }

// ParseScope returns the scope named name and whether there is one.
func ParseScope(name string) (Scope, bool) {
	for s, n := range scopeNames {
		if n == name {
			return Scope(s), true
		}
	}
	return 0, false
}

// Buffer is a dense, row-major, multi-dimensional array of DType elements.
// Each dimension of Shape is an integer expression: a constant or an
// expression over the function's symbolic sizes (S1, S1*2, ...).
//
// A buffer is declared once, as a parameter of a [Func] or by an [Alloc], and
// every [Load], [Store] and [Region] refers to that declaration.
type Buffer struct {
	Name  string
	DType DType
	Shape []Expr
	Scope Scope
}

// NewBuffer returns a global buffer.
func NewBuffer(name string, t DType, shape ...Expr) *Buffer {
	return &Buffer{Name: name, DType: t, Shape: shape}
}

// Rank returns the number of dimensions of b.
func (b *Buffer) Rank() int { return len(b.Shape) }

// At returns the load b[indices...].
func (b *Buffer) At(indices ...Expr) *Load { return NewLoad(b, indices...) }

// String returns the buffer's declaration in the text form:
// A: float32[S1, 1024].
func (b *Buffer) String() string { return bufferString(b) }
