package fusion

import (
	"math"
	"slices"

	"github.com/loom-go/loom/ast"
)

// The lowering of the neural-network operators: convolutions, pooling,
// pad and gather.

// padGen reads x as if padded: begins[k] elements of value before axis k
// and ends[k] after. The load's index is clamped into x, so that the
// border never reads outside it, whichever way a select is evaluated.
func (l *lowerer) padGen(x gen, shape Shape, begins, ends []int64, value ast.Expr) gen {
	return func(i []ast.Expr) ast.Expr {
		var in ast.Expr
		src := make([]ast.Expr, len(i))
		for k := range i {
			src[k] = i[k]
			if begins[k] == 0 && ends[k] == 0 {
				continue
			}
			ext := l.dim(shape[k])
			h := ast.Sub(i[k], ast.I32(int32(begins[k])))
			inside := ast.And(ast.GE(h, ast.I32(0)), ast.LT(h, ext))
			if in == nil {
				in = inside
			} else {
				in = ast.And(in, inside)
			}
			src[k] = ast.Min(ast.Max(h, ast.I32(0)), ast.Sub(ext, ast.I32(1)))
		}
		if in == nil {
			return x(i)
		}
		return ast.NewSelect(in, x(src), value)
	}
}

// padded returns a generator of t padded by pads (the begins of its
// spatial axes, then the ends) with value: a buffer of its own, computed
// in the same kernel, or t itself when nothing is padded; with inline, no
// buffer: each read tests the border. The spatial axes are where layout y
// puts them.
func (l *lowerer) padded(t *Tensor, y layout, pads []int64, value ast.Expr, name string, inline bool) gen {
	s := len(pads) / 2
	begins, ends := make([]int64, len(t.Shape)), make([]int64, len(t.Shape))
	shape := make(Shape, len(t.Shape))
	copy(shape, t.Shape)
	any := false
	for d := 0; d < s; d++ {
		k := y.spatial(d)
		begins[k], ends[k] = pads[d], pads[s+d]
		shape[k], _ = shape[k].Add(Const(pads[d] + pads[s+d]))
		any = any || pads[d] != 0 || pads[s+d] != 0
	}
	if !any {
		return l.val[t]
	}
	g := l.padGen(l.val[t], t.Shape, begins, ends, value)
	if inline {
		return g
	}
	name = l.fresh(name + "_pad")
	p := l.b.Compute(name, l.shape(shape), g)
	if slack := channelSlack(t); y.last && slack > 0 {
		// The slack is room between pixels, never written nor read.
		room := slices.Clone(shape)
		room[y.channel()], _ = room[y.channel()].Add(Const(slack))
		p.Into(l.b.Storage(l.fresh(name+"_room"), t.DType, l.shape(room)...))
	}
	var names []string
	for d := range shape {
		names = append(names, l.fresh(axisLetter(d)+"_"+name))
	}
	p.AxisNames(names...)
	return func(i []ast.Expr) ast.Expr { return p.At(i...) }
}

// channelSlack is how many cells of slack the padded copy of t, whose
// channels are last, adds after each pixel's channels (filled like the
// border, never read): a cache line's worth where a pixel's channels
// take a multiple of 1 KiB. Pixels would otherwise sit a power of two
// apart and the taps a tile of a convolution reads (rows two pixels
// apart at stride 2) share the few sets of the L1 cache their addresses
// map to: ResNet-50's 3x3 stride-2 convolution over 512 channels at
// 14x14 took 7.8 ms on one thread with pixels 2 KiB apart, 3.4 with
// 2112 bytes.
func channelSlack(t *Tensor) int64 {
	c, ok := t.Shape[len(t.Shape)-1].IsConst()
	bytes := int64(t.DType.Bytes())
	if !ok || bytes == 0 || c*bytes%1024 != 0 {
		return 0
	}
	return 64 / bytes
}

