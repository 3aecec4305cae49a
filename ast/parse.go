package ast

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Parse reads a function in the text form that [Print] writes and checks it
// with [Verify]. The text may contain // comments and any spacing.
//
// A returned error is a *ParseError giving the line and column of the
// problem and what was expected there; it wraps ErrSyntax, or the
// *VerifyError (wrapping ErrInvalid) of a function that parses but is
// ill-formed. Parse never panics, whatever its input.
func Parse(src string) (*Func, error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	var f *Func
	if err := catch(func() { f = p.fn() }); err != nil {
		return nil, err
	}
	if err := Verify(f); err != nil {
		return nil, p.locate(err)
	}
	return f, nil
}

// ParseExpr reads an expression in the text form. Its variables and buffers
// must be among scope, whose elements are *Var and *Buffer nodes (other
// nodes are ignored). The expression is checked like an expression inside a
// function (see [Verify]); errors are as for [Parse].
func ParseExpr(src string, scope ...Node) (Expr, error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	for _, n := range scope {
		if isNilNode(n) {
			return nil, fmt.Errorf("ast: ParseExpr: the scope holds a nil %T", n)
		}
		switch n := n.(type) {
		case *Var:
			p.vars[0].names[n.Name] = n
		case *Buffer:
			p.bufs[0][n.Name] = n
		}
	}
	var e Expr
	if err := catch(func() {
		e = p.expr()
		p.expect(tokEOF, "")
	}); err != nil {
		return nil, err
	}
	if err := verifyExpr(e); err != nil {
		return nil, p.locate(err)
	}
	return e, nil
}

// maxDepth bounds the nesting of statements and expressions, so that no
// input can exhaust the stack of the parser or of later passes.
const maxDepth = 1000

// varScope is one level of variable scope. A barrier scope (a block body,
// the domains of a block) hides the scopes above it except the function's
// sizes; hidden explains why, for the error about a hidden variable.
type varScope struct {
	names  map[string]*Var
	hidden string // non-empty for a barrier
}

type parser struct {
	height map[Expr]int // height of each expression built, to bound the tree
	toks   []token
	i      int
	depth  int
	vars   []varScope // vars[0] holds the function's sizes
	bufs   []map[string]*Buffer
	blocks map[string]Pos
	pos    map[Node]Pos

	block0 string // the block whose header is being read
}

func newParser(src string) (*parser, error) {
	if !utf8.ValidString(src) {
		return nil, &ParseError{Pos: Pos{1, 1}, Msg: "input is not valid UTF-8", Err: ErrSyntax}
	}
	lx := newLexer(src)
	p := &parser{
		vars:   []varScope{{names: map[string]*Var{}}},
		bufs:   []map[string]*Buffer{{}},
		blocks: map[string]Pos{},
		pos:    map[Node]Pos{},
		height: map[Expr]int{},
	}
	for {
		t := lx.next()
		p.toks = append(p.toks, t)
		if t.kind == tokEOF {
			return p, nil
		}
	}
}

func (p *parser) failAt(pos Pos, format string, args ...any) {
	panic(bailout{&ParseError{Pos: pos, Msg: fmt.Sprintf(format, args...), Err: ErrSyntax}})
}

// locate turns an error of Verify into a *ParseError at the position of the
// offending node.
func (p *parser) locate(err error) error {
	var ve *VerifyError
	if !errors.As(err, &ve) {
		return err
	}
	pos, ok := p.pos[ve.Node]
	if !ok {
		pos = Pos{1, 1}
	}
	return &ParseError{Pos: pos, Msg: ve.Msg, Err: ve}
}

func (p *parser) tok() token { return p.toks[p.i] }

func (p *parser) peek(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) advance() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// is reports whether the current token is the punctuation or identifier s.
func (p *parser) is(s string) bool {
	t := p.tok()
	return (t.kind == tokPunct || t.kind == tokIdent) && t.text == s
}

// got consumes the current token if it is s.
func (p *parser) got(s string) bool {
	if p.is(s) {
		p.advance()
		return true
	}
	return false
}

