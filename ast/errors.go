package ast

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. Every error this package returns wraps one of them, so
// callers can classify it with errors.Is.
var (
	// ErrSyntax: text given to Parse does not follow the text form.
	ErrSyntax = errors.New("syntax error")
	// ErrInvalid: a node is ill-formed (see Verify).
	ErrInvalid = errors.New("invalid IR")
	// ErrOutOfBounds: the interpreter met an access outside a buffer.
	ErrOutOfBounds = errors.New("out-of-bounds access")
	// ErrRuntime: the interpreter met another run-time fault (an integer
	// division by zero, a binding outside its block's domain, an access
	// outside the block's declared region, a bad argument).
	ErrRuntime = errors.New("run-time error")
	// ErrBudget: InterpretWithin ran more loop iterations than it was
	// allowed (no fault of f's: the check was too costly to finish).
	ErrBudget = errors.New("interpreter's budget exhausted")
)

// ParseError is a syntax or validity error in the text form, at a position.
type ParseError struct {
	Filename string // empty unless set by the caller
	Pos      Pos
	Msg      string
	Err      error // ErrSyntax, or the *VerifyError found at Pos
}

// Error returns "line:column: message", prefixed by the file name if set.
func (e *ParseError) Error() string {
	if e.Filename != "" {
		return ClipWords(fmt.Sprintf("%s:%s: %s", e.Filename, e.Pos, e.Msg))
	}
	return ClipWords(fmt.Sprintf("%s: %s", e.Pos, e.Msg))
}

// Unwrap returns ErrSyntax or the underlying *VerifyError.
func (e *ParseError) Unwrap() error { return e.Err }

// VerifyError describes an ill-formed node found by [Verify].
type VerifyError struct {
	Node Node   // the offending node
	Msg  string // what is wrong, in one sentence
}

// Error returns the message prefixed by "ast: verify: ".
func (e *VerifyError) Error() string { return ClipWords("ast: verify: " + e.Msg) }

// Unwrap returns ErrInvalid.
func (e *VerifyError) Unwrap() error { return ErrInvalid }

// Nodes returns the offending node, for [Mark].
func (e *VerifyError) Nodes() []Node { return []Node{e.Node} }

// OutOfBoundsError is an access outside a buffer's shape met by [Interpret].
type OutOfBoundsError struct {
	Buffer *Buffer
	Index  []int64 // the index that was accessed
	Shape  []int64 // the buffer's shape at run time
	Access Node    // the *Load or *Store
	Stmt   Stmt    // the statement executing the access
	Block  string  // the innermost block around the access, if any
}

// Error names the access, the buffer's shape and the statement.
func (e *OutOfBoundsError) Error() string {
	kind := "load from"
	if _, ok := e.Access.(*Store); ok {
		kind = "store to"
	}
	where := ""
	if e.Block != "" {
		where = " in block " + e.Block
	}
	return ClipWords(fmt.Sprintf("ast: interpret: out-of-bounds %s %s%s%s: %s has shape %s; statement %s",
		kind, e.Buffer.Name, formatIndex(e.Index), where, e.Buffer.Name, formatIndex(e.Shape), firstLine(e.Stmt)))
}

// Unwrap returns ErrOutOfBounds.
func (e *OutOfBoundsError) Unwrap() error { return ErrOutOfBounds }

// Nodes returns the access and its statement, for [Mark].
func (e *OutOfBoundsError) Nodes() []Node { return []Node{e.Stmt, e.Access} }

// RuntimeError is any other fault met by [Interpret].
type RuntimeError struct {
	Node Node // the expression or statement at fault, if any
	Msg  string
}

// Error returns the message prefixed by "ast: interpret: ".
func (e *RuntimeError) Error() string { return ClipWords("ast: interpret: " + e.Msg) }

// Unwrap returns ErrRuntime.
func (e *RuntimeError) Unwrap() error { return ErrRuntime }

// Nodes returns the node at fault, for [Mark].
func (e *RuntimeError) Nodes() []Node {
	if e.Node == nil {
		return nil
	}
	return []Node{e.Node}
}

// Explain returns err's message followed, when err (or an error it wraps)
// points at nodes through a Nodes() []Node method, by root printed with
// those nodes marked (see [Mark]). It is what a command-line tool shows.
func Explain(root Node, err error) string {
	if err == nil {
		return ""
	}
	var pointer interface{ Nodes() []Node }
	if !errors.As(err, &pointer) || len(pointer.Nodes()) == 0 {
		return err.Error()
	}
	return err.Error() + "\n" + ClipWords(Mark(root, pointer.Nodes()...))
}

// maxWord is the longest name or other word ClipWords leaves whole.
const maxWord = 160

// ClipWords shortens every word (a run of bytes without spaces or line
// breaks) of s longer than 160 bytes to its start, an ellipsis and its
// length, so that a message naming a huge name (a hostile input, or a
// loop fused a dozen times) stays readable.
func ClipWords(s string) string {
	long := false
	for _, w := range strings.Fields(s) {
		if len(w) > maxWord {
			long = true
			break
		}
	}
	if !long {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexAny(s, " \t\n")
		if i < 0 {
			i = len(s)
		}
		w := s[:i]
		if len(w) > maxWord {
			cut := maxWord / 2
			for cut > 0 && !utf8.RuneStart(w[cut]) {
				cut--
			}
			fmt.Fprintf(&b, "%s...(%d bytes)", w[:cut], len(w))
		} else {
			b.WriteString(w)
		}
		if i < len(s) {
			b.WriteByte(s[i])
			i++
		}
		s = s[i:]
	}
	return b.String()
}

func formatIndex(idx []int64) string {
	parts := make([]string, len(idx))
	for i, v := range idx {
		parts[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// firstLine returns the first line of n's text form, quoted, for messages.
func firstLine(n Node) string {
	if n == nil || isNilNode(n) {
		return "<nil>"
	}
	s := Print(n)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return fmt.Sprintf("%q", strings.TrimSpace(s))
}
