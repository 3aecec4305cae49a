package fusion

import (
	"fmt"
	"slices"
)

// concatLast moves element-wise work on a concat's result onto its
// inputs: e(concat(x0, x1, ...), w) becomes concat(e(x0, w0), e(x1, w1),
// ...), with w0, w1, ... the slices of each other operand along the
// concat's axis (a constant sliced now; one broadcast along that axis
// stays whole), for an element-wise node e that is the concat's only
// reader and keeps its shape. It repeats down the chain, so that a
// batch norm and an activation after a concat (DenseNet's every layer:
// the features so far joined, normalized, rectified) run on each input
// as it is written into its slice of the joined tensor (the lowering's
// concatParts), instead of selecting among the inputs for every element:
// DenseNet-121 spent 118 of its 168 ms selecting among up to 24 inputs.
func concatLast(g *Graph) (bool, error) {
	// Readers that no output needs (the layout pass's transposes back,
	// until dce) do not count.
	live := liveTensors(g)
	readers := map[*Tensor][]*Node{}
	for _, n := range g.Nodes {
		if !live[n.Output] {
			continue
		}
		for _, in := range n.Inputs {
			readers[in] = append(readers[in], n)
		}
	}
	// New nodes join g.Nodes when the pass ends: their names are
	// checked here until then.
	taken := map[string]bool{}
	fresh := func(base string) string {
		name := base
		for k := 1; taken[name] || g.Tensor(name) != nil; k++ {
			name = fmt.Sprintf("%s%d", base, k)
		}
		taken[name] = true
		return name
	}
	changed := false
	var out []*Node
	placed := map[*Node]bool{} // the nodes in out so far
	ready := func(t *Tensor) bool { return t.Producer == nil || placed[t.Producer] }
	for _, n := range g.Nodes {
		placed[n] = true
		if n.Op != "concat" {
			out = append(out, n)
			continue
		}
		// n stays (dce drops it once nothing reads it); each element-wise
		// reader it absorbs becomes a concat of parts appended after
		// them, in the reader's place.
		out = append(out, n)
		c := n
		for {
			e := soleReader(readers, c.Output)
			if e == nil || g.IsOutput(c.Output) || ops[e.Op].kind != Elementwise || !e.Output.Shape.Equal(c.Output.Shape) {
				break
			}
			operands, ok := sliceOperands(g, e, c)
			if !ok || slices.ContainsFunc(e.Inputs, func(t *Tensor) bool { return t != c.Output && !ready(t) }) {
				break // (the parts go here, before what e reads besides)
			}
			var parts []*Tensor
			for k, ins := range operands {
				p := g.newNode(e.Output.Name, e.Op, e.Attrs.clone(), ins...)
				p.Output.Name = fresh(e.Output.Name + "_part")
				p.Output.DType = e.Output.DType
				p.Output.Shape = c.Inputs[k].Shape
				for _, in := range ins {
					readers[in] = append(readers[in], p)
				}
				out = append(out, p)
				placed[p] = true
				parts = append(parts, p.Output)
			}
			// e is computed later in g.Nodes: its place in out comes
			// when the loop reaches it; here it only changes.
			e.Op, e.Inputs, e.Attrs = "concat", parts, c.Attrs.clone()
			for _, p := range parts {
				readers[p] = []*Node{e}
			}
			readers[c.Output] = nil
			changed = true
			c = e
		}
	}
	g.Nodes = out
	return changed, nil
}

// soleReader returns the one node that reads t, once; nil if none or
// more.
func soleReader(readers map[*Tensor][]*Node, t *Tensor) *Node {
	rs := readers[t]
	if len(rs) != 1 {
		return nil
	}
	reads := 0
	for _, in := range rs[0].Inputs {
		if in == t {
			reads++
		}
	}
	if reads != 1 {
		return nil
	}
	return rs[0]
}

// sliceOperands returns e's operands for each input of concat c, whose
// result e reads: that input in c's place, each other operand as it is
// where it is broadcast along c's axis (a scalar, or of extent 1 there),
// or the slice of it a constant holds there. ok is false where an
// operand is neither, or an extent along the axis is not a constant.
func sliceOperands(g *Graph, e, c *Node) ([][]*Tensor, bool) {
	ax, rank := concatAxis(c), len(c.Output.Shape)
	if ax < 0 || ax >= rank {
		return nil, false
	}
	total, ok := c.Output.Shape[ax].IsConst()
	if !ok {
		return nil, false
	}
	parts := make([][]*Tensor, len(c.Inputs))
	var from int64
	for k, x := range c.Inputs {
		n, ok := x.Shape[ax].IsConst()
		if !ok {
			return nil, false
		}
		for _, t := range e.Inputs {
			switch a := ax - (rank - len(t.Shape)); {
			case t == c.Output:
				parts[k] = append(parts[k], x)
			case a < 0 || isOne(t.Shape[a]):
				parts[k] = append(parts[k], t)
			case t.IsConst():
				data, ok := sliceData(t, a, total, from, n)
				if !ok {
					return nil, false
				}
				shape := slices.Clone(t.Shape)
				shape[a] = Const(n)
				s := &Tensor{Name: g.freshName(t.Name + "_part"), DType: t.DType, Shape: shape, Data: data}
				g.Constants = append(g.Constants, s)
				parts[k] = append(parts[k], s)
			default:
				return nil, false
			}
		}
		from += n
	}
	return parts, true
}

// sliceData returns the elements of constant t whose index along axis a
// (of extent total) is in [from, from+n).
func sliceData(t *Tensor, a int, total, from, n int64) ([]float64, bool) {
	if ext, ok := t.Shape[a].IsConst(); !ok || ext != total {
		return nil, false
	}
	inner := int64(1)
	for _, d := range t.Shape[a+1:] {
		v, ok := d.IsConst()
		if !ok {
			return nil, false
		}
		inner *= v
	}
	if int64(len(t.Data))%(total*inner) != 0 {
		return nil, false
	}
	outer := int64(len(t.Data)) / (total * inner)
	out := make([]float64, 0, outer*n*inner)
	for o := range outer {
		at := (o*total + from) * inner
		out = append(out, t.Data[at:at+n*inner]...)
	}
	return out, true
}