// want consumes the token s or fails saying what it was needed for.
func (p *parser) want(s, context string) token {
	if !p.is(s) {
		p.expected(fmt.Sprintf("%q%s", s, context))
	}
	return p.advance()
}

func (p *parser) expect(kind tokenKind, context string) token {
	if p.tok().kind != kind {
		what := map[tokenKind]string{tokEOF: "end of input", tokIdent: "a name", tokString: "a string"}[kind]
		p.expected(what + context)
	}
	return p.advance()
}

func (p *parser) expected(what string) {
	t := p.tok()
	if t.kind == tokIllegal {
		if strings.HasPrefix(t.text, `"`) {
			p.failAt(t.pos, "string not terminated before the end of the line")
		}
		p.failAt(t.pos, "unexpected character %q", t.text)
	}
	p.failAt(t.pos, "expected %s, found %s", what, t.describe())
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.failAt(p.tok().pos, "nesting deeper than %d levels", maxDepth)
	}
}

func (p *parser) leave() { p.depth-- }

// grow records the height of e, a new node over the given operands, and
// fails if the expression tree grows deeper than maxDepth. (The nesting
// counter of enter does not see a long chain a + b + c + ..., which builds a
// deep left spine.)
func (p *parser) grow(e Expr, pos Pos, operands ...Expr) Expr {
	h := 0
	for _, o := range operands {
		h = max(h, p.height[o])
	}
	if h+1 > maxDepth {
		p.failAt(pos, "expression nested deeper than %d levels", maxDepth)
	}
	p.height[e] = h + 1
	return e
}

// ident reads a name that must not be a reserved word.
func (p *parser) ident(context string) token {
	t := p.expect(tokIdent, context)
	if isReserved(t.text) {
		p.failAt(t.pos, "%q is a reserved word and cannot be used as a name", t.text)
	}
	return t
}

// Scopes.

// pushVars opens a scope; a non-empty hidden makes it a barrier.
func (p *parser) pushVars(hidden string) {
	p.vars = append(p.vars, varScope{names: map[string]*Var{}, hidden: hidden})
}

func (p *parser) popVars() { p.vars = p.vars[:len(p.vars)-1] }

func (p *parser) define(v *Var) { p.vars[len(p.vars)-1].names[v.Name] = v }

func (p *parser) lookupVar(name string) *Var {
	for i := len(p.vars) - 1; i >= 0; i-- {
		if v, ok := p.vars[i].names[name]; ok {
			return v
		}
		if p.vars[i].hidden != "" {
			if v, ok := p.vars[0].names[name]; ok {
				return v
			}
			return nil
		}
	}
	return nil
}

// hiddenBy returns the explanation of the innermost barrier hiding the
// variable name, or "" if no variable of that name is in any scope.
func (p *parser) hiddenBy(name string) string {
	for i, sc := range p.vars {
		if _, ok := sc.names[name]; ok {
			for j := len(p.vars) - 1; j > i; j-- {
				if p.vars[j].hidden != "" {
					return p.vars[j].hidden
				}
			}
		}
	}
	return ""
}

func (p *parser) lookupBuffer(name string) *Buffer {
	for i := len(p.bufs) - 1; i >= 0; i-- {
		if b, ok := p.bufs[i][name]; ok {
			return b
		}
	}
	return nil
}

// The function.

func (p *parser) fn() *Func {
	p.want("func", " at the start of a function")
	start := p.toks[p.i-1].pos
	f := &Func{Name: p.ident(" after func").text}
	p.pos[f] = start
	if p.got("[") {
		for {
			t := p.ident(" (a symbolic size)")
			p.want(":", " after the size "+t.text)
			v := &Var{Name: t.text, DType: p.dtype()}
			if p.vars[0].names[v.Name] != nil {
				p.failAt(t.pos, "size %s declared twice", v.Name)
			}
			p.pos[v] = t.pos
			p.define(v)
			f.Sizes = append(f.Sizes, v)
			if !p.got(",") {
				break
			}
		}
		p.want("]", " after the symbolic sizes")
	}
	p.want("(", " before the buffer parameters")
	if !p.is(")") {
		for {
			b := p.bufferDecl()
			if b.Scope != Global {
				p.failAt(p.pos[b], "parameter %s must be in global memory", b.Name)
			}
			if f.Size(b.Name) != nil {
				p.failAt(p.pos[b], "parameter %s has the name of a symbolic size (both are arguments of the compiled kernel)", b.Name)
			}
			f.Params = append(f.Params, b)
			if !p.got(",") {
				break
			}
		}
	}
	p.want(")", " after the buffer parameters")
	f.Body = p.braces(" after the function header")
	p.expect(tokEOF, " after the function")
	return f
}

