package poly

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by the errors of ParseSet and ParseMap.
var ErrSyntax = errors.New("poly: syntax error")

// ParseSet reads a set in the notation of isl:
//
//	[N, M] -> { S[i, j] : 0 <= i < N and 0 <= j < M and (i < j or i > 2j) }
//
// A tuple item may be an affine expression ({ [i, i + 1] }); constraints are
// chained comparisons (<, <=, =, >=, >) of affine expressions joined by and,
// or and parentheses; "exists (e, f : ...)" quantifies, and floor(a / c) and
// a mod c introduce the divisions of quasi-affine expressions. Disjuncts may
// also be separated by ";". A coefficient may be written before a name (2i)
// or with * (2*i).
func ParseSet(src string) (Set, error) {
	p, err := parseText(src, false)
	if err != nil {
		return Set{}, err
	}
	return Set{Params: p.params, Name: p.outName, Dims: p.outDims, parts: p.parts}, nil
}

// ParseMap reads a map in the notation of isl: { S[i] -> A[i + 1] : i >= 0 }.
func ParseMap(src string) (Map, error) {
	p, err := parseText(src, true)
	if err != nil {
		return Map{}, err
	}
	return Map{Params: p.params, InName: p.inName, In: p.inDims, OutName: p.outName, Out: p.outDims, parts: p.parts}, nil
}

// MustParseSet is ParseSet for text known to be valid, such as a constant
// in a test; it panics on an error.
func MustParseSet(src string) Set {
	s, err := ParseSet(src)
	if err != nil {
		panic(err)
	}
	return s
}

// MustParseMap is ParseMap for text known to be valid; it panics on an
// error.
func MustParseMap(src string) Map {
	m, err := ParseMap(src)
	if err != nil {
		panic(err)
	}
	return m
}

// lin is an affine expression over named variables while a part is read.
type lin struct {
	c     Int
	terms map[string]Int
}

func constLin(v Int) lin { return lin{c: v} }

func varLin(name string) lin { return lin{terms: map[string]Int{name: IntOf(1)}} }

func (a lin) isConst() bool {
	for _, v := range a.terms {
		if !v.IsZero() {
			return false
		}
	}
	return true
}

// plus returns a + s*b.
func (a lin) plus(b lin, s Int) lin {
	out := lin{c: a.c.Add(b.c.Mul(s)), terms: map[string]Int{}}
	for k, v := range a.terms {
		out.terms[k] = v
	}
	for k, v := range b.terms {
		out.terms[k] = out.terms[k].Add(v.Mul(s))
	}
	return out
}

func (a lin) scaled(s Int) lin { return lin{}.plus(a, s) }

// conj is a conjunction of constraints: equalities and inequalities (>= 0).
type conj struct{ eqs, ineqs []lin }

type textParser struct {
	toks  []string
	i     int
	isMap bool

	params          []string
	inName, outName string
	inDims, outDims []string
	seenSpace       bool
	parts           []*basic

	// The part being read.
	names  map[string]string // a name in the text -> its variable ("$e3" for locals)
	nLocal int
	always []conj // constraints every disjunct has: tuple expressions, divisions
}

type textBail struct{ err error }

func parseText(src string, isMap bool) (p *textParser, err error) {
	p = &textParser{toks: tokenize(src), isMap: isMap}
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(textBail)
			if !ok {
				panic(r)
			}
			p, err = nil, b.err
		}
	}()
	p.top()
	return p, nil
}

func tokenize(src string) []string {
	var toks []string
	isLetter := func(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isDigit(c):
			j := i
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		case isLetter(c):
			j := i
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j]) || src[j] == '\'') {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		case i+1 < len(src) && slices.Contains([]string{"->", "<=", ">=", "=="}, src[i:i+2]):
			toks = append(toks, src[i:i+2])
			i += 2
		default:
			toks = append(toks, src[i:i+1])
			i++
		}
	}
	return toks
}

func (p *textParser) fail(format string, args ...any) {
	at := "end of input"
	if p.i < len(p.toks) {
		at = strconv.Quote(p.toks[p.i])
	}
	panic(textBail{fmt.Errorf("%w: %s at token %d (%s)", ErrSyntax, fmt.Sprintf(format, args...), p.i+1, at)})
}

