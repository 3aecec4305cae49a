package validate

import (
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// layouts asks the fifth question, of the temporary buffers whose shape the
// step changed (a new layout: transform_layout): the kept blocks still
// pass values through such a buffer between the same instances. Each
// dependence through it between two kept blocks relates the same pairs
// of iteration vectors before and after, whatever the kind (a read after a
// write, a write after a read or after a write). A map that puts two cells
// in one place adds pairs; a reader whose accesses went through another
// map than its writer's loses some.
func (v *validator) layouts() error {
	for _, name := range v.relaidOut() {
		before := v.pairsThrough(v.before, name)
		after := v.pairsThrough(v.after, name)
		if before == nil || after == nil {
			continue // a cautious dependence: noted, not judged
		}
		for key, a := range after {
			b, ok := before[key]
			if !ok {
				if !a.IsEmpty() {
					return &Error{Question: "layout", Block: key.sink, Reason: fmt.Sprintf("through %s in its new layout, block %s now depends on block %s (%s), which it did not before", name, key.sink, key.source, key.kind)}
				}
				continue
			}
			if v.subset(a, b) == no {
				return &Error{Question: "layout", Block: key.sink, Reason: fmt.Sprintf("through %s in its new layout, block %s depends on instances of block %s (%s) it did not depend on before: two cells share a place", name, key.sink, key.source, key.kind)}
			}
			if v.subset(b, a) == no {
				return &Error{Question: "layout", Block: key.sink, Reason: fmt.Sprintf("through %s in its new layout, block %s no longer depends on some instances of block %s (%s) it depended on: its accesses and the other block's went through different maps", name, key.sink, key.source, key.kind)}
			}
		}
		for key, b := range before {
			if _, ok := after[key]; !ok && !b.IsEmpty() {
				return &Error{Question: "layout", Block: key.sink, Reason: fmt.Sprintf("through %s in its new layout, block %s no longer depends on block %s (%s)", name, key.sink, key.source, key.kind)}
			}
		}
	}
	return nil
}

// depKey names the dependences of one kind between two blocks.
type depKey struct {
	kind         poly.DepKind
	source, sink string
}

// relaidOut returns the names of the buffers, parameters aside, that both
// functions access with different shapes.
func (v *validator) relaidOut() []string {
	shapes := func(p *poly.Program) map[string]*ast.Buffer {
		out := map[string]*ast.Buffer{}
		for _, in := range p.Blocks {
			for _, a := range append(append([]poly.Access(nil), in.Reads...), in.Writes...) {
				if !isParam(p.Func, a.Buffer) {
					out[a.Buffer.Name] = a.Buffer
				}
			}
		}
		return out
	}
	old := shapes(v.before)
	var names []string
	for name, nb := range shapes(v.after) {
		if ob, ok := old[name]; ok && !sameShape(ob, nb) {
			names = append(names, name)
		}
	}
	return names
}

func sameShape(a, b *ast.Buffer) bool {
	if a.Rank() != b.Rank() {
		return false
	}
	for i := range a.Shape {
		if !ast.Equal(a.Shape[i], b.Shape[i]) {
			return false
		}
	}
	return true
}

// pairsThrough returns the pairs of iteration vectors of the dependences
// through buffer name between kept blocks of p, by kind and blocks; nil
// when one of them is cautious (a superset).
func (v *validator) pairsThrough(p *poly.Program, name string) map[depKey]poly.Set {
	var blocks []*poly.Instances
	for _, in := range p.Blocks {
		if v.kept[in.Block.Name] && touches(in, name) {
			blocks = append(blocks, in)
		}
	}
	out := map[depKey]poly.Set{}
	for _, d := range p.DepsAmong(blocks) {
		if d.Buffer.Name != name {
			continue
		}
		if d.Cautious {
			v.stats.note("layout: cautious dependence")
			return nil
		}
		key := depKey{d.Kind, d.Source.Block.Name, d.Sink.Block.Name}
		pairs := d.IterationPairs().Wrap()
		if prev, ok := out[key]; ok {
			pairs = poly.Union(prev, pairs)
		}
		out[key] = pairs
	}
	return out
}

func touches(in *poly.Instances, name string) bool {
	for _, a := range append(append([]poly.Access(nil), in.Reads...), in.Writes...) {
		if a.Buffer.Name == name {
			return true
		}
	}
	return false
}