func (p *parser) dtype() DType {
	t := p.expect(tokIdent, " (a type such as float32)")
	dt, ok := ParseDType(t.text)
	if !ok {
		p.failAt(t.pos, "unknown type %q (want bool, int32, int64, float16, bfloat16, float32 or float64)", t.text)
	}
	return dt
}

// bufferDecl reads NAME: DTYPE[SHAPE] [in SCOPE] and declares the buffer in
// the current scope.
func (p *parser) bufferDecl() *Buffer {
	t := p.ident(" (a buffer name)")
	p.want(":", " after the buffer name "+t.text)
	b := &Buffer{Name: t.text, DType: p.dtype()}
	p.want("[", " before the shape of "+t.text)
	b.Shape = p.exprsUntil("]")
	p.want("]", " after the shape of "+t.text)
	if p.got("in") {
		st := p.expect(tokIdent, " (global, shared or local)")
		s, ok := ParseScope(st.text)
		if !ok {
			p.failAt(st.pos, "unknown storage scope %q (want global, shared or local)", st.text)
		}
		b.Scope = s
	}
	if p.lookupBuffer(b.Name) != nil {
		p.failAt(t.pos, "buffer %s declared twice", b.Name)
	}
	p.bufs[len(p.bufs)-1][b.Name] = b
	p.pos[b] = t.pos
	return b
}

// Statements.

// braces reads { statements } and returns them as one statement.
func (p *parser) braces(context string) Stmt {
	p.want("{", context)
	stmts := p.stmtList()
	p.want("}", " or a statement")
	return seqOf(stmts)
}

// seqOf returns the statement a list of statements prints as: the statement
// itself when there is one, a Seq otherwise.
func seqOf(stmts []Stmt) Stmt {
	if len(stmts) == 1 {
		return stmts[0]
	}
	return &Seq{Stmts: stmts}
}

// stmtList reads statements up to a closing brace, in a new buffer scope.
func (p *parser) stmtList() []Stmt {
	p.enter()
	defer p.leave()
	p.bufs = append(p.bufs, map[string]*Buffer{})
	defer func() { p.bufs = p.bufs[:len(p.bufs)-1] }()
	var stmts []Stmt
	for !p.is("}") && p.tok().kind != tokEOF {
		stmts = append(stmts, p.stmt())
	}
	return stmts
}

var loopKindWords = map[string]ForKind{
	"serial": Serial, "parallel": Parallel, "vectorized": Vectorized, "unrolled": Unrolled,
}

func (p *parser) stmt() Stmt {
	t := p.tok()
	if t.kind != tokIdent {
		p.expected("a statement")
	}
	switch t.text {
	case "serial", "parallel", "vectorized", "unrolled", "bind":
		return p.forStmt()
	case "for":
		p.failAt(t.pos, "a loop needs its kind before for: serial, parallel, vectorized, unrolled or bind(...)")
	case "ScheduleBlock":
		return p.block()
	case "if":
		return p.ifStmt()
	case "alloc":
		p.advance()
		a := &Alloc{Buffer: p.bufferDecl()}
		p.pos[a] = t.pos
		return a
	}
	return p.store()
}

