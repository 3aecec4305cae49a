package ast

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Print returns n in loom's text form, which [Parse] reads back:
// Parse(Print(f)) prints as Print(f) for every function f.
//
// The form follows the ScheduleBlock printing of CINN:
//
//	func matmul(A: float32[64, 64], B: float32[64, 64], C: float32[64, 64]) {
//	  ScheduleBlock(root) {
//	    serial for (i, 0, 64) {
//	      serial for (j, 0, 64) {
//	        serial for (k, 0, 64) {
//	          ScheduleBlock(C) {
//	            vi, vj, vk = axis.bind(i, j, k)
//	            axis.domain(vi = spatial(0, 64), vj = spatial(0, 64), vk = reduce(0, 64))
//	            reads(C[vi, vj], A[vi, vk], B[vk, vj])
//	            writes(C[vi, vj])
//	            init {
//	              C[vi, vj] = 0.0f
//	            }
//	            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
//	          }
//	        }
//	      }
//	    }
//	  }
//	}
//
// Constants carry their type in a suffix: 7 is int32, 7L int64, 1.5f
// float32, 1.5 float64, 1.5h float16, 1.5bf bfloat16; infinities and NaN are
// spelled inf and nan with the same suffixes (-inff, nanf). Binary operators
// print infix with the usual precedence and only the parentheses it needs;
// floordiv, floormod, min, max, select, casts (float32(i)) and intrinsics
// (exp(x)) print as calls. A region dimension prints as its minimum when its
// extent is 1 and as min:+extent otherwise (A[vi, 0:+64]).
//
// Print never fails: an ill-formed node prints as best it can (a missing
// expression as <nil>), so that error messages can show it.
func Print(n Node) string {
	var p printer
	p.node(n)
	return p.buf.String()
}

func exprString(e Expr) string { return Print(e) }
func stmtString(s Stmt) string { return Print(s) }

func bufferString(b *Buffer) string {
	var p printer
	p.bufferDecl(b)
	return p.buf.String()
}

// span is where a node was printed: its first line (0-based) and, for
// expressions and declarations, the columns [col, end) on that line.
type span struct {
	line, col, end int
	stmt           bool
}

// printer writes the text form. When spans is non-nil it also records where
// each node went, for [Mark].
type printer struct {
	buf       strings.Builder
	indent    int
	line      int
	lineStart int
	spans     map[Node][]span
}

func (p *printer) col() int { return p.buf.Len() - p.lineStart }

func (p *printer) print(args ...string) {
	for _, s := range args {
		p.buf.WriteString(s)
	}
}

func (p *printer) newline() {
	p.buf.WriteByte('\n')
	p.line++
	p.lineStart = p.buf.Len()
	for i := 0; i < p.indent; i++ {
		p.buf.WriteString("  ")
	}
}

// record notes that n was printed from (line, col) up to the current
// position. Statements record only their first line.
func (p *printer) record(n Node, line, col int, stmt bool) {
	if p.spans == nil || n == nil {
		return
	}
	end := p.col()
	if line != p.line {
		end = col + 1
	}
	p.spans[n] = append(p.spans[n], span{line: line, col: col, end: end, stmt: stmt})
}

func (p *printer) node(n Node) {
	switch n := n.(type) {
	case *Func:
		p.fn(n)
	case Stmt:
		p.stmt(n)
	case Expr:
		p.expr(n, 0)
	case *Buffer:
		p.bufferDecl(n)
	case nil:
		p.print("<nil>")
	default:
		panic(fmt.Sprintf("ast.Print: unexpected node %T", n))
	}
}

func (p *printer) fn(f *Func) {
	if f == nil {
		p.print("<nil>")
		return
	}
	line, col := p.line, p.col()
	p.print("func ", f.Name)
	if len(f.Sizes) > 0 {
		p.print("[")
		for i, v := range f.Sizes {
			if i > 0 {
				p.print(", ")
			}
			l, c := p.line, p.col()
			if v == nil {
				p.print("<nil>")
				continue
			}
			p.print(v.Name, ": ", v.DType.String())
			p.record(v, l, c, false)
		}
		p.print("]")
	}
	p.print("(")
	for i, b := range f.Params {
		if i > 0 {
			p.print(", ")
		}
		p.bufferDecl(b)
	}
	p.print(") {")
	p.record(f, line, col, true)
	p.body(f.Body)
	p.print("}")
	p.newlineNoIndent()
}

func (p *printer) newlineNoIndent() {
	p.buf.WriteByte('\n')
	p.line++
	p.lineStart = p.buf.Len()
}

func (p *printer) bufferDecl(b *Buffer) {
	line, col := p.line, p.col()
	if b == nil {
		p.print("<nil>")
		return
	}
	p.print(b.Name, ": ", b.DType.String(), "[")
	p.exprList(b.Shape)
	p.print("]")
	if b.Scope != Global {
		p.print(" in ", b.Scope.String())
	}
	p.record(b, line, col, false)
}

// body prints the statements of s one per line inside braces already opened,
// and leaves the cursor at the start of the line that closes them.
func (p *printer) body(s Stmt) {
	p.indent++
	p.stmtLines(s)
	p.indent--
	p.newline()
}

