package validate

import (
	"fmt"
	"strings"

	"github.com/loom-go/loom/ast"

	"github.com/loom-go/loom/poly"
)

// outputs asks the fourth question: every argument of the function is
// written at the same cells before and after the step. The first two
// questions compare kept blocks only; this one holds across blocks the
// step adds, removes or renames, where a store inlined into another block
// could otherwise write cells the old function left alone (a predicate
// lost on the way) or leave cells unwritten.
//
// A reduction whose reduce loops run no iteration for an element still
// writes it (its init): the question is asked of the functions as they
// run, with those inits spelled out (ast.InitEmptyReductions), so that a
// step moving the init out of such a reduction (decompose_reduction) keeps
// the cells it wrote. It is asked where every size is at least one.
//
// An argument whose writers the step left alone (the same blocks,
// unchanged) is not asked about, nor one whose writes the model holds only
// approximately.
func (v *validator) outputs() error {
	before, after := asRun(v.before), asRun(v.after)
	if before == nil || after == nil {
		v.stats.note("outputs: empty inits outside the model")
		return nil
	}
	for _, p := range v.before.Func.Params {
		wf, wg := writers(before, p.Name), writers(after, p.Name)
		if v.writersUnchanged(wf, wg) {
			continue
		}
		cellsF, exactF := writtenCells(wf, p.Name)
		cellsG, exactG := writtenCells(wg, p.Name)
		if !exactF || !exactG {
			v.stats.note("outputs: inexact model")
			continue
		}
		for _, g := range wg {
			mine, _ := writtenCells([]*poly.Instances{g}, p.Name)
			allowed := cellsF
			if kept := v.keptByCopy(after, g, p); kept != nil {
				allowed = unionCells(allowed, kept)
			}
			if allowed == nil {
				return &Error{Question: "outputs", Block: g.Block.Name, Reason: fmt.Sprintf("it writes %s, an argument of the function that nothing wrote before the step", p.Name)}
			}
			switch v.subset(v.sizesPositive(*mine), *allowed) {
			case no:
				return &Error{Question: "outputs", Block: g.Block.Name, Reason: fmt.Sprintf("it writes cells of %s, an argument of the function, that no block wrote before the step", p.Name)}
			case unknown:
				v.stats.note("outputs: undecided")
			}
		}
		for _, f := range wf {
			mine, _ := writtenCells([]*poly.Instances{f}, p.Name)
			if cellsG == nil {
				return &Error{Question: "outputs", Block: f.Block.Name, Reason: fmt.Sprintf("no block writes %s, an argument of the function, after the step", p.Name)}
			}
			switch v.subset(v.sizesPositive(*mine), *cellsG) {
			case no:
				return &Error{Question: "outputs", Block: f.Block.Name, Reason: fmt.Sprintf("some cells of %s, an argument of the function, that the block wrote are no longer written after the step", p.Name)}
			case unknown:
				v.stats.note("outputs: undecided")
			}
		}
	}
	return nil
}

// keptByCopy returns the cells of p that block g, a copy back from a
// cache, writes with the values p held before the function ran, or nil:
// where the block it writes only part of (a predicate, a triangle) was
// moved to a cache, cache_write fills the cache from p first, so the copy
// back over the whole box writes the cells the block left alone with
// their own values. These are the cells of the cache that a copy from p
// fills.
func (v *validator) keptByCopy(after *poly.Program, g *poly.Instances, p *ast.Buffer) *poly.Set {
	cache := copySource(g.Block)
	if cache == nil || cache.Name == p.Name || after.Func.Param(cache.Name) != nil {
		return nil
	}
	var fills []*poly.Instances
	for _, f := range writers(after, cache.Name) {
		if src := copySource(f.Block); src != nil && src.Name == p.Name {
			fills = append(fills, f)
		}
	}
	cells, exact := writtenCells(fills, cache.Name)
	if !exact {
		return nil
	}
	return cells
}

// asRun returns the model of p's function as it runs, with the inits of
// its empty reductions spelled out: p itself when there are none, nil when
// the model cannot hold them.
func asRun(p *poly.Program) *poly.Program {
	g := ast.InitEmptyReductions(p.Func)
	if g == p.Func {
		return p
	}
	q, err := poly.Extract(g)
	if err != nil {
		return nil
	}
	return q
}

// copySource returns the buffer that block b copies from, element for
// element (its body is dst[idx] = src[idx]), or nil.
func copySource(b *ast.ScheduleBlock) *ast.Buffer {
	st, ok := b.Body.(*ast.Store)
	if !ok {
		return nil
	}
	ld, ok := st.Value.(*ast.Load)
	if !ok || len(ld.Indices) != len(st.Indices) {
		return nil
	}
	for i := range st.Indices {
		if ast.Print(st.Indices[i]) != ast.Print(ld.Indices[i]) {
			return nil
		}
	}
	return ld.Buffer
}

func unionCells(a, b *poly.Set) *poly.Set {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	u := poly.Union(*a, *b)
	return &u
}

// sizesPositive returns the points of s where every size of the function
// is at least one.
func (v *validator) sizesPositive(s poly.Set) poly.Set {
	if len(s.Params) == 0 {
		return s
	}
	dims := make([]string, len(s.Dims))
	for i := range dims {
		dims[i] = fmt.Sprintf("d%d", i)
	}
	src := fmt.Sprintf("[%s] -> { [%s] : %s >= 1 }", strings.Join(s.Params, ", "), strings.Join(dims, ", "), strings.Join(s.Params, " >= 1 and "))
	ctx, err := poly.ParseSet(src)
	if err != nil {
		v.stats.note("outputs: sizes not positive: " + err.Error())
		return s
	}
	return poly.Intersect(s, ctx)
}

// writers returns the leaf blocks of p that write the buffer named name.
func writers(p *poly.Program, name string) []*poly.Instances {
	var out []*poly.Instances
	for _, in := range p.Blocks {
		if writes(in, name) {
			out = append(out, in)
		}
	}
	return out
}

// writersUnchanged reports whether the step kept the writers of a buffer
// as they were: the same blocks, each unchanged.
func (v *validator) writersUnchanged(wf, wg []*poly.Instances) bool {
	if len(wf) != len(wg) {
		return false
	}
	for i := range wf {
		if wf[i].Block.Name != wg[i].Block.Name || !v.unchanged[wf[i].Block.Name] {
			return false
		}
	}
	return true
}

// writtenCells returns the indices of the buffer named name that the
// blocks ins write, over the function's sizes, or nil when none does.
// exact is false when a domain or a write region is approximated.
func writtenCells(ins []*poly.Instances, name string) (cells *poly.Set, exact bool) {
	for _, in := range ins {
		if !in.ExactDomain {
			return nil, false
		}
		for _, w := range in.Writes {
			if w.Buffer.Name != name {
				continue
			}
			if !w.Exact {
				return nil, false
			}
			s := poly.Apply(in.Domain, w.Map)
			if cells != nil {
				s = poly.Union(*cells, s)
			}
			cells = &s
		}
	}
	return cells, true
}
