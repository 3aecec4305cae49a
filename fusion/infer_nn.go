package fusion

import (
	"fmt"
	"slices"
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

// layout says where a convolution's or a pooling's channels are, over s
// spatial axes: first (NCHW: input [N, C, spatial...], weights [F,
// C/groups, kernel...]) or last (NHWC: input [N, spatial..., C], weights
// [kernel..., C/groups, F]).
type layout struct {
	last bool
	s    int
}

// layoutNames are the layouts' names by spatial rank, channels first and
// last.
var layoutNames = [4][2]string{1: {"NCW", "NWC"}, 2: {"NCHW", "NHWC"}, 3: {"NCDHW", "NDHWC"}}

// layoutOf is node n's layout (its attribute checked by Infer).
func layoutOf(n *Node) layout {
	s := spatialRank(n.Op)
	return layout{last: n.Attrs.Layout != "" && n.Attrs.Layout == layoutNames[s][1], s: s}
}

// channel is the axis of the channels in the input and the output.
func (y layout) channel() int {
	if y.last {
		return y.s + 1
	}
	return 1
}

// spatial is the axis of spatial axis d in the input and the output.
func (y layout) spatial(d int) int {
	if y.last {
		return 1 + d
	}
	return 2 + d
}

// filters, inChannels and tap are the axes of the weights: filters,
// channels of a group, and the window along spatial axis d.
func (y layout) filters() int {
	if y.last {
		return y.s + 1
	}
	return 0
}

func (y layout) inChannels() int {
	if y.last {
		return y.s
	}
	return 1
}

func (y layout) tap(d int) int {
	if y.last {
		return d
	}
	return 2 + d
}

// name is the layout's name.
func (y layout) name() string {
	if y.last {
		return layoutNames[y.s][1]
	}
	return layoutNames[y.s][0]
}

// layoutAttr checks the layout attribute of a node over s spatial axes.
func (c *inferCtx) layoutAttr(s int) (layout, error) {
	a := c.n.Attrs.Layout
	if a != "" && a != layoutNames[s][0] && a != layoutNames[s][1] {
		return layout{}, c.errf("attrs.layout", "%s's layout is %q or %q, got %q", c.n.Op, layoutNames[s][0], layoutNames[s][1], a)
	}
	return layoutOf(c.n), nil
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
// [F, C/groups, kernel...], output [N, F, out...] (channels last: input
// [N, spatial..., C], weight [kernel..., C/groups, F], output [N, out...,
// F]). A grouped convolution splits the channels into groups convolved
// apart (depthwise: groups = C); F must be a multiple of groups.
func (c *inferCtx) conv() (Shape, error) {
	op, s := c.n.Op, spatialRank(c.n.Op)
	x, w := c.ins[0], c.ins[1]
	y, err := c.layoutAttr(s)
	if err != nil {
		return nil, err
	}
	if p := c.n.Attrs.Panel; p != 0 {
		if w, err = c.convPanels(y, w, p); err != nil {
			return nil, err
		}
	}
	if len(x) != s+2 || len(w) != s+2 {
		return nil, c.errf("inputs", "%s (%s) needs an input of rank %d (N, C and %d spatial axes) and weights of rank %d, got %s and %s", op, y.name(), s+2, s, s+2, c.label(x), c.label(w))
	}
	g, err := c.windowAttrs(s)
	if err != nil {
		return nil, err
	}
	cin, err := w[y.inChannels()].Scale(g.groups)
	if err != nil {
		return nil, c.errf("inputs[1]", "%v", err)
	}
	if err := c.unifyDims(x[y.channel()], cin, x, w, "inputs[1]"); err != nil {
		return nil, c.errf("inputs[1]", "%s (%s) with groups = %d needs input channels = weight channels * groups: %s and %s", op, y.name(), g.groups, c.label(x), c.label(w))
	}
	filters := w[y.filters()]
	if g.groups > 1 {
		f, ok := filters.IsConst()
		if !ok {
			return nil, c.errf("inputs[1]", "a grouped %s needs a constant number of filters, got %s", op, c.label(w))
		}
		if f%g.groups != 0 {
			return nil, c.errf("inputs[1]", "%d filters do not split into %d groups (%s)", f, g.groups, c.label(w))
		}
	}
	out := make(Shape, s+2)
	out[0], out[y.channel()] = x[0], filters
	for d := 0; d < s; d++ {
		k, ok := w[y.tap(d)].IsConst()
		if !ok {
			return nil, c.errf("inputs[1]", "%s needs a constant kernel size, got %s", op, c.label(w))
		}
		if k < 1 {
			return nil, c.errf("inputs[1]", "%s needs kernel sizes of at least 1, got %s", op, c.label(w))
		}
		o, err := c.windowOut(x[y.spatial(d)], k, g, d, "kernel")
		if err != nil {
			return nil, err
		}
		out[y.spatial(d)] = o
	}
	return c.u.canonShape(out)
}

// convPanels checks the weights w of a convolution in panels of p
// filters ([F/p, C/groups, kernel..., p], layout y channels last) and
// returns the shape they stand for, [kernel..., C/groups, F].
func (c *inferCtx) convPanels(y layout, w Shape, p int64) (Shape, error) {
	if p < 0 || p > 1<<16 {
		return nil, c.errf("attrs.panel", "panel %d: want a width from 1 to 65536", p)
	}
	if !y.last {
		return nil, c.errf("attrs.panel", "a %s in panels needs its channels last (layout %s), got %s", c.n.Op, layoutNames[y.s][1], y.name())
	}
	if len(w) != y.s+3 || !w[len(w)-1].Equal(Const(p)) {
		return nil, c.errf("inputs[1]", "a %s with panel %d needs weights [F/%d, C/groups, kernel..., %d] of rank %d, got %s", c.n.Op, p, p, p, y.s+3, c.label(w))
	}
	f, err := w[0].Mul(Const(p))
	if err != nil {
		return nil, c.errf("inputs[1]", "%v", err)
	}
	return append(append(slices.Clone(w[2:2+y.s]), w[1]), f), nil
}

// pool infers max_pool2d and avg_pool2d: input [N, C, H, W] (or [N, H, W,
// C] in layout NHWC), a window of kernel_shape taps.
func (c *inferCtx) pool() (Shape, error) {
	x, a := c.ins[0], c.n.Attrs
	y, err := c.layoutAttr(2)
	if err != nil {
		return nil, err
	}
	if len(x) != 4 {
		return nil, c.errf("inputs[0]", "%s needs an %s input, got %s", c.n.Op, y.name(), c.label(x))
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
	out := slices.Clone(x)
	for d := 0; d < 2; d++ {
		k := a.KernelShape[d]
		if k < 1 || k > 1<<20 {
			return nil, c.errf("attrs.kernel_shape", "kernel_shape[%d] = %d is out of range", d, k)
		}
		if g.pads[d] >= k*g.dilations[d] || g.pads[2+d] >= k*g.dilations[d] {
			return nil, c.errf("attrs.pads", "pads %v leave windows of only padding (kernel %v)", g.pads, a.KernelShape)
		}
		o, err := c.windowOut(x[y.spatial(d)], k, g, d, "pooling")
		if err != nil {
			return nil, err
		}
		out[y.spatial(d)] = o
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
