package ast

// Seq runs its statements in order. An empty Seq does nothing.
//
// The text form prints a Seq as its statements one after another inside the
// braces of the statement that holds it, so a Seq of one statement prints
// like that statement alone; the parser builds a Seq only for zero or two and
// more statements.
type Seq struct {
	Stmts []Stmt
}

// NewSeq returns the sequence of stmts, flattening nested sequences. It
// returns the statement itself when only one remains.
func NewSeq(stmts ...Stmt) Stmt {
	var flat []Stmt
	for _, s := range stmts {
		if inner, ok := s.(*Seq); ok {
			flat = append(flat, inner.Stmts...)
			continue
		}
		if s != nil {
			flat = append(flat, s)
		}
	}
	if len(flat) == 1 {
		return flat[0]
	}
	return &Seq{Stmts: flat}
}

// flatStmts returns the statements of s with nested sequences spliced in,
// as the text form prints them.
func flatStmts(s *Seq) []Stmt {
	var out []Stmt
	for _, st := range s.Stmts {
		if inner, ok := st.(*Seq); ok && inner != nil {
			out = append(out, flatStmts(inner)...)
			continue
		}
		out = append(out, st)
	}
	return out
}
