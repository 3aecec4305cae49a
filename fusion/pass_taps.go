package fusion

import "slices"

// deadTaps drops the taps of a 2-d convolution that read only its
// padding: with constant weights and image sizes, a row (or column) of
// the window that lands outside the image at every output position
// multiplies zeros only. The convolution keeps the taps between the first
// and the last that read the image, with its padding less the rows or
// columns it no longer reaches (the weights sliced once, here). DeepLabV3's
// atrous pyramid runs 3x3 convolutions dilated by 24 and 36 over a 14x14
// map: only the centre tap reads the image, so they are 1x1 convolutions
// (a matrix product in NHWC) that read no padded copy of 86x86 pixels.
func deadTaps(g *Graph) (bool, error) {
	changed := false
	for _, n := range g.Nodes {
		if n.Op != "conv2d" || len(n.Inputs) < 2 || !n.Inputs[1].IsConst() || len(n.Inputs[0].Shape) != 4 || len(n.Inputs[1].Shape) != 4 {
			continue
		}
		geo, err := (&inferCtx{n: n}).windowAttrs(2)
		if err != nil {
			continue
		}
		var keep [2][2]int64 // per spatial axis, the first and last tap that reads the image
		var taps [2]int64
		narrower := false
		ok := true
		for d := range 2 {
			size, c1 := n.Inputs[0].Shape[2+d].IsConst()
			k, c2 := n.Inputs[1].Shape[2+d].IsConst()
			out, c3 := n.Output.Shape[2+d].IsConst()
			if !c1 || !c2 || !c3 || out <= 0 {
				ok = false
				break
			}
			first, last := int64(-1), int64(-1)
			for t := range k {
				// Output o reads input o*stride - pad + t*dilation.
				if readsImage(t*geo.dilations[d]-geo.pads[d], geo.strides[d], out, size) {
					if first < 0 {
						first = t
					}
					last = t
				}
			}
			if first < 0 {
				ok = false // every tap reads padding: left to the convolution as it is
				break
			}
			keep[d] = [2]int64{first, last}
			taps[d] = k
			narrower = narrower || first > 0 || last < k-1
		}
		if !ok || !narrower {
			continue
		}
		pads := slices.Clone(geo.pads)
		for d := range 2 {
			pads[d] -= keep[d][0] * geo.dilations[d]
			pads[2+d] -= (taps[d] - 1 - keep[d][1]) * geo.dilations[d]
		}
		if slices.ContainsFunc(pads, func(p int64) bool { return p < 0 }) {
			continue // the kept taps would read before the image: a slice, not a padding
		}
		w := n.Inputs[1]
		f, _ := w.Shape[0].IsConst()
		c, _ := w.Shape[1].IsConst()
		kh, kw := keep[0][1]-keep[0][0]+1, keep[1][1]-keep[1][0]+1
		data := make([]float64, 0, f*c*kh*kw)
		for o := range f * c {
			for y := keep[0][0]; y <= keep[0][1]; y++ {
				row := (o*taps[0] + y) * taps[1]
				data = append(data, w.Data[row+keep[1][0]:row+keep[1][1]+1]...)
			}
		}
		nw := &Tensor{Name: g.freshName(w.Name + "_taps"), DType: w.DType, Shape: Shape{Const(f), Const(c), Const(kh), Const(kw)}, Data: data}
		g.Constants = append(g.Constants, nw)
		n.Inputs = slices.Clone(n.Inputs)
		n.Inputs[1] = nw
		n.Attrs = n.Attrs.clone()
		n.Attrs.Pads = pads
		changed = true
	}
	return changed, nil
}

// readsImage reports whether some output o in [0, out) reads an input
// row lo + o*stride inside [0, size).
func readsImage(lo, stride, out, size int64) bool {
	if lo >= 0 {
		return lo < size
	}
	// The first o with lo + o*stride >= 0.
	o := (-lo + stride - 1) / stride
	return o < out && lo+o*stride < size
}
