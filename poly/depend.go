package poly

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/loom-go/loom/ast"
)

// DepKind says which accesses a dependence orders.
type DepKind uint8

// The dependence kinds: read after write (flow), write after read (anti),
// write after write (output).
const (
	RAW DepKind = iota + 1
	WAR
	WAW
)

// String returns "RAW", "WAR" or "WAW".
func (k DepKind) String() string {
	switch k {
	case RAW:
		return "RAW"
	case WAR:
		return "WAR"
	case WAW:
		return "WAW"
	}
	return "?"
}

// Dependence is a memory-based dependence: pairs of instances (source,
// sink) that access the same element of Buffer, at least one of them
// writing, with the source executing first. Reordering a pair would change
// what the function computes.
type Dependence struct {
	Kind         DepKind
	Buffer       *ast.Buffer
	Source, Sink *Instances
	// Rel relates source instances to the sink instances that depend on
	// them.
	Rel Map
	// Common is the number of loops around both blocks (the first Common of
	// Source.Loops and Sink.Loops are the same loops).
	Common int
	// Carried lists the common loop levels (0 is the outermost loop) that
	// carry some pair: the pair agrees on the outer loops and the sink is in
	// a later iteration of that one.
	Carried []int
	// Independent is true when some pair runs in the same iteration of
	// every common loop, ordered by the position of the blocks.
	Independent bool
	// Cautious is true when the dependence is a superset of the truth:
	// Rel relates every pair of instances and every common level is
	// carried, because the exact one would be composed from too many
	// pieces or its program's solver budget was spent. An order it
	// forbids may be one the function does not need.
	Cautious bool

	distOnce sync.Once
	distance []Range
}

// Distance bounds, at common loop level k, the sink's value of the loop
// minus the source's. It is computed on first use (legality questions do
// not need it).
func (d *Dependence) Distance(k int) Range {
	d.distOnce.Do(func() {
		for j := 0; j < d.Common; j++ {
			d.distance = append(d.distance, differenceBounds(d.Rel, j, j))
		}
	})
	return d.distance[k]
}

// ConstDistance returns the distance at common loop level k when it is the
// same for every pair.
func (d *Dependence) ConstDistance(k int) (Int, bool) {
	r := d.Distance(k)
	lo, ok1 := r.Lo.Constant()
	hi, ok2 := r.Hi.Constant()
	if ok1 && ok2 && lo.Equal(hi) {
		return lo, true
	}
	return Int{}, false
}

// CarriedAt reports whether loop level k carries the dependence.
func (d *Dependence) CarriedAt(k int) bool {
	for _, c := range d.Carried {
		if c == k {
			return true
		}
	}
	return false
}

// String summarizes the dependence on one line:
//
//	RAW S -> T on A: carried at i, distance (1, 0)
func (d *Dependence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s -> %s on %s:", d.Kind, d.Source.Block.Name, d.Sink.Block.Name, d.Buffer.Name)
	var parts []string
	if len(d.Carried) > 0 {
		var ls []string
		for _, k := range d.Carried {
			ls = append(ls, d.Source.Loops[k].Var.Name)
		}
		parts = append(parts, "carried at "+strings.Join(ls, ", "))
	}
	if d.Independent {
		parts = append(parts, "loop-independent")
	}
	if d.Common > 0 {
		var ds []string
		for k := 0; k < d.Common; k++ {
			if v, ok := d.ConstDistance(k); ok {
				ds = append(ds, v.String())
			} else {
				ds = append(ds, "*")
			}
		}
		parts = append(parts, "distance ("+strings.Join(ds, ", ")+")")
	}
	b.WriteString(" " + strings.Join(parts, ", "))
	return b.String()
}

// Dependences returns every dependence between the instances of p, in a
// fixed order: by source block, sink block, then access.
func (p *Program) Dependences() []*Dependence {
	var out []*Dependence
	for _, s := range p.Blocks {
		for _, t := range p.Blocks {
			out = append(out, p.dependences(s, t)...)
		}
	}
	return out
}

// dependences returns the dependences from instances of s to instances of
// t.
func (p *Program) dependences(s, t *Instances) []*Dependence {
	return p.dependencesOf(s, t, nil, RAW, WAR, WAW)
}

// dependencesOf returns the dependences of the given kinds from instances
// of s to instances of t, through buf alone when it is not nil.
func (p *Program) dependencesOf(s, t *Instances, buf *ast.Buffer, kinds ...DepKind) []*Dependence {
	common, sFirst := order(s, t)
	var out []*Dependence
	pairs := []struct {
		kind DepKind
		a, b []Access
	}{{RAW, s.Writes, t.Reads}, {WAR, s.Reads, t.Writes}, {WAW, s.Writes, t.Writes}}
	for _, pr := range pairs {
		if !slices.Contains(kinds, pr.kind) {
			continue
		}
		for _, a := range pr.a {
			for _, b := range pr.b {
				if a.Buffer != b.Buffer || buf != nil && a.Buffer != buf {
					continue
				}
				if d := p.dependence(pr.kind, s, t, a, b, common, sFirst); d != nil {
					out = append(out, d)
				}
			}
		}
	}
	return out
}

