package ast

// Alloc declares a buffer that is not a parameter of the function: a
// temporary in global memory, or a GPU shared-memory or register buffer. It is
// a declaration like a local variable in C: the buffer exists from the Alloc
// to the end of the enclosing statement list, and may be used by every
// statement after it there (and inside them). Its contents start undefined;
// the interpreter fills new buffers with NaN (floats) or a poison pattern
// (integers) so that a read before a write shows up in test results.
//
// Text form: alloc A_shared: float32[64, 64] in shared
type Alloc struct {
	Buffer *Buffer
}

// NewAlloc returns the declaration of b.
func NewAlloc(b *Buffer) *Alloc { return &Alloc{Buffer: b} }
