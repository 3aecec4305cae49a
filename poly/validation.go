package poly

import (
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
)

// The queries of translation validation (package validate): they compare
// the executions of a block in two versions of a function, and check the
// order of execution pairs, without the shortcuts the schedule primitives
// take (kept loops, skipped dependences).

// Iterations returns the iteration vectors in executes: the domain with
// the loop dimensions projected out.
func (in *Instances) Iterations() Set {
	return in.Domain.ProjectOut(0, len(in.Loops))
}

// Repeat returns a witness iteration vector that two different executions
// of in share (different loop values, the same iteration variables), or
// ok false when every instance executes at most once.
func (in *Instances) Repeat() (iters []Int, ok bool) { return in.RepeatKey(nil) }

// RepeatKey is Repeat where executions that differ in the loops at
// positions sel count as different instances: it returns a witness
// iteration vector that two executions with the same values of those
// loops share.
func (in *Instances) RepeatKey(sel []int) (iters []Int, ok bool) {
	n := len(in.Loops)
	dims := len(in.Domain.Dims)
	sn, tn := tupleNames("$s", dims), tupleNames("$t", dims)
	same := conj{}
	for k := 0; k < dims; k++ {
		if k >= n || slices.Contains(sel, k) {
			same.eqs = append(same.eqs, varLin(tn[k]).plus(varLin(sn[k]), IntOf(-1)))
		}
	}
	for k := 0; k < n; k++ {
		if slices.Contains(sel, k) {
			continue
		}
		for _, sign := range []int64{1, -1} {
			// Loop k differs: sign*(t_k - s_k) >= 1.
			c := conj{eqs: same.eqs, ineqs: []lin{varLin(tn[k]).plus(varLin(sn[k]), IntOf(-1)).scaled(IntOf(sign)).plus(constLin(IntOf(1)), IntOf(-1))}}
			bs, _ := assemble(in.Domain.Params, sn, tn, 0, c)
			m := Map{Params: in.Domain.Params, InName: in.Block.Name, In: in.Domain.Dims, OutName: in.Block.Name, Out: in.Domain.Dims, parts: []*basic{bs}}
			m = IntersectRange(IntersectDomain(m, in.Domain), in.Domain)
			if x, _, found, decided := m.Witness(); found {
				return x[n:], true
			} else if !decided {
				return nil, true // undecided: maybe
			}
		}
	}
	return nil, false
}

// IterationPairs returns the dependence as a relation between iteration
// vectors: the pairs of instances (by their blocks' iteration variables)
// that depend on each other, in any of their executions. For a dependence
// of a block on itself only pairs of different instances are kept.
func (d *Dependence) IterationPairs() Map { return d.KeyPairsOf(nil, nil) }

// NotAfter returns pieces whose union is the pairs (x, y) of executions of
// a and b where y is not sure to run after x in p's order: y runs first,
// they are the same execution, or they are in different iterations of a
// loop around both that concurrent says runs its iterations at once (it is
// given the loop's depth; nil: none does).
func (p *Program) NotAfter(a, b *Instances, concurrent func(*ast.For) bool) []Map {
	common, aFirst := order(a, b)
	var out []Map
	for k := 0; k <= common; k++ {
		switch {
		case k < common:
			out = append(out, beforeAt(b, a, k, common).Reverse())
			if concurrent != nil && concurrent(a.Loops[k]) {
				out = append(out, beforeAt(a, b, k, common))
			}
		case !aFirst:
			out = append(out, beforeAt(a, b, common, common))
		}
	}
	return out
}

// Concurrently returns pieces whose union is the pairs (x, y) of
// executions of a and b in different iterations of a loop around both that
// concurrent says runs its iterations at once, x's iteration the earlier:
// the pairs such a loop leaves unordered that the serial order runs x
// first.
func (p *Program) Concurrently(a, b *Instances, concurrent func(*ast.For) bool) []Map {
	common, _ := order(a, b)
	var out []Map
	for k := 0; k < common; k++ {
		if concurrent(a.Loops[k]) {
			out = append(out, beforeAt(a, b, k, common))
		}
	}
	return out
}

// Order returns the number of loops around both a and b, and whether a's
// statement comes first inside them.
func (p *Program) Order(a, b *Instances) (common int, aFirst bool) { return order(a, b) }

