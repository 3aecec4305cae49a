package fusion

import (
	"slices"

	"github.com/loom-go/loom/ast"
)

// foldAffine folds a per-channel affine chain after a convolution with
// constant weights into the weights: conv(x, W) followed by adds, subs
// and muls of per-channel constants (a decomposed batch_norm, a bias) is
// conv(x, W * a) + c, with a and c per output channel; the chain's last
// node becomes that add. A model's batch normalizations cost nothing at
// run time this way.
//
// Unlike simplify's rules this is not exact: the scale is applied to the
// weights before the sums, not to each sum, so results differ by a
// rounding (as in every framework that folds batch normalization).
func foldAffine(g *Graph) (bool, error) {
	consumers := g.Consumers()
	changed := false
	for _, conv := range slices.Clone(g.Nodes) {
		if !isConv(conv.Op) || layoutOf(conv).last || !conv.Inputs[1].IsConst() || !conv.Output.DType.IsFloat() || len(conv.Output.Shape) < 3 {
			continue
		}
		f, ok := conv.Output.Shape[1].IsConst()
		w := conv.Inputs[1]
		if !ok || f < 1 || len(w.Data)%int(f) != 0 {
			continue
		}
		// Walk the chain: y = conv * a + c.
		a, c := make([]float64, f), make([]float64, f)
		for k := range a {
			a[k] = 1
		}
		scaled := false
		last := conv
		t := conv.Output
		for {
			users := consumers[t]
			if len(users) != 1 || g.IsOutput(t) {
				break
			}
			n := users[0]
			if n.Op != "add" && n.Op != "sub" && n.Op != "mul" {
				break
			}
			other := n.Inputs[1]
			if n.Inputs[1] == t {
				if n.Op == "sub" {
					break // const - conv: not this pattern
				}
				other = n.Inputs[0]
			}
			if n.Inputs[0] == n.Inputs[1] {
				break
			}
			v, ok := perChannel(other, conv.Output.Shape, int(f))
			if !ok || other.DType != t.DType || !n.Output.Shape.Equal(t.Shape) {
				break
			}
			for k := range a {
				switch n.Op {
				case "add":
					c[k] += v[k]
				case "sub":
					c[k] -= v[k]
				case "mul":
					a[k] *= v[k]
					c[k] *= v[k]
				}
			}
			scaled = scaled || n.Op == "mul"
			last, t = n, n.Output
		}
		if !scaled {
			continue // only shifts: the add the chain is already costs as much
		}
		// The new weights, and the chain's last node as conv' + c.
		per := len(w.Data) / int(f)
		data := make([]float64, len(w.Data))
		for i, x := range w.Data {
			data[i] = x * a[i/per]
		}
		if !allValues(w.DType, data) || !allValues(conv.Output.DType, c) {
			continue // a scale that overflows the weights' type: left as it is
		}
		nw := &Tensor{Name: g.freshName(w.Name + "_folded"), DType: w.DType, Shape: slices.Clone(w.Shape), Data: roundTo(w.DType, data)}
		g.Constants = append(g.Constants, nw)
		conv.Inputs = []*Tensor{conv.Inputs[0], nw}
		shift := make(Shape, len(conv.Output.Shape)-1)
		shift[0] = Const(f)
		for k := 1; k < len(shift); k++ {
			shift[k] = Const(1)
		}
		nc := &Tensor{Name: g.freshName(conv.Output.Name + "_shift"), DType: conv.Output.DType, Shape: shift, Data: roundTo(conv.Output.DType, c)}
		g.Constants = append(g.Constants, nc)
		last.Op, last.Inputs, last.Attrs = "add", []*Tensor{conv.Output, nc}, Attrs{}
		changed = true
		consumers = g.Consumers()
	}
	return changed, nil
}

func isConv(op string) bool { return op == "conv1d" || op == "conv2d" || op == "conv3d" }

// perChannel returns the values of constant t over the channels (axis 1)
// of a tensor of shape out: t broadcasts to out and varies at most along
// the channel axis.
func perChannel(t *Tensor, out Shape, f int) ([]float64, bool) {
	if !t.IsConst() || len(t.Shape) > len(out) {
		return nil, false
	}
	if v, ok := t.Splat(); ok {
		vals := make([]float64, f)
		for k := range vals {
			vals[k] = v
		}
		return vals, true
	}
	// Aligned to the right: the channel axis of t is out's axis 1.
	ch := 1 - (len(out) - len(t.Shape))
	if ch < 0 || len(t.Data) != f {
		return nil, false
	}
	for k, d := range t.Shape {
		v, ok := d.IsConst()
		if !ok || (k == ch && v != int64(f)) || (k != ch && v != 1) {
			return nil, false
		}
	}
	return t.Data, true
}

// allValues reports whether every element is a value of dt (a finite one
// does not overflow it).
func allValues(dt ast.DType, data []float64) bool {
	for _, v := range data {
		if valueError(dt, v) != "" {
			return false
		}
	}
	return true
}

// roundTo rounds each element to dt, as a constant of dt holds it.
func roundTo(dt ast.DType, data []float64) []float64 {
	return ast.Float64s(dt, ast.DataOf(dt, data))
}