func (p *textParser) peek() string { return p.peekAt(0) }

func (p *textParser) peekAt(n int) string {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return ""
}

func (p *textParser) got(t string) bool {
	if p.peek() == t {
		p.i++
		return true
	}
	return false
}

func (p *textParser) want(t string) {
	if !p.got(t) {
		p.fail("expected %q", t)
	}
}

var keywords = []string{"and", "or", "exists", "floor", "mod", "true", "false"}

func isName(t string) bool {
	return t != "" && (t[0] == '_' || t[0] >= 'a' && t[0] <= 'z' || t[0] >= 'A' && t[0] <= 'Z') && !slices.Contains(keywords, t)
}

func (p *textParser) top() {
	if p.got("[") {
		for !p.got("]") {
			if len(p.params) > 0 {
				p.want(",")
			}
			t := p.peek()
			if !isName(t) || slices.Contains(p.params, t) {
				p.fail("expected a new parameter name")
			}
			p.i++
			p.params = append(p.params, t)
		}
		p.want("->")
	}
	p.want("{")
	for !p.got("}") {
		p.part()
		if !p.got(";") && p.peek() != "}" {
			p.fail("expected ; or }")
		}
	}
	if p.i != len(p.toks) {
		p.fail("unexpected text after }")
	}
}

// part reads one "tuple [-> tuple] [: formula]".
func (p *textParser) part() {
	p.names = map[string]string{}
	p.nLocal = 0
	p.always = nil
	for _, name := range p.params {
		p.names[name] = name
	}
	var inName string
	var in []string
	// The first tuple is a map's input or a set's only (output) tuple: read
	// it as $t and rename once that is known.
	name, dims := p.tuple("$t")
	first := "$o"
	if p.got("->") {
		if !p.isMap {
			p.fail("a set has one tuple")
		}
		first = "$i"
		inName, in = name, dims
		name, dims = p.tuple("$o")
	} else if p.isMap {
		p.fail("a map needs an input and an output tuple")
	}
	p.renameTuple("$t", first)
	if first == "$i" {
		in = renamed(in, "$t", "$i")
	} else {
		dims = renamed(dims, "$t", "$o")
	}
	if !p.seenSpace {
		p.inName, p.outName, p.seenSpace = inName, name, true
		p.inDims, p.outDims = p.displayNames(in), p.displayNames(dims)
	} else if len(in) != len(p.inDims) || len(dims) != len(p.outDims) {
		p.fail("all parts must have the same numbers of dimensions")
	}
	disjuncts := []conj{{}}
	if p.got(":") {
		disjuncts = p.formula()
	}
	for _, d := range disjuncts {
		b := p.assemble(d, len(in), len(dims))
		if c := b.simplify(); !c.trivial() {
			p.parts = append(p.parts, c)
		}
	}
}

// renameTuple renames the variables with prefix from to prefix to, in the
// names and in the constraints read so far.
func (p *textParser) renameTuple(from, to string) {
	for k, v := range p.names {
		if strings.HasPrefix(v, from) {
			p.names[k] = to + v[len(from):]
		}
	}
	for _, c := range p.always {
		for _, e := range append(slices.Clone(c.eqs), c.ineqs...) {
			for k, v := range e.terms {
				if strings.HasPrefix(k, from) {
					delete(e.terms, k)
					e.terms[to+k[len(from):]] = v
				}
			}
		}
	}
}

func renamed(vars []string, from, to string) []string {
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = to + v[len(from):]
	}
	return out
}

// displayNames returns the user's names of tuple variables ("$o2" for an
// expression item becomes "o2").
func (p *textParser) displayNames(vars []string) []string {
	out := make([]string, len(vars))
	for i, v := range vars {
		out[i] = "o" + strconv.Itoa(i)
		for name, w := range p.names {
			if w == v {
				out[i] = name
			}
		}
	}
	return out
}