func (p *parser) forStmt() Stmt {
	start := p.tok().pos
	var kind ForKind
	if p.got("bind") {
		p.want("(", " after bind")
		axis := p.expect(tokIdent, " (blockIdx or threadIdx)")
		p.want(".", " after "+axis.text)
		dim := p.expect(tokIdent, " (x, y or z)")
		k, ok := gpuKind(axis.text, dim.text)
		if !ok {
			p.failAt(axis.pos, "unknown GPU binding %s.%s (want blockIdx or threadIdx, then .x, .y or .z)", axis.text, dim.text)
		}
		kind = k
		p.want(")", " after the GPU binding")
	} else {
		kind = loopKindWords[p.advance().text]
	}
	p.want("for", " after the loop kind")
	p.want("(", " after for")
	vt := p.ident(" (the loop variable)")
	p.want(",", " after the loop variable")
	min := p.expr()
	p.want(",", " after the loop minimum")
	ext := p.expr()
	p.want(")", " after the loop extent")
	f := &For{Min: min, Extent: ext, Kind: kind}
	f.Var = &Var{Name: vt.text, DType: ext.Type()}
	p.pos[f], p.pos[f.Var] = start, vt.pos
	if p.is("attrs") {
		f.Annotations = p.attrs()
	}
	p.enter()
	p.pushVars("")
	p.define(f.Var)
	f.Body = p.braces(" before the loop body")
	p.popVars()
	p.leave()
	return f
}

func gpuKind(axis, dim string) (ForKind, bool) {
	d := map[string]ForKind{"x": 0, "y": 1, "z": 2}
	off, ok := d[dim]
	if !ok {
		return 0, false
	}
	switch axis {
	case "blockIdx":
		return GPUBlockX + off, true
	case "threadIdx":
		return GPUThreadX + off, true
	}
	return 0, false
}

func (p *parser) ifStmt() Stmt {
	start := p.advance().pos
	p.want("(", " after if")
	cond := p.expr()
	p.want(")", " after the condition")
	s := &IfThenElse{Cond: cond}
	p.pos[s] = start
	p.enter()
	defer p.leave()
	s.Then = p.braces(" before the then-branch")
	if p.got("else") {
		if p.is("if") {
			s.Else = p.ifStmt()
		} else {
			s.Else = p.braces(" or if after else")
		}
	}
	return s
}

func (p *parser) store() Stmt {
	t := p.ident(" (a statement)")
	b := p.lookupBuffer(t.text)
	if b == nil {
		if !p.peek(1).isPunct("[") {
			p.failAt(t.pos, "expected a statement, found %s", t.describe())
		}
		p.failAt(t.pos, "undefined buffer %s", t.text)
	}
	p.want("[", " after the buffer name "+t.text+" of a store")
	idx := p.exprsUntil("]")
	p.want("]", " after the store indices")
	p.want("=", " after the stored element")
	s := &Store{Buffer: b, Indices: idx, Value: p.expr()}
	p.pos[s] = t.pos
	return s
}

func (t token) isPunct(s string) bool { return t.kind == tokPunct && t.text == s }

func (p *parser) block() Stmt {
	start := p.advance().pos
	p.want("(", " after ScheduleBlock")
	nt := p.ident(" (the block name)")
	if prev, dup := p.blocks[nt.text]; dup {
		p.failAt(nt.pos, "block %s already defined at %s", nt.text, prev)
	}
	p.blocks[nt.text] = nt.pos
	p.want(")", " after the block name")
	p.want("{", " before the block body")
	b := &ScheduleBlock{Name: nt.text}
	p.pos[b] = start
	p.block0 = b.Name

	// vi, vj = axis.bind(i, j) and axis.domain(vi = spatial(0, 64), ...)
	if t := p.tok(); t.kind == tokIdent && !isReserved(t.text) && (p.peek(1).isPunct(",") || p.peek(1).isPunct("=")) {
		b.Iters = p.blockIters()
	}
	if p.got("predicate") {
		p.want("(", " after predicate")
		b.Predicate = p.expr()
		p.want(")", " after the predicate")
	}
	p.enter()
	defer p.leave()
	p.pushVars("inside block " + b.Name + ": a block's body sees only its iteration variables, not the loops around the block")
	defer p.popVars()
	for _, it := range b.Iters {
		p.define(it.Var)
	}
	if p.is("reads") {
		b.Reads = p.regions()
	}
	if p.is("writes") {
		b.Writes = p.regions()
	}
	if p.is("attrs") {
		b.Annotations = p.attrs()
	}
	if p.got("init") {
		b.Init = p.braces(" after init")
	}
	stmts := p.stmtList()
	p.want("}", " or a statement")
	b.Body = seqOf(stmts)
	return b
}

