package fusion

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Dim is one dimension of a shape: a polynomial with integer coefficients
// over named symbols (the dynamic sizes), such as 768, S1, S1*S2 or
// S1 + 4. Dims are values: the zero Dim is 0, and every operation returns
// a new, canonical Dim (terms sorted, no zero coefficients), so two Dims
// are equal exactly when their polynomials are.
type Dim struct {
	terms []term
}

// term is coef × the product of syms (sorted, repeated for powers).
type term struct {
	syms []string
	coef int64
}

func (t term) key() string { return strings.Join(t.syms, "*") }

// Const returns the constant dimension c.
func Const(c int64) Dim {
	if c == 0 {
		return Dim{}
	}
	return Dim{terms: []term{{coef: c}}}
}

// Sym returns the dimension given by the symbol name.
func Sym(name string) Dim { return Dim{terms: []term{{syms: []string{name}, coef: 1}}} }

// IsConst reports whether d is a constant, and which.
func (d Dim) IsConst() (int64, bool) {
	switch {
	case len(d.terms) == 0:
		return 0, true
	case len(d.terms) == 1 && len(d.terms[0].syms) == 0:
		return d.terms[0].coef, true
	}
	return 0, false
}

// Monomial is one term of a Dim: Coef times the product of Syms (sorted,
// a symbol repeated for its powers; none for the constant term).
type Monomial struct {
	Coef int64
	Syms []string
}

// Monomials returns d's terms in its canonical order (a copy): code
// generators print a Dim from them.
func (d Dim) Monomials() []Monomial {
	out := make([]Monomial, len(d.terms))
	for i, t := range d.terms {
		out[i] = Monomial{Coef: t.coef, Syms: slices.Clone(t.syms)}
	}
	return out
}

// Equal reports whether d and e are the same polynomial.
func (d Dim) Equal(e Dim) bool {
	if len(d.terms) != len(e.terms) {
		return false
	}
	for i := range d.terms {
		if d.terms[i].coef != e.terms[i].coef || !slices.Equal(d.terms[i].syms, e.terms[i].syms) {
			return false
		}
	}
	return true
}

