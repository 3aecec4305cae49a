package poly

import (
	"slices"
	"strings"
)

// String returns s in the notation ParseSet reads.
func (s Set) String() string {
	return format(s.Params, "", nil, s.Name, s.Dims, s.parts, false)
}

// String returns m in the notation ParseMap reads.
func (m Map) String() string {
	return format(m.Params, m.InName, m.In, m.OutName, m.Out, m.parts, true)
}

// format prints a set or map. Names that would clash (an output dimension
// named like an input one) get primes.
func format(params []string, inName string, in []string, outName string, out []string, parts []*basic, isMap bool) string {
	var b strings.Builder
	if len(params) > 0 {
		b.WriteString("[" + strings.Join(params, ", ") + "] -> ")
	}
	used := map[string]bool{}
	for _, p := range params {
		used[p] = true
	}
	unique := func(names []string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			for used[n] {
				n += "'"
			}
			used[n] = true
			out[i] = n
		}
		return out
	}
	in, out = unique(in), unique(out)
	b.WriteString("{ ")
	if len(parts) == 0 { // empty: keep the space's shape
		if isMap {
			b.WriteString(inName + "[" + strings.Join(in, ", ") + "] -> ")
		}
		b.WriteString(outName + "[" + strings.Join(out, ", ") + "] : false }")
		return b.String()
	}
	for i, part := range parts {
		if i > 0 {
			b.WriteString("; ")
		}
		if isMap {
			b.WriteString(inName + "[" + strings.Join(in, ", ") + "] -> ")
		}
		b.WriteString(outName + "[" + strings.Join(out, ", ") + "]")
		names := slices.Concat(params, in, out)
		var locals []string
		for l := 0; l < part.nLocal; l++ {
			n := "e" + string(rune('0'+l%10))
			if l >= 10 {
				n = "e" + itoa(l)
			}
			for used[n] || slices.Contains(names, n) {
				n += "'"
			}
			locals = append(locals, n)
		}
		names = append(names, locals...)
		var cs []string
		for _, r := range part.eqs {
			cs = append(cs, formatConstraint(r, names, true))
		}
		for _, r := range part.ineqs {
			cs = append(cs, formatConstraint(r, names, false))
		}
		if len(cs) == 0 {
			continue
		}
		b.WriteString(" : ")
		if len(locals) > 0 {
			b.WriteString("exists (" + strings.Join(locals, ", ") + " : ")
		}
		b.WriteString(strings.Join(cs, " and "))
		if len(locals) > 0 {
			b.WriteString(")")
		}
	}
	if len(parts) > 0 {
		b.WriteString(" ")
	}
	b.WriteString("}")
	return b.String()
}

func itoa(v int) string { return IntOf(int64(v)).String() }

// formatConstraint prints r = 0 or r >= 0 as "pivot op rest", with the
// pivot the last variable that has a coefficient (an inner dimension reads
// best on the left: "j <= i + 1").
func formatConstraint(r row, names []string, eq bool) string {
	pivot := -1
	for v := len(names) - 1; v >= 0; v-- {
		if !r.coef(v).IsZero() {
			pivot = v
			break
		}
	}
	if pivot < 0 {
		if eq {
			return r[0].String() + " = 0"
		}
		return r[0].String() + " >= 0"
	}
	a := r.coef(pivot)
	op := ">="
	if a.Sign() < 0 {
		r = r.scaled(IntOf(-1))
		a = a.Neg()
		if !eq {
			op = "<="
		}
	}
	if eq {
		op = "="
	}
	// a*pivot + rest op 0  =>  a*pivot op -rest
	rest := r.scaled(IntOf(-1))
	rest[pivot+1] = Int{}
	return formatTerm(a, names[pivot], true) + " " + op + " " + formatLinear(rest, names)
}

// formatLinear prints r·(1, x) as "2i - j + 3".
func formatLinear(r row, names []string) string {
	var b strings.Builder
	first := true
	for v := range names {
		c := r.coef(v)
		if c.IsZero() {
			continue
		}
		if first {
			b.WriteString(formatTerm(c, names[v], true))
		} else if c.Sign() < 0 {
			b.WriteString(" - " + formatTerm(c.Neg(), names[v], true))
		} else {
			b.WriteString(" + " + formatTerm(c, names[v], true))
		}
		first = false
	}
	switch {
	case first:
		return r[0].String()
	case r[0].Sign() > 0:
		b.WriteString(" + " + r[0].String())
	case r[0].Sign() < 0:
		b.WriteString(" - " + r[0].Neg().String())
	}
	return b.String()
}

func formatTerm(c Int, name string, _ bool) string {
	switch {
	case c.IsOne():
		return name
	case c.Equal(IntOf(-1)):
		return "-" + name
	}
	return c.String() + name
}