// inlinePadding says whether a convolution whose weights have shape
// wShape (in y's order) reads its input's border through a test on each
// read rather than from a padded copy: a depthwise convolution (one
// channel per group) in NHWC whose window spans at most five taps along
// every axis. There the copy writes (stride 1) one to (stride 2) four
// input pixels per output pixel, for a few taps of work per channel, and
// the test is the same for a whole vector of channels; the code
// generator runs the interior without the tests (package partition's
// Borders), so only the border pays for them. MobileNetV2's strided
// depthwise convolutions on default schedules took 0.55-0.65 of the time
// with tests as with a copy, its 32-channel one at 112x112 0.8,
// EfficientNet-B0's 5x5 ones 0.8-0.95. A wider window puts more of the
// output in the border, each output there testing every tap: ConvNeXt's
// 7x7 depthwise convolutions took 1.25x (96 channels at 56x56) and 1.8x
// (384 at 14x14) the time with tests. A grouped convolution with several
// channels per group does that many channels of work per read, as a
// dense one does: ResNeXt's 3x3 over 512 channels in 32 groups at 14x14
// took 2.5x. Those keep the copy (with its slack between pixels, see
// channelSlack); in NCHW the test would differ lane by lane.
func inlinePadding(y layout, geo window, wShape Shape) bool {
	if !y.last || geo.groups <= 1 {
		return false
	}
	if c, ok := wShape[y.inChannels()].IsConst(); !ok || c != 1 {
		return false
	}
	for d := range geo.strides {
		if k, ok := wShape[y.tap(d)].IsConst(); !ok || k > 5 {
			return false
		}
	}
	return true
}

// tap is the input index of output index o at window tap r.
func tap(o ast.Expr, r *ast.Var, stride, dilation int64) ast.Expr {
	e := o
	if stride != 1 {
		e = ast.Mul(e, ast.I32(int32(stride)))
	}
	var rr ast.Expr = r
	if dilation != 1 {
		rr = ast.Mul(rr, ast.I32(int32(dilation)))
	}
	return ast.Add(e, rr)
}

// windowAxes names the reduce axes of a window over s spatial axes: rw;
// rh, rw; rd, rh, rw.
func windowAxes(s int) []string { return []string{"rd", "rh", "rw"}[3-s:] }

// conv lowers conv1d, conv2d and conv3d; padding becomes a padded copy of
// the input in the same kernel (a 2-d one over short rows is computed on
// the padded input's rows instead: convOnRows). In a grouped convolution, filter f reads
// the channels of its group, f / (F/groups).
func (l *lowerer) conv(n *Node) error {
	xin, w, t := n.Inputs[0], n.Inputs[1], n.Output
	s, y := spatialRank(n.Op), layoutOf(n)
	geo, err := (&inferCtx{n: n}).windowAttrs(s)
	if err != nil {
		return err
	}
	if g, ok := convRows(n, geo); ok {
		l.convOnRows(n, geo, g)
		return nil
	}
	wShape, gw := convWeights(n, l.val[w])
	gx := l.padded(xin, y, geo.pads, ast.Zero(t.DType), t.Name, inlinePadding(y, geo, wShape))
	cg := wShape[y.inChannels()] // channels of a group
	rc := l.b.ReduceAxis(l.fresh("rc_"+t.Name), l.dim(cg))
	axes := []*ast.Var{rc}
	var rk []*ast.Var
	for d, name := range windowAxes(s) {
		r := l.b.ReduceAxis(l.fresh(name+"_"+t.Name), l.dim(wShape[y.tap(d)]))
		rk = append(rk, r)
		axes = append(axes, r)
	}
	var perGroup int64 // filters per group
	if geo.groups > 1 {
		f, _ := wShape[y.filters()].IsConst()
		perGroup = f / geo.groups
	}
	x := l.b.Sum(t.Name, l.shape(t.Shape), axes, func(i []ast.Expr) ast.Expr {
		f := i[y.channel()]
		var ch ast.Expr = rc
		if geo.groups > 1 {
			ch = ast.Add(ast.Mul(ast.FloorDiv(f, ast.I32(int32(perGroup))), l.dim(cg)), rc)
		}
		xi, wi := make([]ast.Expr, s+2), make([]ast.Expr, s+2)
		xi[0], xi[y.channel()] = i[0], ch
		wi[y.filters()], wi[y.inChannels()] = f, rc
		for d, r := range rk {
			xi[y.spatial(d)] = tap(i[y.spatial(d)], r, geo.strides[d], geo.dilations[d])
			wi[y.tap(d)] = r
		}
		return ast.Mul(gx(xi), gw(wi))
	})
	l.store(t, x)
	return nil
}