// CommonImage returns, for executions of a and the relation iters from
// a's iteration vectors to b's, the set of tuples (the values of the first
// common loops of b's execution, then a's iteration vector) over the
// executions of b that some iteration vector of a relates to; and the set
// of the same tuples (common loop values, iteration vector) that some
// execution of a takes. When the first is a subset of the second, every
// execution of b finds an execution of a with the related iteration vector
// in the same iteration of the common loops.
func CommonImage(a, b *Instances, iters Map, common int) (need, have Set) {
	la := len(a.Loops)
	pairs := ExecutionsOf(a, b, iters, nil, nil).Wrap() // [a loops, a iters, b loops, b iters]
	na, nb := len(a.Domain.Dims), len(b.Domain.Dims)
	// Keep b's first common loops and a's iteration vector.
	need = pairs.ProjectOut(na+common, nb-common) // [a loops, a iters, b common]
	need = need.ProjectOut(0, la)                 // [a iters, b common]
	need = need.rotate(na - la)                   // [b common, a iters]
	have = a.Domain.ProjectOut(common, la-common) // [a common, a iters]
	need.Name, have.Name = a.Block.Name, a.Block.Name
	need.Dims, have.Dims = slices.Clone(have.Dims), slices.Clone(have.Dims)
	return need, have
}

// rotate moves the first n dimensions of s behind the others.
func (s Set) rotate(n int) Set {
	d := len(s.Dims)
	out := Set{Params: s.Params, Name: s.Name, Dims: append(slices.Clone(s.Dims[n:]), s.Dims[:n]...)}
	for _, b := range s.parts {
		perm := make([]int, b.nVars())
		for i := range perm {
			perm[i] = i
		}
		for j := 0; j < d; j++ {
			// Dimension j of the result is dimension (j + n) mod d of s.
			perm[b.outVar(j)] = b.outVar((j + n) % d)
		}
		out.parts = append(out.parts, b.permute(perm))
	}
	return out
}

// FixParams returns s at the given parameter values (by name; names s
// does not have are ignored): a set with the same parameters, empty
// elsewhere.
func (s Set) FixParams(vals map[string]int64) Set {
	out := Set{Params: s.Params, Name: s.Name, Dims: s.Dims}
	for _, b := range s.parts {
		c := b.clone()
		for i, name := range s.Params {
			v, ok := vals[name]
			if !ok {
				continue
			}
			r := newRow(c.nVars())
			r[0] = IntOf(-v)
			r[1+i] = IntOf(1)
			c.addEq(r)
		}
		if c = c.simplify(); !c.trivial() {
			out.parts = append(out.parts, c)
		}
	}
	return out
}

// Touches returns, for each load and store in the body and init of leaf
// block in's block, the relation from in's instances to the indices it
// accesses, and whether it is exact (affine indices). Unlike the accesses
// of Extract, which come from the declared regions, these are the indices
// the statements use.
func (p *Program) Touches(in *Instances) []Access {
	b := in.Block
	var regions []ast.Region
	add := func(buf *ast.Buffer, idx []ast.Expr) {
		r := ast.Region{Buffer: buf}
		for _, x := range idx {
			r.Ranges = append(r.Ranges, ast.Range{Min: x, Extent: ast.One(x.Type())})
		}
		regions = append(regions, r)
	}
	for _, part := range []ast.Stmt{b.Init, b.Body} {
		if part == nil {
			continue
		}
		ast.Inspect(part, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Load:
				add(n.Buffer, n.Indices)
			case *ast.Store:
				add(n.Buffer, n.Indices)
			}
			return true
		})
	}
	if len(regions) == 0 {
		return nil
	}
	// Model a copy of the block whose writes are these regions, in the same
	// place: the walk rebuilds the context.
	c := *b
	c.Reads, c.Writes = nil, regions
	q := &Program{Func: p.Func, Params: p.Params}
	w := &walker{prog: q, only: b, replace: &c}
	if err := w.walk(p.Func.Body); err != nil || len(q.Blocks) != 1 {
		return nil
	}
	return q.Blocks[0].Writes
}

// OutOfBounds returns a witness index tuple, with the parameter values,
// of an access outside the buffer's shape (an index below zero or at or
// past the extent of its dimension), over the instances in dom; ok is
// false when every index is inside. A shape that is not affine in the
// parameters is not checked.
func (a Access) OutOfBounds(dom Set) (params, index []Int, ok bool) {
	img := Apply(dom, a.Map)
	ab := newAffineBuilder()
	for _, name := range img.Params {
		ab.known[name] = true
	}
	for d := range img.Dims {
		if d >= len(a.Buffer.Shape) {
			break
		}
		shape, isAff := ab.expr(a.Buffer.Shape[d])
		if !isAff || len(ab.defs.eqs)+len(ab.defs.ineqs) > 0 {
			ab.defs = conj{}
			continue
		}
		x := varLin(img.Dims[d])
		for _, out := range []lin{
			x.scaled(IntOf(-1)).plus(constLin(IntOf(-1)), IntOf(1)), // -x - 1 >= 0
			x.plus(shape, IntOf(-1)),                                // x - shape >= 0
		} {
			bs, ok2 := assemble(img.Params, nil, img.Dims, 0, conj{ineqs: []lin{out}})
			if !ok2 {
				continue
			}
			cut := Intersect(img, Set{Params: img.Params, Name: img.Name, Dims: img.Dims, parts: []*basic{bs}})
			if ps, xs, found := cut.Sample(); found {
				return ps, xs, true
			} else if !cut.IsEmpty() {
				return nil, nil, true
			}
		}
	}
	return nil, nil, false
}

