package fusion

import "slices"

// unstride rewrites a convolution with a 1x1 window (no padding) and a
// stride above 1 into a slice of its input with that stride, then the same
// convolution with stride 1:
//
//	conv(x, w; strides s)  =  conv(x[:, :, ::s, ::s], w; strides 1)
//
// exactly, since a 1x1 window reads one input pixel per output pixel. The
// slice is a kernel of data movement (it reads the image once); the
// convolution after it reads its input in rows as the output runs, which a
// vectorized loop loads whole, where the strided one loaded every other
// element (ResNet-50's downsampling convolutions: a quarter of the input
// read, at a stride of 2, by every vector of every register tile).
// Spatial extents that are not constants are left alone.
func unstride(g *Graph) (bool, error) {
	var out []*Node
	changed := false
	for _, n := range g.Nodes {
		if s := stridedPointwise(g, n); s != nil {
			changed = true
			out = append(out, s)
			n.Inputs[0] = s.Output
			n.Attrs.Strides = make([]int64, len(n.Attrs.Strides))
			for k := range n.Attrs.Strides {
				n.Attrs.Strides[k] = 1
			}
		}
		out = append(out, n)
	}
	g.Nodes = out
	return changed, nil
}

// stridedPointwise returns the slice node that takes conv node n's
// stride, or nil when n is no convolution with a 1x1 window, no padding
// and some stride above 1 over spatial extents of known size.
func stridedPointwise(g *Graph, n *Node) *Node {
	switch n.Op {
	case "conv1d", "conv2d", "conv3d":
	default:
		return nil
	}
	x, w := n.Inputs[0], n.Inputs[1]
	rank := len(x.Shape) - 2
	a := n.Attrs
	if rank < 1 || len(w.Shape) != rank+2 || len(a.Strides) != rank {
		return nil
	}
	if !slices.ContainsFunc(a.Strides, func(s int64) bool { return s > 1 }) || slices.ContainsFunc(a.Pads, func(p int64) bool { return p != 0 }) {
		return nil
	}
	y := layoutOf(n)
	var axes []int
	var starts, ends []int64
	for k := 0; k < rank; k++ {
		if taps, ok := w.Shape[y.tap(k)].IsConst(); !ok || taps != 1 {
			return nil
		}
		ext, ok := x.Shape[y.spatial(k)].IsConst()
		if !ok {
			return nil
		}
		axes, starts, ends = append(axes, y.spatial(k)), append(starts, 0), append(ends, ext)
	}
	s := g.newNode(n.Output.Name+"_pixels", "slice", Attrs{Axes: axes, Starts: starts, Ends: ends, Steps: slices.Clone(a.Strides)}, x)
	s.Output.DType = x.DType
	return s
}