// convWeights returns the shape of convolution n's weights as its
// layout has them and their generator over those indices: gw itself, or
// for weights in panels of p filters (attribute panel: [F/p, C/groups,
// kernel..., p]) the index [kernel..., c, f] read at [f / p, c,
// kernel..., f mod p].
func convWeights(n *Node, gw gen) (Shape, gen) {
	w, p := n.Inputs[1], n.Attrs.Panel
	if p == 0 {
		return w.Shape, gw
	}
	s := len(w.Shape) - 3
	f, _ := w.Shape[0].Mul(Const(p)) // checked by Infer
	shape := append(append(slices.Clone(w.Shape[2:2+s]), w.Shape[1]), f)
	return shape, func(i []ast.Expr) ast.Expr {
		f, c := i[s+1], i[s]
		wp := ast.IntConst(f.Type(), p)
		return gw(append(append([]ast.Expr{ast.FloorDiv(f, wp), c}, i[:s]...), ast.FloorMod(f, wp)))
	}
}

// pool lowers max_pool2d (the border counts as -inf) and avg_pool2d (a
// sum, then a division by the taps inside the input, or by the whole
// window with count_include_pad).
func (l *lowerer) pool(n *Node) error {
	xin, t := n.Inputs[0], n.Output
	y := layoutOf(n)
	geo, err := (&inferCtx{n: n}).windowAttrs(2)
	if err != nil {
		return err
	}
	k := n.Attrs.KernelShape
	dt := t.DType
	isMax := n.Op == "max_pool2d"
	fill := ast.Expr(ast.Zero(dt))
	if isMax {
		fill = lowestValue(dt)
	}
	// In NHWC a pool reads its border through tests, the same for a
	// vector of channels, as a depthwise convolution does (inlinePadding);
	// a separable max pool reads its padded copy once per row pass. A
	// max pool whose windows all hold an input element clamps the index
	// of a border read instead (clampsBorder) where the index is not the
	// vectorized one: in NHWC every border read, in NCHW a separable
	// pool's reads along the height (its rows are read from a copy
	// padded along the width only).
	sep := isMax && separable(k, geo.strides)
	clamp := isMax && clampsBorder(geo, k)
	var rk []*ast.Var
	for d, name := range windowAxes(2) {
		rk = append(rk, l.b.ReduceAxis(l.fresh(name+"_"+t.Name), ast.I32(int32(k[d]))))
	}
	if clamp && sep {
		widthPads := []int64{0, geo.pads[1], 0, geo.pads[3]}
		row := l.clampedReads(xin, y, widthPads)
		if !y.last {
			row = l.padded(xin, y, widthPads, fill, t.Name, false)
		}
		l.store(t, l.separableMax(xin, t, y, geo, k, rk, row, true))
		return nil
	}
	var gx gen
	if clamp && y.last {
		gx = l.clampedReads(xin, y, geo.pads)
	} else {
		gx = l.padded(xin, y, geo.pads, fill, t.Name, y.last && !sep)
	}
	fn := func(i []ast.Expr) ast.Expr {
		xi := slices.Clone(i)
		for d := range 2 {
			xi[y.spatial(d)] = tap(i[y.spatial(d)], rk[d], geo.strides[d], geo.dilations[d])
		}
		return gx(xi)
	}
	shape := l.shape(t.Shape)
	if sep {
		l.store(t, l.separableMax(xin, t, y, geo, k, rk, gx, false))
		return nil
	}
	if isMax {
		l.store(t, l.b.Max(t.Name, shape, rk, fn))
		return nil
	}
	sum := l.b.Sum(l.fresh(t.Name+"_sum"), shape, rk, fn)
	var names []string
	for d := range t.Shape {
		names = append(names, l.fresh(axisLetter(d)+"_"+sum.Buffer.Name))
	}
	sum.AxisNames(names...)
	x := l.b.Compute(t.Name, shape, func(i []ast.Expr) ast.Expr {
		var count ast.Expr = ast.I32(int32(k[0] * k[1]))
		if !n.Attrs.CountIncludePad {
			count = nil
			for d := 0; d < 2; d++ {
				// The taps of [o*s - pb, o*s - pb + k) inside [0, in).
				lo := ast.Sub(ast.Mul(i[y.spatial(d)], ast.I32(int32(geo.strides[d]))), ast.I32(int32(geo.pads[d])))
				in := l.dim(xin.Shape[y.spatial(d)])
				c := ast.Sub(ast.Min(ast.Add(lo, ast.I32(int32(k[d]))), in), ast.Max(lo, ast.I32(0)))
				if count == nil {
					count = c
				} else {
					count = ast.Mul(count, c)
				}
			}
		}
		return ast.Div(sum.At(i...), ast.NewCast(dt, count))
	})
	l.store(t, x)
	return nil
}