// KeyPairsOf is IterationPairs where an instance is also told apart by
// the values of some of its loops, chosen by position: selS among the
// source's loops and selT among the sink's, in the order given. The
// relation is between keys, those loops' values followed by the
// iteration vector; it tells apart executions of a block that share an
// iteration vector. For a dependence of a block on itself with the same
// loops on both sides, only pairs of different keys are kept.
func (d *Dependence) KeyPairsOf(selS, selT []int) Map {
	ls, lt := len(d.Source.Loops), len(d.Sink.Loops)
	ns, nt := len(d.Source.Domain.Dims), len(d.Sink.Domain.Dims)
	rel := d.Rel.permuteTuples(keyOrder(selS, ls, ns), keyOrder(selT, lt, nt))
	w := rel.Wrap()
	ks, kt := len(selS), len(selT)
	w = w.ProjectOut(ns+kt, lt-kt).ProjectOut(ks, ls-ks)
	m := w.unwrap(ns-(ls-ks), d.Source.Block.Name, d.Sink.Block.Name)
	if d.Source == d.Sink && slices.Equal(selS, selT) {
		m = IntersectMap(m, distinct(m))
	}
	return m
}

// ExecutionsOf returns the pairs of executions of a and b (their full
// tuples, loops and iteration variables) whose keys (the values of the
// loops at positions selA and selB, then the iteration vector; see
// KeyPairsOf) keys relates.
func ExecutionsOf(a, b *Instances, keys Map, selA, selB []int) Map {
	la, lb := len(a.Loops), len(b.Loops)
	na, nb := len(a.Domain.Dims), len(b.Domain.Dims)
	ka, kb := len(selA), len(selB)
	// In key order: the chosen loops, the other loops (free), the iteration
	// variables.
	ext := Map{Params: keys.Params, InName: a.Block.Name, In: a.Domain.Dims, OutName: b.Block.Name, Out: b.Domain.Dims}
	for _, x := range keys.parts {
		c := x.insertVars(x.nParam+x.nIn+kb, lb-kb)
		c = c.insertVars(c.nParam+ka, la-ka)
		c.nIn, c.nOut = x.nIn+la-ka, x.nOut+lb-kb
		ext.parts = append(ext.parts, c)
	}
	// Back to the blocks' tuple order.
	ext = ext.permuteTuples(inverse(keyOrder(selA, la, na)), inverse(keyOrder(selB, lb, nb)))
	ext.In, ext.Out = a.Domain.Dims, b.Domain.Dims
	return IntersectRange(IntersectDomain(ext, a.Domain), b.Domain)
}

// keyOrder returns the order of a tuple of n dimensions (l loops, then
// iteration variables) that puts the loops at positions sel first, then
// the other loops, then the iteration variables: dimension j of the result
// is dimension order[j] of the tuple.
func keyOrder(sel []int, l, n int) []int {
	order := slices.Clone(sel)
	for k := 0; k < l; k++ {
		if !slices.Contains(sel, k) {
			order = append(order, k)
		}
	}
	for k := l; k < n; k++ {
		order = append(order, k)
	}
	return order
}

func inverse(order []int) []int {
	inv := make([]int, len(order))
	for j, k := range order {
		inv[k] = j
	}
	return inv
}

// permuteTuples reorders m's input and output dimensions: input j of the
// result is input in[j] of m, and likewise for outputs.
func (m Map) permuteTuples(in, out []int) Map {
	r := Map{Params: m.Params, InName: m.InName, OutName: m.OutName}
	for _, k := range in {
		r.In = append(r.In, m.In[k])
	}
	for _, k := range out {
		r.Out = append(r.Out, m.Out[k])
	}
	for _, b := range m.parts {
		perm := make([]int, b.nVars())
		for i := range perm {
			perm[i] = i
		}
		for j, k := range in {
			perm[b.inVar(j)] = b.inVar(k)
		}
		for j, k := range out {
			perm[b.outVar(j)] = b.outVar(k)
		}
		r.parts = append(r.parts, b.permute(perm))
	}
	return r
}