func (p *parser) blockIters() []*IterVar {
	var names []token
	for {
		names = append(names, p.ident(" (an iteration variable)"))
		if !p.got(",") {
			break
		}
	}
	p.want("=", " after the iteration variables")
	p.want("axis", " (axis.bind)")
	p.want(".", " after axis")
	p.want("bind", " after axis.")
	p.want("(", " after axis.bind")
	bindings := p.exprsUntil(")")
	p.want(")", " after the bindings")
	if len(bindings) != len(names) {
		p.failAt(names[0].pos, "%d iteration variables but %d bindings", len(names), len(bindings))
	}

	if !p.is("axis") || !p.peek(1).isPunct(".") || p.peek(2).text != "domain" {
		p.expected("axis.domain(...) after axis.bind(...)")
	}
	p.advance()
	p.advance()
	p.advance()
	p.want("(", " after axis.domain")
	// Domains may use the function's sizes only.
	p.pushVars("in the domains of block " + p.block0 + ": a domain may use only the function's symbolic sizes")
	defer p.popVars()
	iters := make([]*IterVar, len(names))
	for i, name := range names {
		if i > 0 {
			p.want(",", " between domains")
		}
		t := p.ident(" (an iteration variable)")
		if t.text != name.text {
			p.failAt(t.pos, "domain %d is for %s, but iteration variable %d is %s", i+1, t.text, i+1, name.text)
		}
		p.want("=", " after "+t.text)
		kt := p.expect(tokIdent, " (spatial or reduce)")
		var kind IterKind
		switch kt.text {
		case "spatial":
			kind = Spatial
		case "reduce":
			kind = Reduce
		default:
			p.failAt(kt.pos, "expected spatial or reduce, found %s", kt.describe())
		}
		p.want("(", " after "+kt.text)
		min := p.expr()
		p.want(",", " after the domain minimum")
		ext := p.expr()
		p.want(")", " after the domain extent")
		v := &Var{Name: name.text, DType: ext.Type()}
		p.pos[v] = name.pos
		iters[i] = &IterVar{Var: v, Kind: kind, Dom: Range{min, ext}, Binding: bindings[i]}
	}
	p.want(")", " after the domains")
	return iters
}

// regions reads reads(...) or writes(...).
func (p *parser) regions() []Region {
	kw := p.advance().text
	p.want("(", " after "+kw)
	var rs []Region
	for !p.is(")") {
		if len(rs) > 0 {
			p.want(",", " between regions")
		}
		t := p.ident(" (a buffer name)")
		b := p.lookupBuffer(t.text)
		if b == nil {
			p.failAt(t.pos, "undefined buffer %s", t.text)
		}
		p.want("[", " after "+t.text)
		r := Region{Buffer: b}
		for !p.is("]") {
			if len(r.Ranges) > 0 {
				p.want(",", " between region dimensions")
			}
			min := p.expr()
			var ext Expr
			if p.got(":") {
				p.want("+", " after ':' (a range is min:+extent)")
				ext = p.unary()
			} else {
				ext = One(Int32)
				if min.Type() == Int64 {
					ext = One(Int64)
				}
			}
			r.Ranges = append(r.Ranges, Range{min, ext})
		}
		p.want("]", " after the region")
		rs = append(rs, r)
	}
	p.want(")", " after the regions")
	return rs
}