// stmtLines prints s on lines of its own: the statements of a sequence
// (nested ones spliced in) one per line, anything else on one line.
func (p *printer) stmtLines(s Stmt) {
	if seq, ok := s.(*Seq); ok && seq != nil {
		for _, st := range flatStmts(seq) {
			p.newline()
			p.stmt(st)
		}
	} else if !isNilStmt(s) {
		p.newline()
		p.stmt(s)
	}
}

func (p *printer) stmt(s Stmt) {
	line, col := p.line, p.col()
	switch s := s.(type) {
	case *For:
		if s == nil {
			p.print("<nil>")
			return
		}
		p.print(s.Kind.String(), " for (")
		p.varName(s.Var)
		p.print(", ")
		p.expr(s.Min, 0)
		p.print(", ")
		p.expr(s.Extent, 0)
		p.print(")")
		p.annotations(s.Annotations, " ")
		p.print(" {")
		p.record(s, line, col, true)
		p.body(s.Body)
		p.print("}")
	case *ScheduleBlock:
		if s == nil {
			p.print("<nil>")
			return
		}
		p.block(s)
	case *Store:
		if s == nil {
			p.print("<nil>")
			return
		}
		p.access(s.Buffer, s.Indices)
		p.print(" = ")
		p.expr(s.Value, 0)
		p.record(s, line, col, true)
	case *IfThenElse:
		if s == nil {
			p.print("<nil>")
			return
		}
		p.print("if (")
		p.expr(s.Cond, 0)
		p.print(") {")
		p.record(s, line, col, true)
		p.body(s.Then)
		p.print("}")
		if !isNilStmt(s.Else) {
			p.print(" else {")
			p.body(s.Else)
			p.print("}")
		}
	case *Seq:
		if s == nil {
			p.print("<nil>")
			return
		}
		// A Seq printed on its own (not as the body of a statement, which
		// body handles) prints its statements one per line.
		for i, st := range flatStmts(s) {
			if i > 0 {
				p.newline()
			}
			p.stmt(st)
		}
	case *Alloc:
		if s == nil {
			p.print("<nil>")
			return
		}
		p.print("alloc ")
		p.bufferDecl(s.Buffer)
		p.record(s, line, col, true)
	case nil:
		p.print("<nil>")
	default:
		panic(fmt.Sprintf("ast.Print: unexpected statement %T", s))
	}
}

func (p *printer) block(b *ScheduleBlock) {
	line, col := p.line, p.col()
	p.print("ScheduleBlock(", b.Name, ") {")
	p.record(b, line, col, true)
	p.indent++
	if len(b.Iters) > 0 {
		p.newline()
		p.iters(b.Iters, func(it *IterVar) { p.varName(it.Var) })
		p.print(" = axis.bind(")
		p.iters(b.Iters, func(it *IterVar) { p.expr(it.Binding, 0) })
		p.print(")")
		p.newline()
		p.print("axis.domain(")
		p.iters(b.Iters, func(it *IterVar) {
			l, c := p.line, p.col()
			p.varName(it.Var)
			p.print(" = ", it.Kind.String(), "(")
			p.expr(it.Dom.Min, 0)
			p.print(", ")
			p.expr(it.Dom.Extent, 0)
			p.print(")")
			p.record(it.Var, l, c, false)
		})
		p.print(")")
	}
	if !isNilExpr(b.Predicate) {
		p.newline()
		p.print("predicate(")
		p.expr(b.Predicate, 0)
		p.print(")")
	}
	p.regions("reads", b.Reads)
	p.regions("writes", b.Writes)
	if len(b.Annotations) > 0 {
		p.newline()
		p.annotations(b.Annotations, "")
	}
	if !isNilStmt(b.Init) {
		p.newline()
		p.print("init {")
		p.body(b.Init)
		p.print("}")
	}
	p.stmtLines(b.Body)
	p.indent--
	p.newline()
	p.print("}")
}

// iters prints each iteration variable with each, separated by commas.
func (p *printer) iters(its []*IterVar, each func(*IterVar)) {
	for i, it := range its {
		if i > 0 {
			p.print(", ")
		}
		if it == nil {
			p.print("<nil>")
			continue
		}
		each(it)
	}
}

func (p *printer) regions(keyword string, rs []Region) {
	if len(rs) == 0 {
		return
	}
	p.newline()
	p.print(keyword, "(")
	for i, r := range rs {
		if i > 0 {
			p.print(", ")
		}
		p.bufferName(r.Buffer)
		p.print("[")
		for j, rg := range r.Ranges {
			if j > 0 {
				p.print(", ")
			}
			p.expr(rg.Min, 0)
			if !isUnitExtent(rg) {
				p.print(":+")
				p.expr(rg.Extent, precUnary)
			}
		}
		p.print("]")
	}
	p.print(")")
}