// separable says whether a max pool with this kernel and these strides
// is computed as a max along rows, then a max of those along columns:
// with stride s along the rows (two dimensions: k = [kh, kw]), kw*s + kh
// comparisons per output instead of kh*kw, exact (max is associative).
// 5x5 at stride 1 (YOLO's SPPF) takes 10 instead of 25; 3x3 stays direct
// (6 for 9 at stride 1 does not pay for the second pass).
func separable(k, strides []int64) bool {
	kh, kw := k[0], k[1]
	return kh > 1 && kw > 1 && 5*(kw*strides[0]+kh) < 3*kh*kw
}

// separableMax computes max pool t as the max along the width of rows
// (t's name with _rows; row reads the input as padded along the width),
// then the max of those along the height. With clamp (clampsBorder, x
// the input) the rows are x's, each computed once, and the column
// pass clamps its index into them; else they are the padded input's,
// from the first tap of the first output row to the last tap of the
// last.
func (l *lowerer) separableMax(x, t *Tensor, y layout, geo window, k []int64, rk []*ast.Var, row gen, clamp bool) *ast.Tensor {
	h, w := y.spatial(0), y.spatial(1)
	sh, dh := geo.strides[0], geo.dilations[0]
	rowShape := slices.Clone(t.Shape)
	if clamp {
		rowShape[h] = x.Shape[h]
	} else {
		span, _ := t.Shape[h].Mul(Const(sh))
		rowShape[h], _ = span.Add(Const((k[0]-1)*dh + 1 - sh))
	}
	rows := l.b.Max(l.fresh(t.Name+"_rows"), l.shape(rowShape), rk[1:], func(i []ast.Expr) ast.Expr {
		xi := slices.Clone(i)
		xi[w] = tap(i[w], rk[1], geo.strides[1], geo.dilations[1])
		return row(xi)
	})
	var names []string
	for d := range rowShape {
		names = append(names, l.fresh(axisLetter(d)+"_"+rows.Name()))
	}
	rows.AxisNames(names...)
	return l.b.Max(t.Name, l.shape(t.Shape), rk[:1], func(i []ast.Expr) ast.Expr {
		ri := slices.Clone(i)
		ri[h] = tap(i[h], rk[0], sh, dh)
		if clamp {
			ri[h] = clampIndex(ri[h], geo.pads[0], l.dim(x.Shape[h]))
		}
		return rows.At(ri...)
	})
}