// tuple reads "[Name] [ d, ... ]"; dimension i is the variable prefix+i.
func (p *textParser) tuple(prefix string) (name string, vars []string) {
	if isName(p.peek()) && p.peekAt(1) == "[" {
		name = p.peek()
		p.i++
	}
	p.want("[")
	for !p.got("]") {
		if len(vars) > 0 {
			p.want(",")
		}
		v := prefix + strconv.Itoa(len(vars))
		vars = append(vars, v)
		t := p.peek()
		if isName(t) && (p.peekAt(1) == "," || p.peekAt(1) == "]") {
			if _, known := p.names[t]; !known {
				p.i++
				p.names[t] = v
				continue
			}
		}
		// An expression: the dimension equals it.
		e := p.aff()
		p.always = append(p.always, conj{eqs: []lin{varLin(v).plus(e, IntOf(-1))}})
	}
	return name, vars
}

// assemble lays the constraints of one disjunct out in columns.
func (p *textParser) assemble(d conj, nIn, nOut int) *basic {
	in, out := make([]string, nIn), make([]string, nOut)
	for i := range in {
		in[i] = "$i" + strconv.Itoa(i)
	}
	for i := range out {
		out[i] = "$o" + strconv.Itoa(i)
	}
	var all conj
	for _, c := range append(slices.Clone(p.always), d) {
		all.eqs = append(all.eqs, c.eqs...)
		all.ineqs = append(all.ineqs, c.ineqs...)
	}
	b, ok := assemble(p.params, in, out, p.nLocal, all)
	if !ok {
		p.fail("internal: a variable has no column")
	}
	return b
}

// formula reads a disjunction of conjunctions and returns its disjuncts.
func (p *textParser) formula() []conj {
	ds := p.conjunction()
	for p.got("or") {
		ds = append(ds, p.conjunction()...)
	}
	return ds
}

func (p *textParser) conjunction() []conj {
	ds := p.atom()
	for p.got("and") {
		rhs := p.atom()
		var out []conj
		for _, a := range ds {
			for _, b := range rhs {
				out = append(out, conj{eqs: append(slices.Clone(a.eqs), b.eqs...), ineqs: append(slices.Clone(a.ineqs), b.ineqs...)})
			}
		}
		ds = out
	}
	return ds
}

func (p *textParser) atom() []conj {
	switch {
	case p.got("true"):
		return []conj{{}}
	case p.got("false"):
		return []conj{{eqs: []lin{constLin(IntOf(1))}}}
	case p.got("exists"):
		p.want("(")
		var bound []string
		for {
			t := p.peek()
			if !isName(t) {
				p.fail("expected a variable name after exists")
			}
			if _, known := p.names[t]; known {
				p.fail("exists variable %s hides another variable", t)
			}
			p.i++
			p.names[t] = p.newLocal()
			bound = append(bound, t)
			if !p.got(",") {
				break
			}
		}
		p.want(":")
		ds := p.formula()
		p.want(")")
		for _, t := range bound { // out of scope after the parenthesis
			delete(p.names, t)
		}
		return ds
	case p.peek() == "(":
		// Either a parenthesized formula or a comparison whose first
		// expression starts with "(".
		save, saveAlways, saveLocal := p.i, len(p.always), p.nLocal
		if ds, ok := p.tryComparison(); ok {
			return ds
		}
		p.i, p.always, p.nLocal = save, p.always[:saveAlways], saveLocal
		p.want("(")
		ds := p.formula()
		p.want(")")
		return ds
	}
	ds, ok := p.tryComparison()
	if !ok {
		p.comparison() // fails with the precise error
	}
	return ds
}

// tryComparison reads a comparison chain, or reports false if the text is
// not one.
func (p *textParser) tryComparison() (ds []conj, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, isBail := r.(textBail); !isBail {
				panic(r)
			}
			ds, ok = nil, false
		}
	}()
	return p.comparison(), true
}

var comparisons = []string{"<", "<=", "=", "==", ">=", ">"}