// FillsBox reports whether s is the whole box its dimension bounds make:
// every point between the least and the greatest value of each dimension
// (as functions of the parameters) is in s, for all parameter values. It
// answers false where it cannot prove it.
func (s Set) FillsBox() bool {
	if len(s.Dims) == 0 {
		return true
	}
	b := newBasic(len(s.Params), 0, len(s.Dims))
	for d := range s.Dims {
		lo, hi := s.DimBounds(d)
		if lo.Empty || lo.Unbounded || hi.Unbounded || len(lo.Parts) != 1 || len(hi.Parts) != 1 {
			return false
		}
		for _, side := range []struct {
			b    Bound
			sign int64
		}{{lo, 1}, {hi, -1}} {
			for _, a := range side.b.Parts[0] {
				if len(a.Params) != len(s.Params) {
					return false
				}
				// lower: div*x - aff >= 0; upper: aff - div*x >= 0.
				r := newRow(b.nVars())
				r[0] = a.Const.Mul(IntOf(-side.sign))
				for i := range a.Coefs {
					r[1+i] = a.Coefs[i].Mul(IntOf(-side.sign))
				}
				r[1+b.outVar(d)] = a.Div.Mul(IntOf(side.sign))
				b.addIneq(r)
			}
		}
	}
	box := Set{Params: s.Params, Name: s.Name, Dims: s.Dims, parts: []*basic{b}}
	ok, err := Subset(box, s)
	return err == nil && ok
}

// Before returns pieces whose union is the pairs (x, y) of executions of
// a and b where x runs strictly before y in p's order; x in an earlier
// iteration of a loop that concurrent says runs its iterations at once
// (nil: none does) is not before y.
func (p *Program) Before(a, b *Instances, concurrent func(*ast.For) bool) []Map {
	common, aFirst := order(a, b)
	var out []Map
	for k := 0; k < common; k++ {
		if concurrent == nil || !concurrent(a.Loops[k]) {
			out = append(out, beforeAt(a, b, k, common))
		}
	}
	if aFirst {
		out = append(out, beforeAt(a, b, common, common))
	}
	return out
}

// ReadAfterSome returns, for the pairs of iteration vectors iters relates
// (a's writing, b's reading), the set need of tuples (a's iteration
// vector, then b's execution) over every execution of b, and the set have
// of those tuples for which some execution of a with that iteration
// vector runs before the execution of b (see Before for concurrent).
// need ⊆ have says that every read finds a write before it.
func (p *Program) ReadAfterSome(a, b *Instances, iters Map, concurrent func(*ast.For) bool) (need, have Set) {
	la := len(a.Loops)
	pairs := ExecutionsOf(a, b, iters, nil, nil)
	need = pairs.Wrap().ProjectOut(0, la)
	for i, piece := range p.Before(a, b, concurrent) {
		h := IntersectMap(pairs, piece).Wrap().ProjectOut(0, la)
		if i == 0 {
			have = h
		} else {
			have = Union(have, h)
		}
	}
	if have.Dims == nil {
		have = Set{Params: need.Params, Name: need.Name, Dims: need.Dims}
	}
	return need, have
}

// Witness returns a pair of m, or found false; decided is false when the
// solver gave up on some part before deciding it (then m may or may not be
// empty). It asks each part once, where IsEmpty and then Sample would ask
// twice.
func (m Map) Witness() (in, out []Int, found, decided bool) {
	decided = true
	for _, b := range m.parts {
		x, ok := b.sample()
		switch {
		case ok && x != nil:
			return x[b.nParam : b.nParam+b.nIn], x[b.nParam+b.nIn : b.nParam+b.nIn+b.nOut], true, true
		case ok:
			decided = false
		}
	}
	return nil, nil, false, decided
}

// IterString prints an iteration vector of block b with its variable
// names: "(vi=1, vk=3)"; "" for no vector.
func IterString(b *ast.ScheduleBlock, x []Int) string {
	if x == nil {
		return ""
	}
	parts := make([]string, len(x))
	for i, v := range x {
		name := "?"
		if i < len(b.Iters) {
			name = b.Iters[i].Var.Name
		}
		parts[i] = name + "=" + v.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// IterationAccess returns access a of in as a relation from in's iteration
// vectors to the indices they touch, over the executions in runs: the
// loops are projected out. Two blocks' accesses to one buffer compose
// through it (ApplyRange of one with the other's Reverse) into the pairs
// of instances that touch the same cells.
func (in *Instances) IterationAccess(a Access) Map {
	n := len(in.Loops)
	w := IntersectDomain(a.Map, in.Domain).Wrap().ProjectOut(0, n)
	return w.unwrap(len(in.Domain.Dims)-n, in.Block.Name, a.Buffer.Name)
}
