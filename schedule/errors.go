package schedule

import (
	"errors"
	"fmt"

	"github.com/loom-go/loom/ast"
)

// Sentinel errors. Every error a primitive returns wraps one of them.
var (
	// ErrIllegal: the primitive would change what the function computes,
	// or the IR has a shape the primitive does not handle.
	ErrIllegal = errors.New("illegal schedule")
	// ErrHandle: a block or loop handle is the zero value, belongs to
	// another schedule, or names something that no longer exists.
	ErrHandle = errors.New("invalid handle")
	// ErrArgument: an argument is out of range (a zero split factor, an
	// unknown scope, a sampling request that cannot be met).
	ErrArgument = errors.New("invalid argument")
	// ErrInternal: a primitive produced a function that loom's own checks
	// reject (ill-formed, or refused by the translation validator; see
	// WithValidation). It is a bug of loom, never of the schedule, and the
	// schedule is left as it was.
	ErrInternal = errors.New("internal error")
)

// Error is the error a refused primitive returns: which primitive, why, and
// the nodes of the function (before the primitive) it is about. Use
// errors.Is with the sentinels above to classify it, and Explain to show it.
type Error struct {
	Primitive string     // "split", "compute_at", ...
	Reason    string     // one sentence a user understands
	Func      *ast.Func  // the function the primitive was applied to
	At        []ast.Node // the offending loops, blocks or expressions
	Kind      error      // ErrIllegal, ErrHandle, ErrArgument or ErrInternal
}

// Error returns "schedule: primitive: reason".
func (e *Error) Error() string {
	return ast.ClipWords(fmt.Sprintf("schedule: %s: %s", e.Primitive, e.Reason))
}

// Unwrap returns the sentinel the error belongs to.
func (e *Error) Unwrap() error { return e.Kind }

// Nodes returns the nodes the error is about, for ast.Mark.
func (e *Error) Nodes() []ast.Node { return e.At }

// Explain returns the message followed by the function with the offending
// nodes marked.
func (e *Error) Explain() string { return Explain(e) }

// Explain returns err's message and, when err is or wraps an *Error, the
// function the primitive was applied to with the offending nodes marked
// (see ast.Mark). It is what a command-line tool shows.
func Explain(err error) string {
	if err == nil {
		return ""
	}
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Func == nil {
		return err.Error() + "\n"
	}
	return err.Error() + "\n" + ast.ClipWords(ast.Mark(e.Func, e.At...))
}

func illegal(prim string, f *ast.Func, at []ast.Node, format string, args ...any) *Error {
	return &Error{Primitive: prim, Reason: fmt.Sprintf(format, args...), Func: f, At: at, Kind: ErrIllegal}
}

func badArg(prim string, f *ast.Func, at []ast.Node, format string, args ...any) *Error {
	return &Error{Primitive: prim, Reason: fmt.Sprintf(format, args...), Func: f, At: at, Kind: ErrArgument}
}

func badHandle(prim string, f *ast.Func, format string, args ...any) *Error {
	return &Error{Primitive: prim, Reason: fmt.Sprintf(format, args...), Func: f, Kind: ErrHandle}
}

// nodes lists loops and blocks as ast nodes for an Error.
func nodes[T ast.Node](xs ...T) []ast.Node {
	out := make([]ast.Node, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