// isUnitExtent reports whether a region range covers a single index and
// prints as just its minimum: its extent is the constant 1 of the minimum's
// type (int32 unless the minimum is int64).
func isUnitExtent(rg Range) bool {
	c, ok := rg.Extent.(*Const)
	if !ok || c == nil || c.Int != 1 {
		return false
	}
	want := Int32
	if !isNilExpr(rg.Min) && rg.Min.Type() == Int64 {
		want = Int64
	}
	return c.DType == want
}

func (p *printer) annotations(a Annotations, before string) {
	if len(a) == 0 {
		return
	}
	p.print(before, "attrs(")
	for i, k := range a.Keys() {
		if i > 0 {
			p.print(", ")
		}
		if isIdent(k) && !isReserved(k) {
			p.print(k)
		} else {
			p.print(strconv.Quote(k))
		}
		p.print(" = ", formatAnnotationValue(a[k]))
	}
	p.print(")")
}

func formatAnnotationValue(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eIN") {
			s += ".0"
		}
		return s
	case string:
		return strconv.Quote(v)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprintf("<%T>", v)
}

func (p *printer) varName(v *Var) {
	if v == nil {
		p.print("<nil>")
		return
	}
	p.print(v.Name)
}

func (p *printer) bufferName(b *Buffer) {
	if b == nil {
		p.print("<nil>")
		return
	}
	p.print(b.Name)
}

func (p *printer) access(b *Buffer, indices []Expr) {
	p.bufferName(b)
	p.print("[")
	p.exprList(indices)
	p.print("]")
}

func (p *printer) exprList(es []Expr) {
	for i, e := range es {
		if i > 0 {
			p.print(", ")
		}
		p.expr(e, 0)
	}
}

// Operator precedences; a higher number binds tighter.
const (
	precUnary   = 6
	precPrimary = 7
)

// exprPrec returns the precedence of e as printed.
func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *Binary:
		if e != nil && e.Op.Valid() && binaryInfo[e.Op].prec > 0 {
			return binaryInfo[e.Op].prec
		}
	case *Not:
		return precUnary
	case *Const:
		if e != nil && constIsNegative(e) {
			return precUnary
		}
	}
	return precPrimary
}

func constIsNegative(c *Const) bool {
	if c.DType.IsFloat() {
		return math.Signbit(c.Float) && !math.IsNaN(c.Float)
	}
	return c.DType.IsInt() && c.Int < 0
}

// expr prints e, in parentheses if its precedence is below min.
func (p *printer) expr(e Expr, min int) {
	if isNilExpr(e) {
		p.print("<nil>")
		return
	}
	line, col := p.line, p.col()
	paren := exprPrec(e) < min
	if paren {
		p.print("(")
	}
	switch e := e.(type) {
	case *Const:
		p.print(formatConst(e))
	case *Var:
		p.print(e.Name)
	case *Binary:
		if !e.Op.Valid() {
			p.print("?(")
			p.expr(e.A, 0)
			p.print(", ")
			p.expr(e.B, 0)
			p.print(")")
			break
		}
		info := binaryInfo[e.Op]
		if info.prec == 0 {
			p.print(info.text, "(")
			p.expr(e.A, 0)
			p.print(", ")
			p.expr(e.B, 0)
			p.print(")")
			break
		}
		// Left-associative: the right operand needs parentheses at equal
		// precedence. Comparisons do not chain, so both sides do.
		left := info.prec
		if e.Op.IsCompare() {
			left++
		}
		p.expr(e.A, left)
		p.print(" ", info.text, " ")
		p.expr(e.B, info.prec+1)
	case *Not:
		p.print("!")
		p.expr(e.X, precUnary)
	case *Select:
		p.print("select(")
		p.exprList([]Expr{e.Cond, e.T, e.F})
		p.print(")")
	case *Cast:
		p.print(e.To.String(), "(")
		p.expr(e.X, 0)
		p.print(")")
	case *Call:
		p.print(e.Func.String(), "(")
		p.exprList(e.Args)
		p.print(")")
	case *Load:
		p.access(e.Buffer, e.Indices)
	default:
		panic(fmt.Sprintf("ast.Print: unexpected expression %T", e))
	}
	if paren {
		p.print(")")
	}
	p.record(e, line, col, false)
}

// constSuffix is the literal suffix of each constant type; the parser reads
// it back (see floatSuffixes).
var constSuffix = map[DType]string{
	Int32: "", Int64: "L", Float16: "h", BFloat16: "bf", Float32: "f", Float64: "",
}

func formatConst(c *Const) string {
	switch {
	case c.DType == Bool:
		return strconv.FormatBool(c.Int != 0)
	case c.DType.IsInt():
		return strconv.FormatInt(c.Int, 10) + constSuffix[c.DType]
	case c.DType.IsFloat():
		return formatFloat(c.DType, c.Float) + constSuffix[c.DType]
	}
	return fmt.Sprintf("<%s %d %g>", c.DType, c.Int, c.Float)
}

// formatFloat spells v with the fewest digits that read back to the same
// value of type t, always with a decimal point or an exponent.
func formatFloat(t DType, v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	bits := 64
	if t != Float64 {
		bits = 32 // exact for float16 and bfloat16 values too
	}
	s := strconv.FormatFloat(v, 'g', -1, bits)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
