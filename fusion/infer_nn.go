package fusion

import (
	"fmt"
	"strings"
)

// The shapes of the neural-network operators: convolutions and pooling
// over 1 to 3 spatial axes (NC followed by the spatial axes), pad,
// gather and batch_norm.

// spatialRank is the number of spatial axes of a convolution or pooling
// operator, from its name.
func spatialRank(op string) int {
	switch {
	case strings.HasPrefix(op, "conv1d"):
		return 1
	case strings.HasPrefix(op, "conv3d"):
		return 3
	}
	return 2
}

// window is the geometry of a convolution's or a pooling's window along
// its spatial axes, with the attributes' defaults.
type window struct {
	strides, dilations []int64
	pads               []int64 // the begins of every axis, then the ends
	groups             int64
}

// windowAttrs reads strides, dilations, pads and groups for s spatial
// axes.
func (c *inferCtx) windowAttrs(s int) (window, error) {
	a := c.n.Attrs
	g := window{strides: ones(s), dilations: ones(s), pads: make([]int64, 2*s), groups: 1}
	for _, f := range []struct {
		name string
		v    []int64
		dst  []int64
		lo   int64
	}{{"strides", a.Strides, g.strides, 1}, {"dilations", a.Dilations, g.dilations, 1}, {"pads", a.Pads, g.pads, 0}} {
		if f.v == nil {
			continue
		}
		if len(f.v) != len(f.dst) {
			return g, c.errf("attrs."+f.name, "%s needs %d entries for %d spatial axes, got %d", f.name, len(f.dst), s, len(f.v))
		}
		for k, x := range f.v {
			if x < f.lo || x > 1<<20 {
				return g, c.errf("attrs."+f.name, "%s[%d] = %d is out of range", f.name, k, x)
			}
		}
		copy(f.dst, f.v)
	}
	if a.Groups != nil {
		if *a.Groups < 1 || *a.Groups > 1<<20 {
			return g, c.errf("attrs.groups", "groups = %d is out of range", *a.Groups)
		}
		g.groups = *a.Groups
	}
	return g, nil
}

func ones(n int) []int64 {
	out := make([]int64, n)
	for k := range out {
		out[k] = 1
	}
	return out
}

// windowOut is the output extent of a window of k taps over in along
// spatial axis d: (in + pads - dilation*(k-1) - 1) / stride + 1.
func (c *inferCtx) windowOut(in Dim, k int64, g window, d int, what string) (Dim, error) {
	s := len(g.strides)
	num, err := in.Add(Const(g.pads[d] + g.pads[s+d] - g.dilations[d]*(k-1) - 1))
	if err != nil {
		return Dim{}, c.errf("inputs[0]", "%v", err)
	}
	var out Dim
	if g.strides[d] == 1 {
		out, err = num.Add(Const(1))
	} else if v, ok := num.IsConst(); ok {
		out = Const(floorDiv(v, g.strides[d]) + 1)
	} else {
		return Dim{}, c.errf("attrs.strides", "a stride of %d needs constant spatial sizes, got %s", g.strides[d], c.label(c.ins[0]))
	}
	if err != nil {
		return Dim{}, c.errf("inputs[0]", "%v", err)
	}
	if v, ok := out.IsConst(); ok && v < 1 {
		return Dim{}, c.errf("inputs[0]", "the %s window (%d taps, dilation %d) is larger than the padded input %s", what, k, g.dilations[d], c.label(c.ins[0]))
	}
	return out, nil
}