// clampsBorder says whether a max pool with this window may read its
// border as the nearest element of its input rather than as the lowest
// value: where every window holds an input element and one that reaches
// past an edge holds the element at that edge, repeating that element
// leaves each maximum as it is (NaN and -0 included). At dilation 1,
// padding below the window's extent on each side gives both (the output
// size is the floor of the windows that fit). The reads then clamp their
// index, a scalar for a whole vector of channels in NHWC: no padded
// copy, no test per read. YOLOv5's SPPF pools (5x5 over 256 channels at
// 20x20, one thread) took 0.084 ms each with the padded copy.
func clampsBorder(geo window, k []int64) bool {
	s := len(geo.strides)
	for d := range s {
		if geo.dilations[d] != 1 || geo.pads[d] >= k[d] || geo.pads[s+d] >= k[d] {
			return false
		}
	}
	return true
}

// clampIndex is index i of a padded axis, begin elements before an input
// axis of n, moved to the nearest index inside the input.
func clampIndex(i ast.Expr, begin int64, n ast.Expr) ast.Expr {
	if begin != 0 {
		i = ast.Sub(i, ast.I32(int32(begin)))
	}
	return ast.Min(ast.Max(i, ast.I32(0)), ast.Sub(n, ast.I32(1)))
}

// clampedReads returns a generator of t as padded by pads (the begins of
// its spatial axes, then the ends), each read of the border taking the
// nearest element of t (see clampsBorder).
func (l *lowerer) clampedReads(t *Tensor, y layout, pads []int64) gen {
	s := len(pads) / 2
	x := l.val[t]
	return func(i []ast.Expr) ast.Expr {
		xi := slices.Clone(i)
		for d := range s {
			if k := y.spatial(d); pads[d] != 0 || pads[s+d] != 0 {
				xi[k] = clampIndex(i[k], pads[d], l.dim(t.Shape[k]))
			}
		}
		return x(xi)
	}
}

// lowestValue is what a max starts from: -inf, or an integer type's least
// value.
func lowestValue(t ast.DType) ast.Expr {
	switch t {
	case ast.Int32:
		return ast.IntConst(t, math.MinInt32)
	case ast.Int64:
		return ast.IntConst(t, math.MinInt64)
	}
	return ast.FloatConst(t, math.Inf(-1))
}

// pad lowers pad inline: the border holds value (0 when absent).
func (l *lowerer) pad(n *Node) gen {
	src, t := n.Inputs[0], n.Output
	r := len(src.Shape)
	v := 0.0
	if n.Attrs.Value != nil {
		v = *n.Attrs.Value
	}
	return l.padGen(l.val[src], src.Shape, n.Attrs.Pads[:r], n.Attrs.Pads[r:], ast.ConstOf(t.DType, v))
}

// gather lowers gather(data, indices) inline: out[pre, j..., post] =
// data[pre, indices[j...], post]. A negative index counts from the end, as
// in ONNX and numpy; one out of range ([-n, n) for an axis of size n) is
// an error: in the interpreter an access outside data, in compiled code a
// status (see package codegen/llvm). int64 indices stay int64, so that
// 2^32 is not taken for 0.
func (l *lowerer) gather(n *Node) gen {
	data, idx := n.Inputs[0], n.Inputs[1]
	ax := 0
	if n.Attrs.Axis != nil {
		ax = *n.Attrs.Axis
		if ax < 0 {
			ax += len(data.Shape)
		}
	}
	gd, gi := l.val[data], l.val[idx]
	ni := len(idx.Shape)
	return func(i []ast.Expr) ast.Expr {
		j := gi(i[ax : ax+ni])
		if j.Type() != ast.Int32 && j.Type() != ast.Int64 {
			j = ast.NewCast(ast.Int32, j)
		}
		ext := l.dim(data.Shape[ax])
		if ext.Type() != j.Type() {
			ext = ast.NewCast(j.Type(), ext)
		}
		j = ast.NewSelect(ast.LT(j, ast.Zero(j.Type())), ast.Add(j, ext), j)
		src := append(append(append([]ast.Expr{}, i[:ax]...), j), i[ax+ni:]...)
		return gd(src)
	}
}
