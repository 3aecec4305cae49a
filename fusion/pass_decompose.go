package fusion

import "math"

// decompose replaces composite operators by primitive ones, so that
// fusion sees reductions and element-wise work separately:
//
//	softmax(x)        = e / reduce_sum(e), e = exp(x - reduce_max(x))
//	layernorm(x, g, b) = (x - mean) * rsqrt(mean((x - mean)²) + eps) * g + b
//	rms_norm(x, w)    = x * rsqrt(mean(x²) + eps) * w
//	gelu(x)           = x * 0.5 * (1 + erf(x / √2))
//	gelu(x), tanh form = x * 0.5 * (1 + tanh(√(2/π) (x + 0.044715 x³)))
//	batch_norm(x, s, b, m, v) = (x - m) * (rsqrt(v + eps) * s) + b, per channel
//
// Reductions keep their dims, so the results broadcast back over x. The
// composite's output tensor stays, computed by the last primitive.
func decompose(g *Graph) (bool, error) {
	var out []*Node
	changed := false
	for _, n := range g.Nodes {
		if ops[n.Op].kind != Composite {
			out = append(out, n)
			continue
		}
		changed = true
		out = append(out, g.expand(n)...)
	}
	g.Nodes = out
	return changed, nil
}

// expand returns the primitive nodes of composite n, the last one
// computing n's output.
func (g *Graph) expand(n *Node) []*Node {
	x, y := n.Inputs[0], n.Output
	r := len(x.Shape)
	var nodes []*Node
	base := y.Name
	add := func(suffix, op string, a Attrs, in ...*Tensor) *Tensor {
		m := g.newNode(base+"_"+suffix, op, a, in...)
		nodes = append(nodes, m)
		// Give the tensor its dtype now: later constants are typed by it.
		m.Output.DType = x.DType
		return m.Output
	}
	eps := func(def float64) *Tensor {
		v := def
		if n.Attrs.Epsilon != nil {
			v = *n.Attrs.Epsilon
		}
		return g.scalar(base+"_eps", *x, v)
	}
	axisFrom := func() int {
		a := -1
		if n.Attrs.Axis != nil {
			a = *n.Attrs.Axis
		}
		if a < 0 {
			a += r
		}
		return a
	}
	tail := func(from int) []int {
		var axes []int
		for k := from; k < r; k++ {
			axes = append(axes, k)
		}
		return axes
	}
	var last *Node
	switch n.Op {
	case "softmax":
		keep := Attrs{Axes: []int{axisFrom()}, KeepDims: true}
		m := add("max", "reduce_max", keep, x)
		e := add("exp", "exp", Attrs{}, add("sub", "sub", Attrs{}, x, m))
		s := add("sum", "reduce_sum", keep, e)
		last = &Node{Op: "div", Inputs: []*Tensor{e, s}}
	case "layernorm":
		keep := Attrs{Axes: tail(axisFrom()), KeepDims: true}
		mean := add("mean", "reduce_mean", keep, x)
		xc := add("centered", "sub", Attrs{}, x, mean)
		v := add("var", "reduce_mean", keep, add("sq", "mul", Attrs{}, xc, xc))
		rs := add("rstd", "rsqrt", Attrs{}, add("var_eps", "add", Attrs{}, v, eps(1e-5)))
		if len(n.Inputs) == 1 {
			last = &Node{Op: "mul", Inputs: []*Tensor{xc, rs}}
			break
		}
		norm := add("norm", "mul", Attrs{}, xc, rs)
		if len(n.Inputs) == 2 {
			last = &Node{Op: "mul", Inputs: []*Tensor{norm, n.Inputs[1]}}
			break
		}
		last = &Node{Op: "add", Inputs: []*Tensor{add("scaled", "mul", Attrs{}, norm, n.Inputs[1]), n.Inputs[2]}}
	case "rms_norm":
		keep := Attrs{Axes: []int{r - 1}, KeepDims: true}
		ms := add("ms", "reduce_mean", keep, add("sq", "mul", Attrs{}, x, x))
		rs := add("rrms", "rsqrt", Attrs{}, add("ms_eps", "add", Attrs{}, ms, eps(1e-6)))
		if len(n.Inputs) == 1 {
			last = &Node{Op: "mul", Inputs: []*Tensor{x, rs}}
			break
		}
		last = &Node{Op: "mul", Inputs: []*Tensor{add("norm", "mul", Attrs{}, x, rs), n.Inputs[1]}}
	case "gelu":
		half := g.scalar(base+"_half", *x, 0.5)
		one := g.scalar(base+"_one", *x, 1)
		var curve *Tensor
		if n.Attrs.Approximate == "tanh" {
			c := g.scalar(base+"_c", *x, 0.044715)
			k := g.scalar(base+"_k", *x, math.Sqrt(2/math.Pi))
			cube := add("cube", "mul", Attrs{}, add("sq", "mul", Attrs{}, x, x), x)
			inner := add("inner", "add", Attrs{}, x, add("cubic", "mul", Attrs{}, cube, c))
			curve = add("tanh", "tanh", Attrs{}, add("scaled", "mul", Attrs{}, inner, k))
		} else {
			invSqrt2 := g.scalar(base+"_rsqrt2", *x, 1/math.Sqrt2)
			curve = add("erf", "erf", Attrs{}, add("scaled", "mul", Attrs{}, x, invSqrt2))
		}
		last = &Node{Op: "mul", Inputs: []*Tensor{add("half", "mul", Attrs{}, x, half), add("erf1", "add", Attrs{}, curve, one)}}
	case "batch_norm":
		// The per-channel parameters, [C], broadcast over x as [C, 1...].
		shape := []JSONDim{{Dim: x.Shape[1]}}
		for k := 2; k < r; k++ {
			shape = append(shape, JSONDim{Dim: Const(1)})
		}
		ch := func(j int) *Tensor {
			return add(bnInputs[j]+"_c", "reshape", Attrs{Shape: shape}, n.Inputs[j])
		}
		rs := add("rstd", "rsqrt", Attrs{}, add("var_eps", "add", Attrs{}, ch(4), eps(1e-5)))
		scale := add("scale", "mul", Attrs{}, rs, ch(1))
		norm := add("norm", "mul", Attrs{}, add("centered", "sub", Attrs{}, x, ch(3)), scale)
		last = &Node{Op: "add", Inputs: []*Tensor{norm, ch(2)}}
	}
	last.Output = y
	y.Producer = last
	return append(nodes, last)
}