// conv infers conv1d, conv2d and conv3d: input [N, C, spatial...], weight
// [F, C/groups, kernel...], output [N, F, out...]. A grouped convolution
// splits the channels into groups convolved apart (depthwise: groups =
// C); F must be a multiple of groups.
func (c *inferCtx) conv() (Shape, error) {
	op, s := c.n.Op, spatialRank(c.n.Op)
	x, w := c.ins[0], c.ins[1]
	if len(x) != s+2 || len(w) != s+2 {
		return nil, c.errf("inputs", "%s needs an input of rank %d (N, C and %d spatial axes) and weights of rank %d, got %s and %s", op, s+2, s, s+2, c.label(x), c.label(w))
	}
	g, err := c.windowAttrs(s)
	if err != nil {
		return nil, err
	}
	cin, err := w[1].Scale(g.groups)
	if err != nil {
		return nil, c.errf("inputs[1]", "%v", err)
	}
	if err := c.unifyDims(x[1], cin, x, w, "inputs[1]"); err != nil {
		return nil, c.errf("inputs[1]", "%s with groups = %d needs input channels = weight channels * groups: %s and %s", op, g.groups, c.label(x), c.label(w))
	}
	if g.groups > 1 {
		f, ok := w[0].IsConst()
		if !ok {
			return nil, c.errf("inputs[1]", "a grouped %s needs a constant number of filters, got %s", op, c.label(w))
		}
		if f%g.groups != 0 {
			return nil, c.errf("inputs[1]", "%d filters do not split into %d groups (%s)", f, g.groups, c.label(w))
		}
	}
	out := Shape{x[0], w[0]}
	for d := 0; d < s; d++ {
		k, ok := w[2+d].IsConst()
		if !ok {
			return nil, c.errf("inputs[1]", "%s needs a constant kernel size, got %s", op, c.label(w))
		}
		if k < 1 {
			return nil, c.errf("inputs[1]", "%s needs kernel sizes of at least 1, got %s", op, c.label(w))
		}
		o, err := c.windowOut(x[2+d], k, g, d, "kernel")
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return c.u.canonShape(out)
}

// pool infers max_pool2d and avg_pool2d: input [N, C, H, W], a window of
// kernel_shape taps.
func (c *inferCtx) pool() (Shape, error) {
	x, a := c.ins[0], c.n.Attrs
	if len(x) != 4 {
		return nil, c.errf("inputs[0]", "%s needs an NCHW input, got %s", c.n.Op, c.label(x))
	}
	if len(a.KernelShape) != 2 {
		return nil, c.errf("attrs.kernel_shape", "%s needs kernel_shape with 2 entries, got %v", c.n.Op, a.KernelShape)
	}
	g, err := c.windowAttrs(2)
	if err != nil {
		return nil, err
	}
	if a.Groups != nil {
		return nil, c.errf("attrs.groups", "%s takes no groups", c.n.Op)
	}
	out := Shape{x[0], x[1]}
	for d := 0; d < 2; d++ {
		k := a.KernelShape[d]
		if k < 1 || k > 1<<20 {
			return nil, c.errf("attrs.kernel_shape", "kernel_shape[%d] = %d is out of range", d, k)
		}
		if g.pads[d] >= k*g.dilations[d] || g.pads[2+d] >= k*g.dilations[d] {
			return nil, c.errf("attrs.pads", "pads %v leave windows of only padding (kernel %v)", g.pads, a.KernelShape)
		}
		o, err := c.windowOut(x[2+d], k, g, d, "pooling")
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return c.u.canonShape(out)
}

// pad infers pad: pads holds the begins of every axis, then the ends,
// each at least 0; value (0 when absent) fills the border.
func (c *inferCtx) pad() (Shape, error) {
	x, a := c.ins[0], c.n.Attrs
	r := len(x)
	if len(a.Pads) != 2*r {
		return nil, c.errf("attrs.pads", "pad of a rank-%d tensor needs %d pads (begins, then ends), got %d", r, 2*r, len(a.Pads))
	}
	out := make(Shape, r)
	for k := range x {
		b, e := a.Pads[k], a.Pads[r+k]
		if b < 0 || e < 0 || b > 1<<20 || e > 1<<20 {
			return nil, c.errf("attrs.pads", "pads[%d] and pads[%d] = %d, %d: each must be in 0..2^20", k, r+k, b, e)
		}
		var err error
		if out[k], err = x[k].Add(Const(b + e)); err != nil {
			return nil, c.errf("inputs[0]", "%v", err)
		}
	}
	return out, nil
}

// gather infers gather(data, indices): the axis of data is replaced by the
// indices' shape, as numpy's take and ONNX Gather do. An index counts
// from the end when negative, as in ONNX: one of an axis of size n is in
// [-n, n); constant indices outside are an error.
func (c *inferCtx) gather() (Shape, error) {
	x, idx := c.ins[0], c.ins[1]
	if len(x) == 0 {
		return nil, c.errf("inputs[0]", "gather needs data of rank 1 or more")
	}
	ax, err := c.axis(c.n.Attrs.Axis, 0, len(x))
	if err != nil {
		return nil, err
	}
	if len(x)-1+len(idx) > 16 {
		return nil, c.errf("inputs", "gather's output would have rank %d, more than 16", len(x)-1+len(idx))
	}
	// Constant indices are checked now; the others where the kernel
	// runs (an error status, never a read outside data).
	if size, ok := x[ax].IsConst(); ok {
		t := c.n.Inputs[1]
		for k, v := range t.Data {
			if v < float64(-size) || v >= float64(size) {
				return nil, c.errf("inputs[1]", "index %s (%s.data[%d]) is out of range for axis %d of %s, of size %d: want -%d to %d", number(v), t.Name, k, ax, c.n.Inputs[0].Name, size, size, size-1)
			}
		}
	}
	out := append(append(append(Shape{}, x[:ax]...), idx...), x[ax+1:]...)
	return c.u.canonShape(out)
}

// batchNorm infers batch_norm(x, scale, bias, mean, var) in inference
// form: each parameter has one value per channel (axis 1 of x).
func (c *inferCtx) batchNorm() (Shape, error) {
	x := c.ins[0]
	if len(x) < 2 {
		return nil, c.errf("inputs[0]", "batch_norm needs a tensor with a channel axis (rank 2 or more), got %s", c.label(x))
	}
	for j := 1; j < len(c.ins); j++ {
		p := c.ins[j]
		if len(p) != 1 {
			return nil, c.errf(fmt.Sprintf("inputs[%d]", j), "batch_norm's %s needs one value per channel, shape [C], got %s", bnInputs[j], c.label(p))
		}
		if err := c.unifyDims(p[0], x[1], p, x, fmt.Sprintf("inputs[%d]", j)); err != nil {
			return nil, err
		}
	}
	return c.u.canonShape(x)
}

var bnInputs = []string{"input", "scale", "bias", "mean", "var"}
