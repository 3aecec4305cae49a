package lazy

import (
	"github.com/loom-go/loom/fusion"
)

// Sizes made symbolic. A trace compiled at one set of sizes serves only
// those; when the same structure comes back at other sizes (the next
// batch has another sequence length), the sizes that differ between the
// two become symbols, and a module with symbolic sizes is compiled for
// the bucket each symbol's value falls in ((2^(k-1), 2^k]; 0 and 1 are
// buckets of their own): its default schedules tile each loop of
// symbolic extent as the bucket's largest extent would be, the tails
// guarded (module.Options.Bounds), and its kernels take the schedules a
// tuning database holds for buckets of their sizes (Options.Database,
// loom tune -buckets). Every later set of sizes that fits the pattern and
// the bucket is a lookup; one in another bucket compiles the pattern for
// that bucket. A program that knows which sizes vary marks them
// (Tensor.Dynamic), and the first compilation is already symbolic.
//
// The pattern is found from the two sets of sizes, slot by slot: a size
// the same in both stays a constant; input dimensions that differ get one
// symbol per distinct pair of values (two dimensions that were equal both
// times share it); a shape attribute that differs is a symbol's multiple
// (12·S when a reshape merges 12 heads) or a product of two symbols, else
// the one inferred dimension of its reshape (-1). When nothing of the
// kind explains a varying attribute, that structure keeps being compiled
// per set of sizes (Stats.ShapeRecompiles counts it).
//
// A pattern is only ever a guess about sizes not yet seen: a module
// serves a trace only when every one of the trace's sizes is what the
// pattern gives at the trace's symbol values (accepts), which makes the
// graph it was built from, at those values, the trace's own graph.

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
	for _, n := range tr.ops {
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

// markedPattern finds the pattern of a trace seen once whose inputs
// mark sizes that vary (Tensor.Dynamic): each marked size a symbol (one
// per distinct value), a shape attribute that is a multiple of a
// symbol's value (above 1) or a product of two such values that symbol's
// multiple or product, every other size constant. A guess where a
// constant equals a marked size by chance is harmless: the module built
// from it serves only sizes it fits (accepts), and a graph that does not
// build is compiled at its sizes instead. ok is false when nothing is
// marked.
func markedPattern(tr *trace) (p pattern, symbols int, ok bool) {
	p = make(pattern, len(tr.slots))
	syms := map[int64]int{}
	var values []pair
	slot := 0
	for _, t := range tr.inputs {
		for k := range t.shape {
			v := tr.slots[slot]
			p[slot] = slotRule{kind: ruleConst, value: v}
			if t.dynamic&(1<<k) != 0 {
				j, seen := syms[v]
				if !seen {
					j = len(values)
					syms[v] = j
					values = append(values, pair{v, v})
				}
				p[slot] = slotRule{kind: ruleSym, value: 1, a: j}
			}
			slot++
		}
	}
	if len(values) == 0 {
		return nil, 0, false
	}
	var large []pair // the values that tell a size from a constant
	for _, v := range values {
		if v.a > 1 {
			large = append(large, v)
		}
	}
	for ; slot < len(tr.slots); slot++ {
		v := tr.slots[slot]
		p[slot] = slotRule{kind: ruleConst, value: v}
		if r, found := explain(v, v, large); found && v > 1 {
			// explain indexes large; its symbols are values' indexes
			r.a, r.b = syms[large[r.a].a], syms[large[r.b].a]
			p[slot] = r
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

// bucket is the range of sizes a symbol's value v falls in, whose
// module is compiled for it: (2^(k-1), 2^k], and 0 and 1 alone.
func bucket(v int64) (lo, hi int64) {
	if v <= 1 {
		return v, v
	}
	hi = 1
	for hi < v {
		hi *= 2
	}
	return hi/2 + 1, hi
}

// symbolValues returns the values pattern p binds its symbols to at
// sizes (which p accepts).
func (p pattern) symbolValues(sizes []int64, symbols int) []int64 {
	out := make([]int64, symbols)
	for i, r := range p {
		if r.kind == ruleSym && r.value == 1 {
			out[r.a] = sizes[i]
		}
	}
	return out
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
