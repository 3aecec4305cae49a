package fusion

import "slices"

// The rows pass runs element-wise nodes on the rows of a matrix product
// that a reshape only regroups. An importer computes a [1, T, K] x [K, N]
// product (ONNX's MatMul of a transformer's activations by a weight) as
// the product of its rows, [T, K] x [K, N], then reshapes the result back
// to [1, T, N]; the bias and the activation that follow (add, GELU) then
// see the reshape, not the product, and ran as a kernel of their own,
// writing and reading the whole [T, N] result once more. Moved before the
// reshape, they take the product's shape and fuse with it as its
// epilogue; the reshape then meets the next product's reshape to rows,
// and the two fold away (rules.go).
func rowsPass(g *Graph) (bool, error) {
	changed := false
	var out []*Node
	for _, n := range g.Nodes {
		rows := onRows(g, n)
		if rows == nil {
			out = append(out, n)
			continue
		}
		out = append(out, rows...)
		changed = true
	}
	g.Nodes = out
	return changed, nil
}

// onRows returns element-wise node n computed on the rows of a product
// (the new nodes, n last, turned into a reshape of the result), or nil
// where n is not such a node: some operand must be a reshape of the
// result of a matrix product or of an element-wise node that keeps the
// last axis ([R, N] to [..., N] of as many elements), with n's result of
// that operand's shape; the other operands must be scalars, tensors
// broadcast along the last axis only ([1, ..., 1, N] or [..., 1]), or
// reshapes of the same kind of [R, N] tensors. A tensor of the whole
// shape (a residual) would be read through a view that another kernel may
// share, which the plan then copies, unless a transpose that moves the
// innermost axis computes it (the layout pass's conversion of a graph
// input), a kernel of its own whose rows are a view of its buffer; and a
// graph output would need its reshape copied back: those stay.
func onRows(g *Graph, n *Node) []*Node {
	if ops[n.Op].kind != Elementwise || len(n.Output.Shape) < 2 || slices.Contains(g.Outputs, n.Output) {
		return nil
	}
	shape := n.Output.Shape
	var rowShape Shape
	for _, in := range n.Inputs {
		if m := regrouped(in, shape); m != nil {
			rowShape = m.Shape
			if p := m.Producer; p != nil && (p.Op == "matmul" || ops[p.Op].kind == Elementwise) {
				break
			}
			rowShape = nil
		}
	}
	if rowShape == nil {
		return nil
	}
	var added []*Node
	inputs := make([]*Tensor, len(n.Inputs))
	for k, in := range n.Inputs {
		switch m := regrouped(in, shape); {
		case m != nil && m.Shape.Equal(rowShape):
			inputs[k] = m
		case len(in.Shape) <= 1:
			inputs[k] = in // a scalar, or [N] or [1]: broadcast as it is
		case alongLastOnly(in.Shape, len(shape)):
			// [1, ..., 1, N] or [1, ..., 1]: the same elements as [N] or [1].
			row := Shape{in.Shape[len(in.Shape)-1]}
			if in.IsConst() {
				c := &Tensor{Name: g.freshName(in.Name + "_row"), DType: in.DType, Shape: row, Data: in.Data}
				g.Constants = append(g.Constants, c)
				inputs[k] = c
				continue
			}
			inputs[k] = viewAs(g, in, row, &added)
		case in.Shape.Equal(shape) && in.Producer != nil && movesInnermostAxis(in.Producer):
			// A residual that a transpose computes (the layout
			// pass's of a graph input) has a buffer of its own:
			// its rows are a view of it.
			inputs[k] = viewAs(g, in, rowShape, &added)
		default:
			return nil
		}
	}
	e := g.newNode(n.Output.Name+"_rows", n.Op, n.Attrs.clone(), inputs...)
	// Its shape now, for the next node of a chain (Infer checks it).
	e.Output.DType, e.Output.Shape = n.Output.DType, rowShape
	dims := make([]JSONDim, len(shape))
	for k, d := range shape {
		dims[k] = JSONDim{Dim: d}
	}
	n.Op, n.Inputs, n.Attrs = "reshape", []*Tensor{e.Output}, Attrs{Shape: dims}
	return append(added, e, n)
}

// viewAs appends to added a reshape of t to shape s and returns its
// result.
func viewAs(g *Graph, t *Tensor, s Shape, added *[]*Node) *Tensor {
	dims := make([]JSONDim, len(s))
	for k, d := range s {
		dims[k] = JSONDim{Dim: d}
	}
	re := g.newNode(t.Name+"_rows", "reshape", Attrs{Shape: dims}, t)
	re.Output.DType, re.Output.Shape = t.DType, s
	*added = append(*added, re)
	return re.Output
}

// regrouped returns the tensor t reshapes when that reshape keeps the
// last axis and gives t the shape want ([R, N] seen as [..., N]); nil
// otherwise.
func regrouped(t *Tensor, want Shape) *Tensor {
	p := t.Producer
	if p == nil || p.Op != "reshape" || !t.Shape.Equal(want) {
		return nil
	}
	m := p.Inputs[0]
	if len(m.Shape) != 2 || !m.Shape[1].Equal(want[len(want)-1]) {
		return nil
	}
	return m
}

// alongLastOnly reports whether a tensor of shape s, broadcast to rank
// rank, varies along the last axis only: every other dimension is 1.
func alongLastOnly(s Shape, rank int) bool {
	if len(s) > rank {
		return false
	}
	return !slices.ContainsFunc(s[:len(s)-1], func(d Dim) bool { return !isOne(d) })
}