// comparison reads a op b op c ... as one conjunction. Each operand may be
// a list (0 <= i, j < N compares each of i and j).
func (p *textParser) comparison() []conj {
	left := p.affList()
	var c conj
	n := 0
	for slices.Contains(comparisons, p.peek()) {
		op := p.peek()
		p.i++
		right := p.affList()
		one := constLin(IntOf(1))
		for _, l := range left {
			for _, r := range right {
				diff := r.plus(l, IntOf(-1)) // right - left
				switch op {
				case "<":
					c.ineqs = append(c.ineqs, diff.plus(one, IntOf(-1)))
				case "<=":
					c.ineqs = append(c.ineqs, diff)
				case "=", "==":
					c.eqs = append(c.eqs, diff)
				case ">=":
					c.ineqs = append(c.ineqs, diff.scaled(IntOf(-1)))
				case ">":
					c.ineqs = append(c.ineqs, diff.scaled(IntOf(-1)).plus(one, IntOf(-1)))
				}
			}
		}
		left = right
		n++
	}
	if n == 0 {
		p.fail("expected a comparison")
	}
	return []conj{c}
}

func (p *textParser) newLocal() string {
	p.nLocal++
	return "$e" + strconv.Itoa(p.nLocal-1)
}

// affList reads one or more affine expressions separated by commas.
func (p *textParser) affList() []lin {
	list := []lin{p.aff()}
	for p.got(",") {
		list = append(list, p.aff())
	}
	return list
}

// aff reads an affine expression.
func (p *textParser) aff() lin {
	acc := lin{}
	sign := IntOf(1)
	if p.got("-") {
		sign = IntOf(-1)
	}
	for {
		acc = acc.plus(p.term(), sign)
		switch {
		case p.got("+"):
			sign = IntOf(1)
		case p.got("-"):
			sign = IntOf(-1)
		default:
			return acc
		}
	}
}

// term reads a product of factors, at most one of them not constant, with
// an optional "mod c".
func (p *textParser) term() lin {
	r := p.factor()
	for {
		switch t := p.peek(); {
		case t == "*":
			p.i++
			r = p.mul(r, p.factor())
		case r.isConst() && (isName(t) || t == "(" || t == "floor"):
			r = p.mul(r, p.factor()) // juxtaposition: 2i, 3(i + j)
		case t == "mod" || t == "%":
			p.i++
			r = p.floorDiv(r, p.constant(), true)
		default:
			return r
		}
	}
}

func (p *textParser) mul(a, b lin) lin {
	switch {
	case a.isConst():
		return b.scaled(a.c)
	case b.isConst():
		return a.scaled(b.c)
	}
	p.fail("a product of two non-constant expressions is not affine")
	return lin{}
}

// constant reads an integer of any size.
func (p *textParser) constant() Int {
	t := p.peek()
	if t == "" || t[0] < '0' || t[0] > '9' {
		p.fail("expected an integer constant")
	}
	v, ok := new(big.Int).SetString(t, 10)
	if !ok {
		p.fail("malformed integer %s", t)
	}
	p.i++
	return intFromBig(v)
}

// factor reads a number, a name, (aff), floor(aff / c) or -factor.
func (p *textParser) factor() lin {
	t := p.peek()
	switch {
	case t == "-":
		p.i++
		return p.factor().scaled(IntOf(-1))
	case t == "(":
		p.i++
		r := p.aff()
		p.want(")")
		return r
	case t == "floor":
		p.i++
		p.want("(")
		num := p.aff()
		p.want("/")
		d := p.constant()
		p.want(")")
		return p.floorDiv(num, d, false)
	case t != "" && t[0] >= '0' && t[0] <= '9':
		return constLin(p.constant())
	case isName(t):
		p.i++
		v, ok := p.names[t]
		if !ok {
			p.fail("unknown name %s", t)
		}
		return varLin(v)
	}
	p.fail("expected an expression")
	return lin{}
}

// floorDiv introduces a local q = floor(num / d), with d q <= num <=
// d q + d - 1 in every disjunct, and returns q, or num - d q for mod.
func (p *textParser) floorDiv(num lin, d Int, mod bool) lin {
	if d.Sign() <= 0 {
		p.fail("division by a non-positive constant")
	}
	q := varLin(p.newLocal())
	rem := num.plus(q, d.Neg())                             // num - d q >= 0
	slack := constLin(d.Sub(IntOf(1))).plus(rem, IntOf(-1)) // d - 1 - (num - d q) >= 0
	p.always = append(p.always, conj{ineqs: []lin{rem, slack}})
	if mod {
		return rem
	}
	return q
}
