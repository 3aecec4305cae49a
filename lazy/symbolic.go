package lazy

import (
	"github.com/loom-go/loom/fusion"
)

// Sizes made symbolic. A trace compiled at one set of sizes serves only
// those; when the same structure comes back at other sizes (the next
// batch has another sequence length), the sizes that differ between the
// two become symbols and one module with symbolic sizes is compiled,
// which then serves every later set of sizes that fits its pattern
// without compiling again. Its kernels take, per bucket of their sizes,
// the schedules a tuning database holds (loom tune -buckets;
// Options.Database), else the default schedule for symbolic extents.
//
// The pattern is found from the two sets of sizes, slot by slot: a size
// the same in both stays a constant; input dimensions that differ get one
// symbol per distinct pair of values (two dimensions that were equal both
// times share it); a shape attribute that differs is a symbol's multiple
// (12·S when a reshape merges 12 heads) or a product of two symbols, else
// the one inferred dimension of its reshape (-1). A pattern that explains
// nothing of the kind is no pattern: that structure keeps being compiled
// per set of sizes (Stats.ShapeRecompiles counts it).

// ruleKind is what a slot is in a pattern.
type ruleKind uint8

const (
	ruleConst   ruleKind = iota // the value, always
	ruleSym                     // value · symbol a
	ruleProduct                 // symbol a · symbol b
	ruleInfer                   // a reshape's inferred dimension: any value
)

// slotRule is one slot of a pattern.
type slotRule struct {
	kind  ruleKind
	value int64 // ruleConst: the size; ruleSym: the factor
	a, b  int   // symbols
}

// pattern gives every slot of a trace its rule; nil: every size constant.
type pattern []slotRule

// dim is slot i of an input's shape under p (v: its value in the trace).
func (p pattern) dim(i int, v int64) fusion.Dim {
	if p == nil || p[i].kind == ruleConst {
		return fusion.Const(v)
	}
	return fusion.Sym(symbol(p[i].a)) // an input's varying size is a symbol
}

// jsonDim is slot i of a shape attribute under p (v: its value).
func (p pattern) jsonDim(i int, v int64) fusion.JSONDim {
	var r slotRule
	if p != nil {
		r = p[i]
	} else {
		r = slotRule{kind: ruleConst, value: v}
	}
	switch r.kind {
	case ruleSym:
		d, _ := fusion.Sym(symbol(r.a)).Scale(r.value)
		return fusion.JSONDim{Dim: d}
	case ruleProduct:
		d, _ := fusion.Sym(symbol(r.a)).Mul(fusion.Sym(symbol(r.b)))
		return fusion.JSONDim{Dim: d}
	case ruleInfer:
		return fusion.JSONDim{Infer: true}
	}
	if r.value == -1 {
		return fusion.JSONDim{Infer: true}
	}
	return fusion.JSONDim{Dim: fusion.Const(r.value)}
}

// pair is a size at the first and at the second set of sizes.
type pair struct{ a, b int64 }

// derivePattern finds the pattern of a trace seen at sizes a and then at
// sizes b (see above); ok is false when a shape attribute that varies
// cannot be explained.
func derivePattern(tr *trace, a, b []int64) (p pattern, symbols int, ok bool) {
	p = make(pattern, len(a))
	syms := map[pair]int{}
	var values []pair // by symbol
	for i := range tr.inputSlots {
		if a[i] == b[i] {
			p[i] = slotRule{kind: ruleConst, value: a[i]}
			continue
		}
		v := pair{a[i], b[i]}
		j, seen := syms[v]
		if !seen {
			j = len(values)
			syms[v] = j
			values = append(values, v)
		}
		p[i] = slotRule{kind: ruleSym, value: 1, a: j}
	}
	// the shape attributes, one node at a time (a reshape may infer one
	// dimension)
	slot := tr.inputSlots
	for _, t := range tr.nodes {
		n := t.node
		if n.shape == nil {
			continue
		}
		inferred := false
		for _, v := range n.shape {
			inferred = inferred || v == -1
		}
		for range n.shape {
			i := slot
			slot++
			if a[i] == b[i] {
				p[i] = slotRule{kind: ruleConst, value: a[i]}
				continue
			}
			if a[i] == -1 || b[i] == -1 {
				return nil, 0, false // inferred once, given the other time
			}
			if r, found := explain(a[i], b[i], values); found {
				p[i] = r
				continue
			}
			if n.op != "reshape" || inferred {
				return nil, 0, false
			}
			p[i], inferred = slotRule{kind: ruleInfer}, true
		}
	}
	return p, len(values), true
}

// explain finds a varying attribute size (x at the first sizes, y at the
// second) as a multiple of a symbol or a product of two.
func explain(x, y int64, values []pair) (slotRule, bool) {
	for j, s := range values {
		if s.a > 0 && s.b > 0 && x%s.a == 0 && y%s.b == 0 && x/s.a == y/s.b && x/s.a > 0 {
			return slotRule{kind: ruleSym, value: x / s.a, a: j}, true
		}
	}
	for j, s := range values {
		for k := j; k < len(values); k++ {
			u := values[k]
			if x == s.a*u.a && y == s.b*u.b {
				return slotRule{kind: ruleProduct, a: j, b: k}, true
			}
		}
	}
	return slotRule{}, false
}

// accepts reports whether sizes fit pattern p: its symbols bound from
// the inputs' dimensions, every other slot as the pattern says.
func (p pattern) accepts(sizes []int64, symbols int) bool {
	if len(sizes) != len(p) {
		return false
	}
	bound := make([]int64, symbols)
	set := make([]bool, symbols)
	for i, r := range p {
		if r.kind == ruleSym && r.value == 1 && !set[r.a] {
			bound[r.a], set[r.a] = sizes[i], true
		}
	}
	for i, r := range p {
		switch r.kind {
		case ruleConst:
			if sizes[i] != r.value {
				return false
			}
		case ruleSym:
			if !set[r.a] || sizes[i] != r.value*bound[r.a] {
				return false
			}
		case ruleProduct:
			if !set[r.a] || !set[r.b] || sizes[i] != bound[r.a]*bound[r.b] {
				return false
			}
		}
	}
	return true
}