// dependenceWork bounds the solver's work on one dependence (a pair of
// accesses): the emptiness of its conflict at each loop level and of the
// whole. Past it, the questions left count as non-empty, so the
// dependence keeps every level it may be carried at: a cautious answer
// (a primitive refuses, a buffer is not compacted), where an exact one
// may take the Omega test hours (a binding through floordiv and floormod
// of a symbolic extent, split and fused: reduce_elementwise in the long
// run, whose compile never ended).
const dependenceWork = 4 * maxSolveWork

// programDependenceWork bounds it for all the dependences of a program
// together: a function whose every pair of accesses is hard (the one
// above has 42 statements) gets its cautious answers in seconds, not one
// dependence at a time. Ordinary programs spend a few thousandths of it.
const programDependenceWork = 16 * maxSolveWork

// maxConflictParts bounds the pieces a dependence's conflict is composed
// from (the pieces of one access times the other's): accesses through
// nested floordiv and floormod of a symbolic extent come in 128 pieces
// each (the long run's hangs: conflicts of 16,384 pieces, each composed
// and tested). Past it the dependence is the cautious one.
const maxConflictParts = 1024

func (p *Program) dependence(kind DepKind, s, t *Instances, a, b Access, common int, sFirst bool) *Dependence {
	d := &Dependence{Kind: kind, Buffer: a.Buffer, Source: s, Sink: t, Common: common}
	if p.depWork == nil {
		p.depWork = &effort{left: programDependenceWork}
	}
	if len(a.Map.parts)*len(b.Map.parts) > maxConflictParts || p.depWork.spent() {
		// Too many pieces to compose, or nothing left to decide with:
		// every pair of instances may conflict, at every level the two
		// share (a superset of the truth, the cautious answer).
		d.Cautious = true
		for k := 0; k < common; k++ {
			d.Carried = append(d.Carried, k)
		}
		d.Independent = sFirst
		d.Rel = UniverseMap(a.Map.Params, s.Block.Name, s.Domain.Dims, t.Block.Name, t.Domain.Dims)
		return d
	}
	conflict := ApplyRange(a.Map, b.Map.Reverse())
	rel := Map{Params: conflict.Params, InName: s.Block.Name, In: s.Domain.Dims, OutName: t.Block.Name, Out: t.Domain.Dims}
	e := &effort{left: min(dependenceWork, p.depWork.left)}
	defer func(left int64) { p.depWork.left -= left - max(e.left, 0) }(e.left)
	for k := 0; k <= common; k++ {
		if k == common && !sFirst {
			break
		}
		part := IntersectMap(conflict, beforeAt(s, t, k, common))
		if empty, _ := (Set{parts: part.parts}).decideIn(e); empty {
			continue
		}
		rel = UnionMap(rel, part)
		if k < common {
			d.Carried = append(d.Carried, k)
		} else {
			d.Independent = true
		}
	}
	if empty, _ := (Set{parts: rel.parts}).decideIn(e); empty {
		return nil
	}
	d.Rel = rel
	return d
}

// beforeAt returns the pairs (s, t) of instances of a and b that agree on
// the first k common loops and, for k < common, have s's loop k before
// t's; for k == common, that agree on every common loop.
func beforeAt(a, b *Instances, k, common int) Map {
	in, out := tupleNames("$s", len(a.Domain.Dims)), tupleNames("$t", len(b.Domain.Dims))
	var c conj
	for j := 0; j < k && j < common; j++ {
		c.eqs = append(c.eqs, varLin(out[j]).plus(varLin(in[j]), IntOf(-1)))
	}
	if k < common {
		// t_k - s_k - 1 >= 0
		c.ineqs = append(c.ineqs, varLin(out[k]).plus(varLin(in[k]), IntOf(-1)).plus(constLin(IntOf(1)), IntOf(-1)))
	}
	bs, _ := assemble(a.Domain.Params, in, out, 0, c)
	return Map{Params: a.Domain.Params, InName: a.Block.Name, In: a.Domain.Dims, OutName: b.Block.Name, Out: b.Domain.Dims, parts: []*basic{bs}}
}

func tupleNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// differenceBounds returns the bounds of out_j - in_i over the pairs of m.
func differenceBounds(m Map, i, j int) Range {
	w := m.Wrap()
	// A map from the wrapped tuple to the one difference.
	in := tupleNames("$w", len(w.Dims))
	c := conj{eqs: []lin{varLin("$d").plus(varLin(in[len(m.In)+j]), IntOf(-1)).plus(varLin(in[i]), IntOf(1))}}
	bs, _ := assemble(w.Params, in, []string{"$d"}, 0, c)
	diff := Map{Params: w.Params, In: w.Dims, Out: []string{"d"}, parts: []*basic{bs}}
	lo, hi := Apply(w, diff).DimBounds(0)
	return Range{lo, hi}
}