// Symbols returns the symbols d mentions, sorted.
func (d Dim) Symbols() []string {
	var out []string
	for _, t := range d.terms {
		out = append(out, t.syms...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// errDimOverflow is returned when a coefficient leaves int64.
var errDimOverflow = fmt.Errorf("fusion: a dimension overflows int64")

// maxTerms bounds the terms of a dimension, and maxDegree the symbols of
// a term, so that products of crafted shapes stay small.
const maxTerms, maxDegree = 64, 16

// errDimTooComplex is returned for a dimension beyond those bounds.
var errDimTooComplex = fmt.Errorf("fusion: a dimension has more than %d terms or a term more than %d symbols", maxTerms, maxDegree)

// normalize sorts terms and merges equal monomials.
func normalize(ts []term) (Dim, error) {
	if len(ts) > maxTerms*maxTerms {
		return Dim{}, errDimTooComplex
	}
	slices.SortFunc(ts, func(a, b term) int {
		if c := len(a.syms) - len(b.syms); c != 0 {
			return c
		}
		return strings.Compare(a.key(), b.key())
	})
	var out []term
	for _, t := range ts {
		if n := len(out); n > 0 && slices.Equal(out[n-1].syms, t.syms) {
			v, ok := add64(out[n-1].coef, t.coef)
			if !ok {
				return Dim{}, errDimOverflow
			}
			out[n-1].coef = v
			if v == 0 {
				out = out[:n-1]
			}
			continue
		}
		if t.coef != 0 {
			out = append(out, t)
		}
	}
	if len(out) > maxTerms {
		return Dim{}, errDimTooComplex
	}
	for _, t := range out {
		if len(t.syms) > maxDegree {
			return Dim{}, errDimTooComplex
		}
	}
	return Dim{terms: out}, nil
}

// Add returns d + e.
func (d Dim) Add(e Dim) (Dim, error) {
	return normalize(append(slices.Clone(d.terms), e.terms...))
}

// Sub returns d - e.
func (d Dim) Sub(e Dim) (Dim, error) {
	n, err := e.Scale(-1)
	if err != nil {
		return Dim{}, err
	}
	return d.Add(n)
}

// Scale returns c × d.
func (d Dim) Scale(c int64) (Dim, error) {
	return d.Mul(Const(c))
}

// Mul returns d × e.
func (d Dim) Mul(e Dim) (Dim, error) {
	var ts []term
	for _, a := range d.terms {
		for _, b := range e.terms {
			c, ok := mul64(a.coef, b.coef)
			if !ok {
				return Dim{}, errDimOverflow
			}
			syms := append(slices.Clone(a.syms), b.syms...)
			slices.Sort(syms)
			ts = append(ts, term{syms: syms, coef: c})
		}
	}
	return normalize(ts)
}

func add64(a, b int64) (int64, bool) {
	c := a + b
	return c, (c > a) == (b > 0)
}

func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if c/b != a || (a == -1 && b == -1<<63) || (b == -1 && a == -1<<63) {
		return 0, false
	}
	return c, true
}

// DivExact returns d / m when m is a single non-zero monomial that divides
// every term of d exactly.
func (d Dim) DivExact(m Dim) (Dim, bool) {
	if len(m.terms) != 1 || m.terms[0].coef == 0 {
		return Dim{}, false
	}
	mt := m.terms[0]
	var ts []term
	for _, t := range d.terms {
		if t.coef%mt.coef != 0 {
			return Dim{}, false
		}
		rest := slices.Clone(t.syms)
		for _, s := range mt.syms {
			i := slices.Index(rest, s)
			if i < 0 {
				return Dim{}, false
			}
			rest = slices.Delete(rest, i, i+1)
		}
		ts = append(ts, term{syms: rest, coef: t.coef / mt.coef})
	}
	r, err := normalize(ts)
	return r, err == nil
}

// Subst returns d with the symbol name replaced by v.
func (d Dim) Subst(name string, v Dim) (Dim, error) {
	out := Dim{}
	for _, t := range d.terms {
		p := Const(t.coef)
		for _, s := range t.syms {
			f := Sym(s)
			if s == name {
				f = v
			}
			var err error
			if p, err = p.Mul(f); err != nil {
				return Dim{}, err
			}
		}
		var err error
		if out, err = out.Add(p); err != nil {
			return Dim{}, err
		}
	}
	return out, nil
}

// Eval returns the value of d for the given symbol values.
func (d Dim) Eval(sizes map[string]int64) (int64, error) {
	var sum int64
	for _, t := range d.terms {
		p := t.coef
		for _, s := range t.syms {
			v, ok := sizes[s]
			if !ok {
				return 0, fmt.Errorf("fusion: no value for the size %s", s)
			}
			var okm bool
			if p, okm = mul64(p, v); !okm {
				return 0, errDimOverflow
			}
		}
		var oka bool
		if sum, oka = add64(sum, p); !oka {
			return 0, errDimOverflow
		}
	}
	return sum, nil
}

// Expr returns d as an int32 ast expression over the given size variables.
func (d Dim) Expr(sizes map[string]*ast.Var) ast.Expr {
	var e ast.Expr
	for _, t := range d.terms {
		var p ast.Expr
		if t.coef != 1 || len(t.syms) == 0 {
			p = ast.I32(int32(t.coef))
		}
		for _, s := range t.syms {
			if p == nil {
				p = sizes[s]
			} else {
				p = ast.Mul(p, sizes[s])
			}
		}
		if e == nil {
			e = p
		} else {
			e = ast.Add(e, p)
		}
	}
	if e == nil {
		return ast.I32(0)
	}
	return e
}

// String prints d as S1*S2 + 4.
func (d Dim) String() string {
	if len(d.terms) == 0 {
		return "0"
	}
	var b strings.Builder
	for i, t := range d.terms {
		c := t.coef
		switch {
		case i > 0 && c < 0:
			b.WriteString(" - ")
			c = -c
		case i > 0:
			b.WriteString(" + ")
		}
		parts := slices.Clone(t.syms)
		if c != 1 || len(parts) == 0 {
			parts = append([]string{strconv.FormatInt(c, 10)}, parts...)
		}
		b.WriteString(strings.Join(parts, "*"))
	}
	return b.String()
}

// Shape is a tensor's shape, outermost dimension first. A scalar has the
// empty shape.
type Shape []Dim

// String prints the shape as [S1, 768].
func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Equal reports whether the shapes have the same dimensions.
func (s Shape) Equal(t Shape) bool {
	return slices.EqualFunc(s, t, Dim.Equal)
}

// Elems returns the number of elements as a Dim.
func (s Shape) Elems() (Dim, error) {
	n := Const(1)
	for _, d := range s {
		var err error
		if n, err = n.Mul(d); err != nil {
			return Dim{}, err
		}
	}
	return n, nil
}