// attrs reads attrs(key = value, ...).
func (p *parser) attrs() Annotations {
	p.advance()
	p.want("(", " after attrs")
	a := Annotations{}
	for !p.is(")") {
		if len(a) > 0 {
			p.want(",", " between annotations")
		}
		kt := p.tok()
		var key string
		switch kt.kind {
		case tokIdent:
			key = kt.text
		case tokString:
			k, err := unquote(kt.text)
			if err != nil {
				p.failAt(kt.pos, "malformed string %s", kt.text)
			}
			key = k
		default:
			p.expected("an annotation key")
		}
		p.advance()
		if _, dup := a[key]; dup {
			p.failAt(kt.pos, "annotation %q given twice", key)
		}
		p.want("=", " after the annotation key")
		a[key] = p.attrValue()
	}
	p.want(")", " after the annotations")
	return a
}

func (p *parser) attrValue() any {
	t := p.tok()
	neg := false
	if t.isPunct("-") {
		neg = true
		p.advance()
		t = p.tok()
	}
	switch {
	case t.kind == tokInt:
		p.advance()
		v, err := parseIntLiteral(t.text, neg)
		if err != nil {
			p.failAt(t.pos, "annotation value %s: %v", t.text, err)
		}
		return v
	case t.kind == tokFloat:
		p.advance()
		v, err := strconv.ParseFloat(t.text, 64)
		if err != nil || math.IsInf(v, 0) {
			p.failAt(t.pos, "malformed annotation number %s (annotations hold plain int64 or float64 literals)", t.text)
		}
		if neg {
			v = -v
		}
		return v
	case t.kind == tokString && !neg:
		p.advance()
		s, err := unquote(t.text)
		if err != nil {
			p.failAt(t.pos, "malformed string %s", t.text)
		}
		return s
	case !neg && (p.is("true") || p.is("false")):
		p.advance()
		return t.text == "true"
	}
	p.expected("an annotation value (a number, a string, true or false)")
	return nil
}

// parseIntLiteral parses the decimal digits s as an int64, negated if neg.
func parseIntLiteral(s string, neg bool) (int64, error) {
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.New("not a decimal int64")
	}
	if neg {
		if u > 1<<63 {
			return 0, errors.New("out of the int64 range")
		}
		return int64(-u), nil
	}
	if u > math.MaxInt64 {
		return 0, errors.New("out of the int64 range")
	}
	return int64(u), nil
}

// Expressions.

func (p *parser) exprsUntil(close string) []Expr {
	var es []Expr
	for !p.is(close) {
		if len(es) > 0 {
			p.want(",", fmt.Sprintf(" or %q", close))
		}
		es = append(es, p.expr())
	}
	return es
}

func (p *parser) expr() Expr { return p.binary(1) }

// binaryOps maps each infix operator to its operator and precedence.
var binaryOps = func() map[string]BinaryOp {
	m := map[string]BinaryOp{}
	for op := OpAdd; op <= OpOr; op++ {
		if binaryInfo[op].prec > 0 {
			m[binaryInfo[op].text] = op
		}
	}
	return m
}()

// binary reads a chain of operators of precedence prec or higher, by
// precedence climbing. Comparisons do not chain.
func (p *parser) binary(prec int) Expr {
	if prec > 5 {
		return p.unary()
	}
	start := p.tok().pos
	x := p.binary(prec + 1)
	depth := p.depth
	defer func() { p.depth = depth }()
	for {
		t := p.tok()
		op, ok := binaryOps[t.text]
		if t.kind != tokPunct || !ok || binaryInfo[op].prec != prec {
			return x
		}
		p.advance()
		p.enter()
		y := p.binary(prec + 1)
		x = p.grow(&Binary{Op: op, A: x, B: y}, t.pos, x, y)
		p.pos[x] = start
		if op.IsCompare() {
			if n := p.tok(); n.kind == tokPunct {
				if op2, ok := binaryOps[n.text]; ok && op2.IsCompare() {
					p.failAt(n.pos, "comparisons do not chain: add parentheses around %s", strings.TrimSpace(Print(x)))
				}
			}
		}
	}
}

