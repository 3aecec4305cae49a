package fusion

import (
	"math"
)

// rule is one algebraic simplification of a node with operator op. apply
// returns a tensor that equals the node's output exactly (same dtype,
// shape and every bit of every element), or rewrites the node in place
// and reports it, or does nothing.
type rule struct {
	name  string
	op    string
	apply func(g *Graph, n *Node) (replace *Tensor, rewrote bool)
}

// rules are the simplifications; only identities exact in the node's
// dtype are here (x + 0 is not exact for floats: -0 + 0 is +0).
var rules = [...]rule{
	// Arithmetic identities.
	{name: "add-zero", op: "add", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		return identityOperand(n, func(v float64, float bool) bool { return v == 0 && (!float || math.Signbit(v)) }, true)
	}},
	{name: "sub-zero", op: "sub", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		return identityOperand(n, func(v float64, float bool) bool { return v == 0 && !math.Signbit(v) }, false)
	}},
	{name: "mul-one", op: "mul", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		return identityOperand(n, func(v float64, _ bool) bool { return v == 1 }, true)
	}},
	{name: "div-one", op: "div", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		return identityOperand(n, func(v float64, _ bool) bool { return v == 1 }, false)
	}},
	{name: "mul-zero-int", op: "mul", apply: mulZero},
	{name: "neg-neg", op: "neg", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		if p := n.Inputs[0].Producer; p != nil && p.Op == "neg" {
			return p.Inputs[0], false
		}
		return nil, false
	}},
	// Data movement.
	{name: "identity", op: "identity", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		if g.IsOutput(n.Output) {
			return nil, false
		}
		return n.Inputs[0], false
	}},
	{name: "cast-same", op: "cast", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		return sameAsInput(n)
	}},
	{name: "broadcast-same", op: "broadcast_to", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		return sameAsInput(n)
	}},
	{name: "reshape-same", op: "reshape", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		return sameAsInput(n)
	}},
	{name: "reshape-reshape", op: "reshape", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		if p := n.Inputs[0].Producer; p != nil && p.Op == "reshape" {
			n.Inputs[0] = p.Inputs[0]
			return nil, true
		}
		return nil, false
	}},
	{name: "transpose-transpose", op: "transpose", apply: func(g *Graph, n *Node) (*Tensor, bool) {
		p := n.Inputs[0].Producer
		if p == nil || p.Op != "transpose" {
			return nil, false
		}
		inner, outer := perm(p), perm(n)
		q := make([]int, len(outer))
		for k := range q {
			q[k] = inner[outer[k]]
		}
		if isIdentityPerm(q) {
			return p.Inputs[0], false
		}
		n.Inputs[0], n.Attrs.Perm = p.Inputs[0], q
		return nil, true
	}},
}

// identityOperand returns the other operand when one operand is a splat
// constant e with isE(e) and the result has the other operand's shape
// and dtype; commutative says whether e may be the first operand.
func identityOperand(n *Node, isE func(v float64, float bool) bool, commutative bool) (*Tensor, bool) {
	for k, c := range n.Inputs {
		if k == 0 && !commutative {
			continue
		}
		v, ok := c.Splat()
		x := n.Inputs[1-k]
		if ok && isE(v, c.DType.IsFloat()) && x.Shape.Equal(n.Output.Shape) && x.DType == n.Output.DType {
			return x, false
		}
	}
	return nil, false
}

// mulZero turns an integer x * 0 into a broadcast of the zero, so x is
// no longer needed.
func mulZero(g *Graph, n *Node) (*Tensor, bool) {
	if !n.Output.DType.IsInt() {
		return nil, false
	}
	for _, c := range n.Inputs {
		if v, ok := c.Splat(); ok && v == 0 {
			if c.Shape.Equal(n.Output.Shape) {
				return c, false
			}
			var shape []JSONDim
			for _, d := range n.Output.Shape {
				shape = append(shape, JSONDim{Dim: d, Sym: d.String()})
			}
			n.Op, n.Inputs, n.Attrs = "broadcast_to", []*Tensor{c}, Attrs{Shape: shape}
			return nil, true
		}
	}
	return nil, false
}

func sameAsInput(n *Node) (*Tensor, bool) {
	x := n.Inputs[0]
	if x.DType == n.Output.DType && x.Shape.Equal(n.Output.Shape) {
		return x, false
	}
	return nil, false
}

func perm(n *Node) []int {
	if n.Attrs.Perm != nil {
		return n.Attrs.Perm
	}
	r := len(n.Output.Shape)
	p := make([]int, r)
	for k := range p {
		p[k] = r - 1 - k
	}
	return p
}

func isIdentityPerm(p []int) bool {
	for k, v := range p {
		if k != v {
			return false
		}
	}
	return true
}
