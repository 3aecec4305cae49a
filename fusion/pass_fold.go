package fusion

import (
	"errors"
	"slices"

	"github.com/loom-go/loom/ast"
)

// foldLimit bounds the elements of a constant that folding creates.
const foldLimit = 1 << 16

// fold evaluates nodes whose inputs are all constants, with the
// interpreter (so folding computes exactly what the kernel would), and
// turns their outputs into constants. Outputs of the graph stay computed;
// results of more than foldLimit elements are left alone.
func fold(g *Graph) (bool, error) {
	changed := false
	var keep []*Node
	for _, n := range g.Nodes {
		if data, ok := moveConst(g, n); ok {
			// A model's weights reshaped or transposed: moved once here,
			// whatever their size.
			t := n.Output
			t.Producer, t.Data = nil, data
			g.Constants = append(g.Constants, t)
			changed = true
			continue
		}
		if !foldable(g, n) {
			keep = append(keep, n)
			continue
		}
		data, err := evalConst(n)
		if err != nil {
			keep = append(keep, n) // left for the kernel to compute (and report)
			continue
		}
		t := n.Output
		t.Producer, t.Data = nil, data
		g.Constants = append(g.Constants, t)
		changed = true
	}
	g.Nodes = keep
	return changed, nil
}

// moveConst computes a reshape, transpose or identity of a constant of
// any size: the same elements, in the same order or permuted.
func moveConst(g *Graph, n *Node) ([]float64, bool) {
	if g.IsOutput(n.Output) || len(n.Inputs) != 1 || !n.Inputs[0].IsConst() {
		return nil, false
	}
	in := n.Inputs[0]
	switch n.Op {
	case "reshape", "identity":
		return in.Data, true // shared: constants' data is never written
	case "transpose":
		return transposeData(in.Data, in.Shape, perm(n))
	}
	return nil, false
}

// transposeData permutes the elements of a tensor of shape shape, in
// row-major order, as transpose with perm p does; ok is false when the
// shape is not constant or p is not of its rank.
func transposeData(data []float64, shape Shape, p []int) (out []float64, ok bool) {
	dims := make([]int64, len(shape))
	for a, d := range shape {
		v, ok := d.IsConst()
		if !ok {
			return nil, false
		}
		dims[a] = v
	}
	if len(p) != len(dims) {
		return nil, false
	}
	src := make([]int64, len(dims)) // input strides
	stride := int64(1)
	for a := len(dims) - 1; a >= 0; a-- {
		src[a] = stride
		stride *= dims[a]
	}
	out = make([]float64, len(data))
	idx := make([]int64, len(p)) // the output index, last fastest
	for e := range out {
		off := int64(0)
		for a, q := range p {
			off += idx[a] * src[q]
		}
		out[e] = data[off]
		for a := len(p) - 1; a >= 0; a-- {
			if idx[a]++; idx[a] < dims[p[a]] {
				break
			}
			idx[a] = 0
		}
	}
	return out, true
}

func foldable(g *Graph, n *Node) bool {
	if g.IsOutput(n.Output) || len(n.Inputs) == 0 {
		return false
	}
	for _, in := range n.Inputs {
		if !in.IsConst() {
			return false
		}
	}
	elems, err := n.Output.Shape.Elems()
	if err != nil {
		return false
	}
	v, ok := elems.IsConst()
	return ok && v > 0 && v <= foldLimit
}

// evalConst computes a node of constant inputs.
func evalConst(n *Node) ([]float64, error) {
	mini := &Graph{Name: "fold", Nodes: []*Node{n}, Outputs: []*Tensor{n.Output}}
	for _, in := range n.Inputs {
		if !slices.Contains(mini.Constants, in) {
			mini.Constants = append(mini.Constants, in)
		}
	}
	p, err := newPlan(mini, []*group{{nodes: []*Node{n}, kind: groupKind(n)}})
	if err != nil {
		return nil, err
	}
	out, err := p.Interpret(nil, nil)
	if err != nil {
		return nil, err
	}
	if d, ok := out[n.Output.Name].([]int64); ok {
		for _, v := range d {
			if v > 1<<53 || v < -(1<<53) {
				return nil, errInexact // a float64 would not hold it exactly
			}
		}
	}
	return ast.Float64s(n.Output.DType, out[n.Output.Name]), nil
}

var errInexact = errors.New("fusion: fold: an int64 result beyond 2^53")