func (p *parser) unary() Expr {
	t := p.tok()
	p.enter()
	defer p.leave()
	switch {
	case t.isPunct("!"):
		p.advance()
		x := p.unary()
		e := p.grow(&Not{X: x}, t.pos, x)
		p.pos[e] = t.pos
		return e
	case t.isPunct("-"):
		p.advance()
		if n := p.tok(); n.kind == tokInt || n.kind == tokFloat {
			return p.number(true, t.pos)
		}
		if n := p.tok(); n.kind == tokIdent && isSpecialFloat(n.text) {
			return p.special(true, t.pos)
		}
		x := p.unary()
		e := p.grow(&Binary{Op: OpSub, A: Zero(x.Type()), B: x}, t.pos, x)
		p.pos[e] = t.pos
		return e
	}
	return p.primary()
}

func (p *parser) primary() Expr {
	t := p.tok()
	switch t.kind {
	case tokInt, tokFloat:
		return p.number(false, t.pos)
	case tokPunct:
		if t.text == "(" {
			p.advance()
			e := p.expr()
			p.want(")", " to close the parenthesis")
			return e
		}
		p.expected("an expression")
	case tokIdent:
		return p.identExpr()
	}
	p.expected("an expression")
	return nil
}

func isSpecialFloat(s string) bool {
	_, _, ok := specialFloat(s)
	return ok
}

// specialFloat decodes inf, nan and their typed spellings (inff, nanbf, ...).
func specialFloat(s string) (float64, DType, bool) {
	for _, base := range []struct {
		word string
		v    float64
	}{{"inf", math.Inf(1)}, {"nan", math.NaN()}} {
		if !strings.HasPrefix(s, base.word) {
			continue
		}
		if t, ok := floatSuffixes[s[len(base.word):]]; ok {
			return base.v, t, true
		}
	}
	return 0, 0, false
}

// floatSuffixes maps the suffix of a floating-point literal to its type.
var floatSuffixes = func() map[string]DType {
	m := map[string]DType{}
	for t, suffix := range constSuffix {
		if t.IsFloat() {
			m[suffix] = t
		}
	}
	return m
}()

func (p *parser) special(neg bool, pos Pos) Expr {
	t := p.advance()
	v, dt, _ := specialFloat(t.text)
	if neg {
		v = -v
	}
	c := FloatConst(dt, v)
	p.pos[c] = pos
	return c
}

// number reads a numeric literal, negated if neg.
func (p *parser) number(neg bool, pos Pos) Expr {
	t := p.advance()
	text := t.text
	digits, suffix := splitSuffix(text)
	var c *Const
	if t.kind == tokInt && (suffix == "" || suffix == "L") {
		dt := Int32
		if suffix == "L" {
			dt = Int64
		}
		v, err := parseIntLiteral(digits, neg)
		lo, hi := intRange(dt)
		if err != nil || v < lo || v > hi {
			hint := ""
			if dt == Int32 {
				hint = fmt.Sprintf("; write %sL for an int64", text)
			}
			p.failAt(t.pos, "integer constant %s%s out of the %s range%s", sign(neg), text, dt, hint)
		}
		c = IntConst(dt, v)
	} else {
		dt, ok := floatSuffixes[suffix]
		if !ok {
			p.failAt(t.pos, "malformed number %s (type suffixes are L, f, h and bf)", text)
		}
		bits := 64
		if dt == Float32 {
			bits = 32
		}
		v, err := strconv.ParseFloat(digits, bits)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			p.failAt(t.pos, "malformed number %s", text)
		}
		if Overflows(dt, v) {
			// Infinity is written inf (with its suffix), never by
			// accident.
			p.failAt(t.pos, "float constant %s%s out of the %s range", sign(neg), text, dt)
		}
		if neg {
			v = -v
		}
		c = FloatConst(dt, v)
	}
	p.pos[c] = pos
	return c
}

// Overflows reports whether v, finite or not, rounds to infinity in the
// floating-point type dt (float64: whether v is infinite).
func Overflows(dt DType, v float64) bool {
	switch dt {
	case Float32:
		return math.IsInf(float64(float32(v)), 0)
	case Float16:
		return Float16Bits(v)&0x7fff == 0x7c00
	case BFloat16:
		return BFloat16Bits(v)&0x7fff == 0x7f80
	}
	return math.IsInf(v, 0)
}

