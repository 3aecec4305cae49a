package onnx

import (
	"fmt"
	"math"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// windowAttrs reads a convolution's or pooling's strides, dilations and
// pads for s spatial axes of an input of the given spatial sizes,
// resolving auto_pad.
func windowAttrs(c *ctx, spatial []fusion.Dim, kernel []int64) (strides, dilations, pads []int64, err error) {
	s := len(spatial)
	if strides, err = c.attrIntsOr("strides", 1, s); err != nil {
		return
	}
	if dilations, err = c.attrIntsOr("dilations", 1, s); err != nil {
		return
	}
	if pads, err = c.attrIntsOr("pads", 0, 2*s); err != nil {
		return
	}
	auto, err := c.attrString("auto_pad", "NOTSET")
	if err != nil {
		return
	}
	switch auto {
	case "NOTSET":
	case "VALID":
		pads = make([]int64, 2*s)
	case "SAME_UPPER", "SAME_LOWER":
		for d := 0; d < s; d++ {
			in, ok := spatial[d].IsConst()
			if !ok {
				return nil, nil, nil, fmt.Errorf("auto_pad %s needs constant spatial sizes, got %s", auto, fmtDims(spatial))
			}
			out := (in + strides[d] - 1) / strides[d]
			total := max(0, (out-1)*strides[d]+dilations[d]*(kernel[d]-1)+1-in)
			small, big := total/2, total-total/2
			if auto == "SAME_UPPER" {
				pads[d], pads[s+d] = small, big
			} else {
				pads[d], pads[s+d] = big, small
			}
		}
	default:
		return nil, nil, nil, fmt.Errorf("auto_pad %q is not supported", auto)
	}
	return
}

func convConv(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	w, err := c.tensor(1)
	if err != nil {
		return err
	}
	xs, ws := c.shapeOf(x), c.shapeOf(w)
	s := len(xs) - 2
	if s < 1 || s > 3 || len(ws) != len(xs) {
		return fmt.Errorf("a convolution of an input %s with weights %s: loom has 1-, 2- and 3-D convolutions", xs, ws)
	}
	kernel := make([]int64, s)
	for d := range kernel {
		k, ok := ws[2+d].IsConst()
		if !ok {
			return fmt.Errorf("weights %s: the kernel size must be constant", ws)
		}
		kernel[d] = k
	}
	if ks, given, err := c.attrInts("kernel_shape"); err != nil {
		return err
	} else if given && !slices.Equal(ks, kernel) {
		return fmt.Errorf("kernel_shape %v does not match the weights %s", ks, ws)
	}
	strides, dilations, pads, err := windowAttrs(c, xs[2:], kernel)
	if err != nil {
		return err
	}
	group, err := c.attrInt("group", 1)
	if err != nil {
		return err
	}
	return convolve(c, s, fusion.Attrs{Strides: strides, Dilations: dilations, Pads: pads}, group, x, w)
}

// convolve makes output 0 the convolution of x by w over s spatial axes,
// plus input 2, the bias, when there is one.
func convolve(c *ctx, s int, attrs fusion.Attrs, group int64, x, w *fusion.Tensor) error {
	if group != 1 {
		attrs.Groups = &group
	}
	name := c.outName(0)
	if c.has(2) {
		name = c.tmp("conv")
	}
	y, err := c.op(name, fmt.Sprintf("conv%dd", s), attrs, x, w)
	if err != nil {
		return err
	}
	if c.has(2) {
		if y, err = addChannelBias(c, y, 2, s); err != nil {
			return err
		}
	}
	c.set(0, y)
	return nil
}

// addChannelBias adds input j, a vector over the channels (axis 1), to y,
// which has s spatial axes after the channels.
func addChannelBias(c *ctx, y *fusion.Tensor, j, s int) (*fusion.Tensor, error) {
	shape := []int64{-1}
	for range s {
		shape = append(shape, 1)
	}
	var b *fusion.Tensor
	var err error
	if k := c.known(j); k != nil {
		if len(k.shape) != 1 {
			return nil, fmt.Errorf("the bias has shape %v, not [channels]", k.shape)
		}
		shape[0] = k.shape[0]
		b, err = c.im.tensorOf(&value{k: k.reshaped(shape)}, c.n.GetInput()[j])
	} else {
		if b, err = c.tensor(j); err != nil {
			return nil, err
		}
		bs := c.shapeOf(b)
		if len(bs) != 1 {
			return nil, fmt.Errorf("the bias has shape %s, not [channels]", bs)
		}
		attr := []fusion.JSONDim{{Dim: bs[0]}}
		for range s {
			attr = append(attr, fusion.JSONDim{Dim: fusion.Const(1)})
		}
		b, err = c.op(c.tmp("bias"), "reshape", fusion.Attrs{Shape: attr}, b)
	}
	if err != nil {
		return nil, err
	}
	return c.op(c.outName(0), "add", fusion.Attrs{}, y, b)
}

func convPool(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	if len(c.n.GetOutput()) > 1 && c.n.GetOutput()[1] != "" {
		return fmt.Errorf("MaxPool's Indices output is not supported")
	}
	xs := c.shapeOf(x)
	if len(xs) != 4 {
		return fmt.Errorf("loom pools 2-D (NCHW) inputs, not %s", xs)
	}
	kernel, given, err := c.attrInts("kernel_shape")
	if err != nil {
		return err
	}
	if !given || len(kernel) != 2 {
		return fmt.Errorf("kernel_shape %v needs 2 entries", kernel)
	}
	strides, dilations, pads, err := windowAttrs(c, xs[2:], kernel)
	if err != nil {
		return err
	}
	ceil, err := c.attrInt("ceil_mode", 0)
	if err != nil {
		return err
	}
	max := c.n.GetOpType() == "MaxPool"
	attrs := fusion.Attrs{KernelShape: kernel, Strides: strides, Pads: pads}
	if max {
		if storage, err := c.attrInt("storage_order", 0); err != nil || storage != 0 {
			return fmt.Errorf("storage_order 1 is not supported")
		}
		attrs.Dilations = dilations
	} else {
		if slices.ContainsFunc(dilations, func(d int64) bool { return d != 1 }) {
			return fmt.Errorf("AveragePool with dilations %v is not supported", dilations)
		}
		include, err := c.attrInt("count_include_pad", 0)
		if err != nil {
			return err
		}
		attrs.CountIncludePad = include != 0
	}
	if ceil != 0 {
		// Extra padding at the end makes the floor of the output size its
		// ceiling; the padding is no element of a max and no part of an
		// average that leaves padding out.
		if !max && attrs.CountIncludePad {
			return fmt.Errorf("AveragePool with ceil_mode and count_include_pad is not supported")
		}
		for d := 0; d < 2; d++ {
			in, ok := xs[2+d].IsConst()
			if !ok {
				return fmt.Errorf("ceil_mode needs constant spatial sizes, got %s", xs)
			}
			span := in + pads[d] + pads[2+d] - dilations[d]*(kernel[d]-1) - 1
			if span < 0 {
				continue
			}
			out := (span+strides[d]-1)/strides[d] + 1
			// The last window starts inside the input or its begin padding.
			if (out-1)*strides[d] >= in+pads[d] {
				out--
			}
			need := (out-1)*strides[d] + dilations[d]*(kernel[d]-1) + 1 - (in + pads[d] + pads[2+d])
			attrs.Pads[2+d] += max0(need)
		}
	}
	op := "avg_pool2d"
	if max {
		op = "max_pool2d"
	}
	return c.result(op, attrs, x)
}

func max0(x int64) int64 {
	if x < 0 {
		return 0
	}
	return x
}

// convGlobalPool reduces every spatial axis, keeping them as size 1.
func convGlobalPool(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	r := len(c.shapeOf(x))
	if r < 3 {
		return fmt.Errorf("%s needs an input with spatial axes, got %s", c.n.GetOpType(), c.shapeOf(x))
	}
	var axes []int
	for a := 2; a < r; a++ {
		axes = append(axes, a)
	}
	op := "reduce_mean"
	if c.n.GetOpType() == "GlobalMaxPool" {
		op = "reduce_max"
	}
	return c.result(op, fusion.Attrs{Axes: axes, KeepDims: true}, x)
}

func convBatchNorm(c *ctx) error {
	if len(c.n.GetOutput()) > 1 {
		for _, o := range c.n.GetOutput()[1:] {
			if o != "" {
				return fmt.Errorf("BatchNormalization in training mode (running mean and variance outputs) is not supported")
			}
		}
	}
	if t, err := c.attrInt("training_mode", 0); err != nil || t != 0 {
		return fmt.Errorf("BatchNormalization in training mode is not supported")
	}
	eps, err := c.attrFloat("epsilon", 1e-5)
	if err != nil {
		return err
	}
	ins, err := c.tensors()
	if err != nil {
		return err
	}
	if len(ins) != 5 {
		return fmt.Errorf("BatchNormalization takes 5 inputs, got %d", len(ins))
	}
	return c.result("batch_norm", fusion.Attrs{Epsilon: &eps}, ins...)
}

func convMatMul(c *ctx) error {
	a, err := c.tensor(0)
	if err != nil {
		return err
	}
	b, err := c.tensor(1)
	if err != nil {
		return err
	}
	y, err := matmul(c, a, b, c.outName(0))
	if err != nil {
		return err
	}
	c.set(0, y)
	return nil
}

// reshapeDims reshapes t (a no-op when the shape is the same).
func reshapeDims(c *ctx, t *fusion.Tensor, shape []fusion.Dim, name string) (*fusion.Tensor, error) {
	if fusion.Shape(shape).Equal(c.shapeOf(t)) {
		return t, nil
	}
	attr := make([]fusion.JSONDim, len(shape))
	for k, d := range shape {
		attr[k] = fusion.JSONDim{Dim: d}
	}
	return c.op(name, "reshape", fusion.Attrs{Shape: attr}, t)
}

// matmul is ONNX's MatMul (numpy's): a 1-D operand gains an axis that the
// result loses; [..., M, K] times a 2-D [K, N] runs as one [(...*M), K]
// product, not one per leading index.
func matmul(c *ctx, a, b *fusion.Tensor, name string) (*fusion.Tensor, error) {
	as, bs := c.shapeOf(a), c.shapeOf(b)
	if len(as) == 0 || len(bs) == 0 {
		return nil, fmt.Errorf("MatMul of %s and %s: operands need rank 1 or more", as, bs)
	}
	var err error
	squeezeA, squeezeB := len(as) == 1, len(bs) == 1
	if squeezeA {
		if a, err = reshapeDims(c, a, []fusion.Dim{fusion.Const(1), as[0]}, c.tmp("row")); err != nil {
			return nil, err
		}
	}
	if squeezeB {
		if b, err = reshapeDims(c, b, []fusion.Dim{bs[0], fusion.Const(1)}, c.tmp("col")); err != nil {
			return nil, err
		}
	}
	as, bs = c.shapeOf(a), c.shapeOf(b)
	// The result's shape, before removing the added axes.
	var out []fusion.Dim
	flatten := len(as) > 2 && len(bs) == 2
	if flatten {
		rows := fusion.Const(1)
		for _, d := range as[:len(as)-1] {
			if rows, err = rows.Mul(d); err != nil {
				return nil, err
			}
		}
		out = append(slices.Clone(as[:len(as)-1]), bs[1])
		if a, err = reshapeDims(c, a, []fusion.Dim{rows, as[len(as)-1]}, c.tmp("rows")); err != nil {
			return nil, err
		}
	}
	final := []fusion.Dim(nil)
	switch {
	case squeezeA && squeezeB:
		final = []fusion.Dim{}
	case squeezeA:
		final = append(slices.Clone(bs[:len(bs)-2]), bs[len(bs)-1])
	case squeezeB:
		final = slices.Clone(as[:len(as)-1])
	case flatten:
		final = out
	}
	if final == nil {
		return c.op(name, "matmul", fusion.Attrs{}, a, b)
	}
	y, err := c.op(c.tmp("mm"), "matmul", fusion.Attrs{}, a, b)
	if err != nil {
		return nil, err
	}
	return c.op(name, "reshape", fusion.Attrs{Shape: jsonDims(final)}, y)
}

func jsonDims(ds []fusion.Dim) []fusion.JSONDim {
	out := make([]fusion.JSONDim, len(ds))
	for k, d := range ds {
		out[k] = fusion.JSONDim{Dim: d}
	}
	return out
}

// convGemm is alpha * A' B' + beta * C, A' and B' transposed when asked:
// a known B is transposed here, once.
func convGemm(c *ctx) error {
	alpha, err := c.attrFloat("alpha", 1)
	if err != nil {
		return err
	}
	beta, err := c.attrFloat("beta", 1)
	if err != nil {
		return err
	}
	operand := func(j int, attr string) (*fusion.Tensor, error) {
		trans, err := c.attrInt(attr, 0)
		if err != nil {
			return nil, err
		}
		if k := c.known(j); k != nil && trans != 0 {
			if len(k.shape) != 2 {
				return nil, fmt.Errorf("input %d has shape %v, not a matrix", j, k.shape)
			}
			return c.im.tensorOf(&value{k: k.transposed([]int{1, 0})}, c.n.GetInput()[j]+"_T")
		}
		t, err := c.tensor(j)
		if err != nil {
			return nil, err
		}
		if len(c.shapeOf(t)) != 2 {
			return nil, fmt.Errorf("input %d has shape %s, not a matrix", j, c.shapeOf(t))
		}
		if trans == 0 {
			return t, nil
		}
		return c.op(c.tmp("T"), "transpose", fusion.Attrs{Perm: []int{1, 0}}, t)
	}
	a, err := operand(0, "transA")
	if err != nil {
		return err
	}
	b, err := operand(1, "transB")
	if err != nil {
		return err
	}
	addC := c.has(2) && beta != 0
	name := c.outName(0)
	if addC || alpha != 1 {
		name = c.tmp("mm")
	}
	y, err := c.op(name, "matmul", fusion.Attrs{}, a, b)
	if err != nil {
		return err
	}
	if alpha != 1 {
		out := c.outName(0)
		if addC {
			out = c.tmp("alpha")
		}
		if y, err = affine(c, y, alpha, 0, out); err != nil {
			return err
		}
	}
	if addC {
		var bias *fusion.Tensor
		if k := c.known(2); k != nil && beta != 1 && !k.symbolic() {
			scaled := make([]float64, k.len())
			for e := range scaled {
				scaled[e] = beta * k.value(e)
			}
			nk, err := newFloats(ast.Float64, k.shape, scaled).toDType(k.dtype)
			if err != nil {
				return err
			}
			bias, err = c.im.tensorOf(&value{k: nk}, c.n.GetInput()[2]+"_beta")
			if err != nil {
				return err
			}
		} else {
			if bias, err = c.tensor(2); err != nil {
				return err
			}
			if beta != 1 {
				if bias, err = affine(c, bias, beta, 0, c.tmp("beta")); err != nil {
					return err
				}
			}
		}
		if y, err = c.op(c.outName(0), "add", fusion.Attrs{}, y, bias); err != nil {
			return err
		}
	}
	c.set(0, y)
	return nil
}

func convSoftmax(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	xs := c.shapeOf(x)
	def := int64(-1)
	if c.opset() < 13 {
		def = 1
	}
	axis, err := c.attrInt("axis", def)
	if err != nil {
		return err
	}
	ax, err := axisOf(axis, len(xs), "axis")
	if err != nil {
		return err
	}
	log := c.n.GetOpType() == "LogSoftmax"
	if c.opset() < 13 && ax != len(xs)-1 {
		// Before opset 13 the softmax is over the flattened [axis:] axes.
		outer, inner := fusion.Const(1), fusion.Const(1)
		for k, d := range xs {
			if k < ax {
				outer, err = outer.Mul(d)
			} else {
				inner, err = inner.Mul(d)
			}
			if err != nil {
				return err
			}
		}
		flat, err := reshapeDims(c, x, []fusion.Dim{outer, inner}, c.tmp("flat"))
		if err != nil {
			return err
		}
		y, err := softmax(c, flat, -1, log, c.tmp("softmax"))
		if err != nil {
			return err
		}
		if y, err = c.op(c.outName(0), "reshape", fusion.Attrs{Shape: jsonDims(xs)}, y); err != nil {
			return err
		}
		c.set(0, y)
		return nil
	}
	y, err := softmax(c, x, ax, log, c.outName(0))
	if err != nil {
		return err
	}
	c.set(0, y)
	return nil
}

func softmax(c *ctx, x *fusion.Tensor, ax int, log bool, name string) (*fusion.Tensor, error) {
	out := name
	if log {
		out = c.tmp("softmax")
	}
	y, err := c.op(out, "softmax", fusion.Attrs{Axis: &ax}, x)
	if err != nil || !log {
		return y, err
	}
	return c.op(name, "log", fusion.Attrs{}, y)
}

func convLayerNorm(c *ctx) error {
	if len(c.n.GetOutput()) > 1 {
		for _, o := range c.n.GetOutput()[1:] {
			if o != "" {
				return fmt.Errorf("LayerNormalization's mean and inverse deviation outputs are not supported")
			}
		}
	}
	axis, err := c.attrInt("axis", -1)
	if err != nil {
		return err
	}
	eps, err := c.attrFloat("epsilon", 1e-5)
	if err != nil {
		return err
	}
	r, err := c.rank(0)
	if err != nil {
		return err
	}
	ax, err := axisOf(axis, r, "axis")
	if err != nil {
		return err
	}
	ins, err := c.tensors()
	if err != nil {
		return err
	}
	return c.result("layernorm", fusion.Attrs{Axis: &ax, Epsilon: &eps}, ins...)
}

// reduceOps are ONNX's reductions: loom's reduction, and the element-wise
// operators before (on x) and after it.
var reduceOps = map[string]struct {
	op           string
	before       string
	after        string
	axesInputAt  int64 // the opset from which axes is an input
	squareBefore bool
}{
	"ReduceSum":       {op: "reduce_sum", axesInputAt: 13},
	"ReduceMean":      {op: "reduce_mean", axesInputAt: 18},
	"ReduceMax":       {op: "reduce_max", axesInputAt: 18},
	"ReduceMin":       {op: "reduce_min", axesInputAt: 18},
	"ReduceSumSquare": {op: "reduce_sum", axesInputAt: 18, squareBefore: true},
	"ReduceL2":        {op: "reduce_sum", axesInputAt: 18, squareBefore: true, after: "sqrt"},
	"ReduceL1":        {op: "reduce_sum", axesInputAt: 18, before: "abs"},
	"ReduceLogSumExp": {op: "reduce_sum", axesInputAt: 18, before: "exp", after: "log"},
	"ReduceLogSum":    {op: "reduce_sum", axesInputAt: 18, after: "log"},
}

func convReduce(c *ctx) error {
	spec := reduceOps[c.n.GetOpType()]
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	r := len(c.shapeOf(x))
	axes, err := axesInput(c, spec.axesInputAt)
	if err != nil {
		return err
	}
	keep, err := c.attrInt("keepdims", 1)
	if err != nil {
		return err
	}
	noop, err := c.attrInt("noop_with_empty_axes", 0)
	if err != nil {
		return err
	}
	if len(axes) == 0 && noop != 0 {
		c.set(0, x)
		return nil
	}
	attrs := fusion.Attrs{KeepDims: keep != 0}
	for _, a := range axes {
		ax, err := axisOf(a, r, "axis")
		if err != nil {
			return err
		}
		attrs.Axes = append(attrs.Axes, ax)
	}
	if len(axes) == 0 {
		for a := 0; a < r; a++ {
			attrs.Axes = append(attrs.Axes, a)
		}
	}
	in := x
	switch {
	case spec.squareBefore:
		in, err = c.op(c.tmp("sq"), "mul", fusion.Attrs{}, x, x)
	case spec.before != "":
		in, err = c.op(c.tmp(spec.before), spec.before, fusion.Attrs{}, x)
	}
	if err != nil {
		return err
	}
	name := c.outName(0)
	if spec.after != "" {
		name = c.tmp("sum")
	}
	y, err := c.op(name, spec.op, attrs, in)
	if err != nil {
		return err
	}
	if spec.after != "" {
		if y, err = c.op(c.outName(0), spec.after, fusion.Attrs{}, y); err != nil {
			return err
		}
	}
	c.set(0, y)
	return nil
}

// convCumSum is a product with a constant triangular matrix along the
// axis (which must be of constant size): the axis is moved last, summed
// by the matrix, and moved back.
func convCumSum(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	axes, err := c.ints(1, "axis")
	if err != nil {
		return err
	}
	if len(axes) != 1 {
		return fmt.Errorf("axis has %d elements, not 1", len(axes))
	}
	xs := c.shapeOf(x)
	ax, err := axisOf(axes[0], len(xs), "axis")
	if err != nil {
		return err
	}
	n, ok := xs[ax].IsConst()
	if !ok || n > 4096 {
		return fmt.Errorf("CumSum needs the axis's size at import time and at most 4096, got %s", xs[ax])
	}
	exclusive, err := c.attrInt("exclusive", 0)
	if err != nil {
		return err
	}
	reverse, err := c.attrInt("reverse", 0)
	if err != nil {
		return err
	}
	// y[i] = sum of x[j] over the j that T[j][i] holds.
	t := make([]float64, n*n)
	for j := int64(0); j < n; j++ {
		for i := int64(0); i < n; i++ {
			in := j <= i
			if reverse != 0 {
				in = j >= i
			}
			if exclusive != 0 && i == j {
				in = false
			}
			if in {
				t[j*n+i] = 1
			}
		}
	}
	tk, err := newFloats(ast.Float64, []int64{n, n}, t).toDType(x.DType)
	if err != nil {
		return err
	}
	tri, err := c.im.tensorOf(&value{k: tk}, c.tmp("tri"))
	if err != nil {
		return err
	}
	last := len(xs) - 1
	perm := make([]int, len(xs))
	for a := range perm {
		perm[a] = a
	}
	perm[ax], perm[last] = last, ax
	moved := x
	if ax != last {
		if moved, err = c.op(c.tmp("moved"), "transpose", fusion.Attrs{Perm: perm}, x); err != nil {
			return err
		}
	}
	name := c.outName(0)
	if ax != last {
		name = c.tmp("sums")
	}
	y, err := matmul(c, moved, tri, name)
	if err != nil {
		return err
	}
	if ax != last {
		return c.result("transpose", fusion.Attrs{Perm: perm}, y)
	}
	c.set(0, y)
	return nil
}

// convInstanceNorm normalizes each channel of each item over its spatial
// axes, then scales and shifts per channel.
func convInstanceNorm(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	eps, err := c.attrFloat("epsilon", 1e-5)
	if err != nil {
		return err
	}
	r := len(c.shapeOf(x))
	if r < 3 {
		return fmt.Errorf("InstanceNormalization needs an input with spatial axes, got %s", c.shapeOf(x))
	}
	ax := 2
	norm, err := c.op(c.tmp("norm"), "layernorm", fusion.Attrs{Axis: &ax, Epsilon: &eps}, x)
	if err != nil {
		return err
	}
	perChannel := func(j int, what string) (*fusion.Tensor, error) {
		t, err := c.tensor(j)
		if err != nil {
			return nil, err
		}
		shape := []fusion.Dim{c.shapeOf(t)[0]}
		for range r - 2 {
			shape = append(shape, fusion.Const(1))
		}
		return reshapeDims(c, t, shape, c.tmp(what))
	}
	scale, err := perChannel(1, "scale")
	if err != nil {
		return err
	}
	bias, err := perChannel(2, "bias")
	if err != nil {
		return err
	}
	scaled, err := c.op(c.tmp("scaled"), "mul", fusion.Attrs{}, norm, scale)
	if err != nil {
		return err
	}
	return c.result("add", fusion.Attrs{}, scaled, bias)
}

// convArgMax finds the first (or, with select_last_index, the last)
// index of the largest (ArgMax) or smallest (ArgMin) element along an axis
// of constant size: the reduction's value, the elements equal to it, and
// the least (greatest) of their indices, a constant along the axis.
func convArgMax(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	xs := c.shapeOf(x)
	axis, err := c.attrInt("axis", 0)
	if err != nil {
		return err
	}
	ax, err := axisOf(axis, len(xs), "axis")
	if err != nil {
		return err
	}
	keep, err := c.attrInt("keepdims", 1)
	if err != nil {
		return err
	}
	last, err := c.attrInt("select_last_index", 0)
	if err != nil {
		return err
	}
	n, ok := xs[ax].IsConst()
	if !ok || n < 1 || n > 1<<24 {
		return fmt.Errorf("%s needs the axis's size at import time (and at least 1), got %s", c.n.GetOpType(), xs[ax])
	}
	op := "reduce_max"
	if c.n.GetOpType() == "ArgMin" {
		op = "reduce_min"
	}
	best, err := c.op(c.tmp("best"), op, fusion.Attrs{Axes: []int{ax}, KeepDims: true}, x)
	if err != nil {
		return err
	}
	hit, err := c.op(c.tmp("hit"), "equal", fusion.Attrs{}, x, best)
	if err != nil {
		return err
	}
	// The indices along the axis, broadcast over the others.
	shape := make([]int64, len(xs))
	for k := range shape {
		shape[k] = 1
	}
	shape[ax] = n
	iota := make([]int64, n)
	for i := range iota {
		iota[i] = int64(i)
	}
	idx, err := c.im.tensorOf(&value{k: newInts(ast.Int64, shape, iota)}, c.tmp("iota"))
	if err != nil {
		return err
	}
	miss, pick := n, "reduce_min" // not a hit: past every index
	if last != 0 {
		miss, pick = -1, "reduce_max"
	}
	none, err := c.scalar(ast.Int64, float64(miss))
	if err != nil {
		return err
	}
	cand, err := c.op(c.tmp("cand"), "where", fusion.Attrs{}, hit, idx, none)
	if err != nil {
		return err
	}
	return c.result(pick, fusion.Attrs{Axes: []int{ax}, KeepDims: keep != 0}, cand)
}

// convTopK takes the k largest (or smallest) elements along an axis of
// constant size, k known and at most 64, in order, ties by the lower
// index first, as k rounds of an arg-max over the elements not picked
// yet (an int mask; the others count as -inf, or +inf for the smallest).
func convTopK(c *ctx) error {
	x, err := c.tensor(0)
	if err != nil {
		return err
	}
	ks, err := c.ints(1, "k")
	if err != nil {
		return err
	}
	if len(ks) != 1 || ks[0] < 0 || ks[0] > 64 {
		return fmt.Errorf("k %v: loom takes one k from 0 to 64", ks)
	}
	k := int(ks[0])
	xs := c.shapeOf(x)
	axis, err := c.attrInt("axis", -1)
	if err != nil {
		return err
	}
	ax, err := axisOf(axis, len(xs), "axis")
	if err != nil {
		return err
	}
	largest, err := c.attrInt("largest", 1)
	if err != nil {
		return err
	}
	// sorted = 0 lets the output be in any order: the sorted one is one.
	if _, err := c.attrInt("sorted", 1); err != nil {
		return err
	}
	n, ok := xs[ax].IsConst()
	if !ok || int64(k) > n {
		return fmt.Errorf("TopK needs an axis of constant size at least k, got %s for k = %d", xs[ax], k)
	}
	if !x.DType.IsFloat() {
		return fmt.Errorf("TopK of %s is not supported (float tensors are)", x.DType)
	}
	if k == 0 {
		return fmt.Errorf("TopK with k = 0 would give empty outputs, which loom's graphs cannot have")
	}
	reduce, fill := "reduce_max", math.Inf(-1)
	if largest == 0 {
		reduce, fill = "reduce_min", math.Inf(1)
	}
	shape := make([]fusion.Dim, len(xs))
	copy(shape, xs)
	idxAll, err := iotaOf(c, shape, ax, ast.Int64, c.tmp("iota"))
	if err != nil {
		return err
	}
	none, err := c.scalar(ast.Int64, float64(n))
	if err != nil {
		return err
	}
	gone, err := c.scalar(x.DType, fill)
	if err != nil {
		return err
	}
	// alive is 1 where an element is not picked yet (values of -inf are
	// elements like any other).
	one, err := c.scalar(ast.Int64, 1)
	if err != nil {
		return err
	}
	zeroI, err := c.scalar(ast.Int64, 0)
	if err != nil {
		return err
	}
	alive, err := c.op(c.tmp("alive"), "broadcast_to", fusion.Attrs{Shape: jsonDims(shape)}, one)
	if err != nil {
		return err
	}
	var vals, idxs []*fusion.Tensor
	for r := range k {
		op := func(what, name string, attrs fusion.Attrs, ins ...*fusion.Tensor) (*fusion.Tensor, error) {
			return c.op(c.tmp(fmt.Sprintf("%s%d", what, r)), name, attrs, ins...)
		}
		live, err := op("live", "equal", fusion.Attrs{}, alive, one)
		if err != nil {
			return err
		}
		rest, err := op("rest", "where", fusion.Attrs{}, live, x, gone)
		if err != nil {
			return err
		}
		best, err := op("best", reduce, fusion.Attrs{Axes: []int{ax}, KeepDims: true}, rest)
		if err != nil {
			return err
		}
		eq, err := op("eq", "equal", fusion.Attrs{}, x, best)
		if err != nil {
			return err
		}
		hitLive, err := op("hitlive", "where", fusion.Attrs{}, eq, alive, zeroI)
		if err != nil {
			return err
		}
		hit, err := op("hit", "equal", fusion.Attrs{}, hitLive, one)
		if err != nil {
			return err
		}
		cand, err := op("cand", "where", fusion.Attrs{}, hit, idxAll, none)
		if err != nil {
			return err
		}
		at, err := op("at", "reduce_min", fusion.Attrs{Axes: []int{ax}, KeepDims: true}, cand)
		if err != nil {
			return err
		}
		vals, idxs = append(vals, best), append(idxs, at)
		if r == k-1 {
			break
		}
		picked, err := op("picked", "equal", fusion.Attrs{}, idxAll, at)
		if err != nil {
			return err
		}
		if alive, err = op("alive", "where", fusion.Attrs{}, picked, zeroI, alive); err != nil {
			return err
		}
	}
	for j, parts := range [][]*fusion.Tensor{vals, idxs} {
		if j >= len(c.n.GetOutput()) || c.n.GetOutput()[j] == "" {
			continue
		}
		if len(parts) == 1 {
			c.set(j, parts[0])
			continue
		}
		t, err := c.op(c.outName(j), "concat", fusion.Attrs{Axis: &ax}, parts...)
		if err != nil {
			return err
		}
		c.set(j, t)
	}
	return nil
}