func sign(neg bool) string {
	if neg {
		return "-"
	}
	return ""
}

// splitSuffix splits a number token into its numeric part and its type
// suffix: the letters after the digits, excluding an exponent marker.
func splitSuffix(s string) (num, suffix string) {
	for _, suf := range []string{"bf", "L", "f", "h"} {
		if strings.HasSuffix(s, suf) {
			num := s[:len(s)-len(suf)]
			if num != "" && (isDigit(num[len(num)-1]) || num[len(num)-1] == '.') {
				return num, suf
			}
		}
	}
	i := len(s)
	for i > 0 && !isDigit(s[i-1]) && s[i-1] != '.' {
		i--
	}
	return s[:i], s[i:]
}

func (p *parser) identExpr() Expr {
	t := p.advance()
	name := t.text
	next := p.tok()
	var e Expr
	switch {
	case name == "true" || name == "false":
		e = BoolConst(name == "true")
	case isSpecialFloat(name):
		p.i--
		return p.special(false, t.pos)
	case next.isPunct("(") && (name == "select" || name == "floordiv" || name == "floormod" || name == "min" || name == "max"):
		args := p.callArgs(name)
		want := 2
		if name == "select" {
			want = 3
		}
		if len(args) != want {
			p.failAt(t.pos, "%s takes %d arguments, not %d", name, want, len(args))
		}
		switch name {
		case "select":
			e = &Select{Cond: args[0], T: args[1], F: args[2]}
		case "floordiv":
			e = FloorDiv(args[0], args[1])
		case "floormod":
			e = FloorMod(args[0], args[1])
		case "min":
			e = Min(args[0], args[1])
		case "max":
			e = Max(args[0], args[1])
		}
	case next.isPunct("("):
		if dt, ok := ParseDType(name); ok {
			args := p.callArgs(name)
			if len(args) != 1 {
				p.failAt(t.pos, "a cast to %s takes 1 argument, not %d", name, len(args))
			}
			e = &Cast{To: dt, X: args[0]}
			break
		}
		f, ok := LookupIntrinsic(name)
		if !ok {
			p.failAt(t.pos, "unknown function %s", name)
		}
		args := p.callArgs(name)
		if len(args) != f.Arity() {
			p.failAt(t.pos, "%s takes %s, not %d", name, count(f.Arity(), "argument"), len(args))
		}
		e = &Call{Func: f, Args: args}
	case next.isPunct("["):
		b := p.lookupBuffer(name)
		if b == nil {
			p.failAt(t.pos, "undefined buffer %s", name)
		}
		p.advance()
		idx := p.exprsUntil("]")
		p.want("]", " after the indices of "+name)
		e = &Load{Buffer: b, Indices: idx}
	default:
		if isReserved(name) {
			p.failAt(t.pos, "expected an expression, found reserved word %q", name)
		}
		v := p.lookupVar(name)
		if v == nil {
			if why := p.hiddenBy(name); why != "" {
				p.failAt(t.pos, "variable %s is not visible %s", name, why)
			}
			p.failAt(t.pos, "undefined variable %s", name)
		}
		// Each use is its own node, so that errors can point at it.
		e = &Var{Name: v.Name, DType: v.DType}
	}
	var operands []Expr
	switch e := e.(type) {
	case *Binary:
		operands = []Expr{e.A, e.B}
	case *Select:
		operands = []Expr{e.Cond, e.T, e.F}
	case *Cast:
		operands = []Expr{e.X}
	case *Call:
		operands = e.Args
	case *Load:
		operands = e.Indices
	}
	p.grow(e, t.pos, operands...)
	p.pos[e] = t.pos
	return e
}

func (p *parser) callArgs(name string) []Expr {
	p.want("(", " after "+name)
	args := p.exprsUntil(")")
	p.want(")", " after the arguments of "+name)
	return args
}
