package fusion

import (
	"slices"
)

// layout runs 2-d convolutions and poolings with their channels last
// (NHWC) when Options.Layout asks for it, as TVM's ConvertLayout and ONNX
// Runtime's NCHWc transformer do: a depthwise convolution then reads a
// vector of channels per tap where in NCHW it read a strided row of
// pixels, a 1x1 convolution is a plain matrix product of pixels by
// channels, and one whose window tiles the image (a patch embedding) a
// product of patches by filters.
//
// Each such node n becomes
//
//	transpose(n'(transpose(x, NCHW→NHWC), w'), NHWC→NCHW)
//
// with n' the same operator in layout NHWC and w' its weights as [KH, KW,
// C/groups, F] (a constant moved here once, never per call). Then the
// transposes back to NCHW sink through what does not care about layout:
// an element-wise node whose operands are all transposes back (or
// constants and tensors broadcast against them, transposed to match) runs
// in NHWC and is followed by the transpose instead, and so is a reduction.
// A transpose back that meets the transpose forward of the next
// convolution cancels with it, so that a chain of convolutions,
// activations and residual additions converts only at its ends: the
// graph's inputs and outputs, and operators that need NCHW (a reshape).
// A concat of transposes back only (SqueezeNet's expansions, an
// Inception block's branches, DenseNet's features) joins the NHWC
// tensors along the axis its own was, and is transposed back after.
func layoutPass(g *Graph, o Options) (bool, error) {
	if !wantsChannelsLast(g, o) {
		return false, nil
	}
	r := layoutRewriter{g: g, pixels: map[*Tensor]*Tensor{}}
	for _, n := range g.Nodes {
		switch {
		case channelsFirstWindow(n) && !(o.Layout == LayoutAuto && KeepsChannelsFirst(n)):
			r.toChannelsLast(n)
		case r.sinkable(n):
			r.sinkElementwise(n)
		case r.sinkableReduce(n):
			r.sinkReduce(n)
		case sinkableConcat(n):
			r.sinkConcat(n)
		default:
			r.out = append(r.out, n)
		}
	}
	g.Nodes = r.out
	return r.changed, nil
}

// The permutations between the layouts (transpose's perm: the result's
// axis k is the operand's axis perm[k]).
var (
	nchwToNHWC = []int{0, 2, 3, 1}
	nhwcToNCHW = []int{0, 3, 1, 2}
	fchwToHWCF = []int{2, 3, 1, 0} // a convolution's weights
)

// IsLayoutConversion says whether n is a transpose the layout and pack
// passes convert tensors by: activations between NCHW and NHWC, a
// convolution's weights to [KH, KW, C/groups, F] or to panels of filters
// (filterPanels), or a matrix given per call into panels (its attribute
// panel set: inputPanels). (A benchmark leaves kernels of such
// transposes at a graph's ends out of its time, as oneDNN's side leaves
// out its reorders.)
func IsLayoutConversion(n *Node) bool {
	if n == nil || n.Op != "transpose" {
		return false
	}
	perm := n.Attrs.Perm
	return slices.Equal(perm, nchwToNHWC) || slices.Equal(perm, nhwcToNCHW) || slices.Equal(perm, fchwToHWCF) || slices.Equal(perm, filterPanels) || n.Attrs.Panel > 0
}

// Layouts Options.Layout may name.
const (
	LayoutAuto          = ""
	LayoutChannelsFirst = "NCHW"
	LayoutChannelsLast  = "NHWC"
)

// wantsChannelsLast says whether the pass runs on g: when Options.Layout
// is NHWC, or left to loom (LayoutAuto) on a model with a 2-d
// convolution of constant weights: a depthwise or grouped one, where
// NCHW costs most (MobileNetV2 on default schedules, one thread: 12.5 ms
// in NCHW, 11.5 in NHWC; its strided depthwise convolutions take half
// the time or less), or any other while the pack pass stores its weights
// in panels (ResNet-50, default schedules, one thread: 138 ms in NHWC
// with its weights packed, 167 in NCHW, 219 in NHWC with the weights as
// the graph has them). Weights given per call would be transposed per
// call, so such a graph stays NCHW.
func wantsChannelsLast(g *Graph, o Options) bool {
	switch o.Layout {
	case LayoutChannelsLast:
		return true
	case LayoutAuto:
		return slices.ContainsFunc(g.Nodes, func(n *Node) bool {
			if !channelsFirstWindow(n) || n.Op != "conv2d" || !n.Inputs[1].IsConst() || KeepsChannelsFirst(n) {
				return false
			}
			grouped := n.Attrs.Groups != nil && *n.Attrs.Groups > 1
			return grouped || !o.PlainWeights
		})
	}
	return false
}

// KeepsChannelsFirst says whether loom's choice of layout (LayoutAuto)
// keeps node n in NCHW whatever its neighbours do: a grouped convolution
// whose groups hold a number of input channels with no power-of-two
// factor of 8 or more (2, 3, 4, 6 or 12 a group). With its channels last a vector's
// lanes would read across groups and gather, or run a group's few
// channels a vector, where in NCHW they are pixels: 48 channels in
// groups of 6 at 10x10, one thread on an Ice Lake Xeon, 0.116 ms in
// NHWC, 0.009 in NCHW; ResNeXt-50's first stage (128 channels in 32
// groups of 4 at 56x56, 3x3), one thread on an AMD Zen 5, 0.78 ms in
// NHWC (4 of 16 lanes), 0.20 in NCHW. Groups of 8 stay NHWC: a whole
// vector on AVX2, and on AVX-512 within 20% of NCHW (ResNeXt-50's
// second stage, 0.43 ms in NHWC, 0.36 in NCHW), where NCHW's pixels
// fill a vector badly once the images are small (its third stage, 16 a
// group at 14x14: 0.14 ms in NHWC, 0.44 in NCHW). Under LayoutAuto it
// stays NCHW, converted around where its neighbours go channels last.
func KeepsChannelsFirst(n *Node) bool {
	if n.Op != "conv2d" || n.Attrs.Groups == nil || *n.Attrs.Groups <= 1 || len(n.Inputs) < 2 || n.Inputs[1] == nil || len(n.Inputs[1].Shape) != 4 {
		return false
	}
	g, ok := n.Inputs[1].Shape[1].IsConst()
	return ok && g > 1 && g&-g < 8
}

// channelsFirstWindow says whether n is a 2-d convolution or pooling in
// layout NCHW (of rank 4; its sizes may be symbolic).
func channelsFirstWindow(n *Node) bool {
	switch n.Op {
	case "conv2d", "max_pool2d", "avg_pool2d":
	default:
		return false
	}
	if layoutOf(n).last || len(n.Inputs[0].Shape) != 4 || len(n.Output.Shape) != 4 {
		return false
	}
	return n.Op != "conv2d" || len(n.Inputs[1].Shape) == 4
}

// layoutRewriter builds the pass's new node list.
type layoutRewriter struct {
	g       *Graph
	out     []*Node
	changed bool
	// pixels maps an NHWC tensor [N, H, W, F] that reshapes a matrix
	// [N*H*W, F] (a 1x1 convolution's product, or an element-wise
	// epilogue of one) to that matrix.
	pixels map[*Tensor]*Tensor
}

// toChannelsLast rewrites window node n (conv2d or a pooling, NCHW) as
// its NHWC twin between transposes; n itself becomes the transpose back,
// so that its output keeps its name and readers.
func (r *layoutRewriter) toChannelsLast(n *Node) {
	x := r.transposed(n.Inputs[0], nchwToNHWC)
	if r.pointwiseAsMatmul(n, x) || r.patchesAsMatmul(n) {
		return
	}
	attrs := n.Attrs.clone()
	attrs.Layout = LayoutChannelsLast
	inputs := []*Tensor{x}
	if n.Op == "conv2d" {
		inputs = append(inputs, r.transposed(n.Inputs[1], fchwToHWCF))
	}
	r.replaceByTwin(n, n.Op, attrs, inputs)
}

// pointwiseAsMatmul rewrites a 1x1 convolution of stride 1 without
// padding or groups, whose input in NHWC is x, as the matrix product it
// is: the pixels [N*H*W, C] (a view of x) times the weights [C, F], seen
// as [N, H, W, F]; so it gets matmul's schedules, whose register tiles
// run over pixels and filters where the convolution's ran over rows of
// an image. It reports whether n was such a convolution.
func (r *layoutRewriter) pointwiseAsMatmul(n *Node, x *Tensor) bool {
	if n.Op != "conv2d" {
		return false
	}
	w := n.Inputs[1]
	xs := nhwcShape(n.Inputs[0].Shape) // x's shape, which the pass infers later
	geo, err := (&inferCtx{n: n}).windowAttrs(2)
	if err != nil || geo.groups != 1 || !isOne(w.Shape[2]) || !isOne(w.Shape[3]) ||
		slices.ContainsFunc(geo.strides, func(v int64) bool { return v != 1 }) ||
		slices.ContainsFunc(geo.pads, func(v int64) bool { return v != 0 }) {
		return false
	}
	flat := r.flatten(x, xs)
	if flat == nil {
		return false
	}
	dt := n.Output.DType
	// The weights [F, C, 1, 1] as [C, F]: a transpose of the same
	// elements seen as [F, C, 1, 1] -> [1, 1, C, F].
	wt := r.transposed(w, fchwToHWCF)
	var wm *Tensor
	if wt.IsConst() {
		wm = &Tensor{Name: r.g.freshName(w.Name + "_matrix"), DType: w.DType, Shape: Shape{w.Shape[1], w.Shape[0]}, Data: wt.Data}
		r.g.Constants = append(r.g.Constants, wm)
	} else {
		re := r.g.newNode(w.Name+"_matrix", "reshape", Attrs{Shape: []JSONDim{{Dim: w.Shape[1]}, {Dim: w.Shape[0]}}}, wt)
		re.Output.DType = w.DType
		r.out = append(r.out, re)
		wm = re.Output
	}
	mm := r.g.newNode(n.Output.Name+"_mm", "matmul", Attrs{}, flat, wm)
	mm.Output.DType = dt
	r.out = append(r.out, mm)
	r.toImage(n, mm.Output)
	return true
}

// patchesAsMatmul rewrites a convolution whose window tiles its input
// (stride equal to the window, no padding, dilation or groups, constant
// image sizes that are multiples of the window, any batch: a vision
// transformer's patch embedding, ConvNeXt's stem and 2x2 downsampling),
// as the matrix product it is: the patches [N*Ho*Wo, K] (one
// transpose of the input, reshaped) times the weights [K, F], seen as
// [N, Ho, Wo, F], where a patch's K = C*KH*KW elements come in the order
// the input has them: (c, kh, kw) from an NCHW input, whose rows of KW
// pixels the transpose then copies whole, and (kh, kw, c) from one
// already in NHWC (a convolution's result), rows of KW*C. As a
// convolution its register tiles ran over rows of the output, each tap
// a short reduction over C; as a product they run over patches and
// filters with one reduction of K. It reports whether n was such a
// convolution.
func (r *layoutRewriter) patchesAsMatmul(n *Node) bool {
	if n.Op != "conv2d" {
		return false
	}
	w := n.Inputs[1]
	geo, err := (&inferCtx{n: n}).windowAttrs(2)
	if err != nil || geo.groups != 1 || slices.ContainsFunc(geo.pads, func(v int64) bool { return v != 0 }) ||
		slices.ContainsFunc(geo.dilations, func(v int64) bool { return v != 1 }) {
		return false
	}
	var dims [3]int64 // the input's C, H, W; the batch may be symbolic
	for d := range dims {
		var ok bool
		if dims[d], ok = n.Inputs[0].Shape[d+1].IsConst(); !ok {
			return false
		}
	}
	c, h, wd := dims[0], dims[1], dims[2]
	kh, ok1 := w.Shape[2].IsConst()
	kw, ok2 := w.Shape[3].IsConst()
	f, ok3 := w.Shape[0].IsConst()
	if !ok1 || !ok2 || !ok3 || kh != geo.strides[0] || kw != geo.strides[1] || h%kh != 0 || wd%kw != 0 {
		return false
	}
	ho, wo, k := h/kh, wd/kw, c*kh*kw
	batch := n.Inputs[0].Shape[0]
	rowsOf, err1 := batch.Mul(Const(ho)) // N*Ho
	patchesOf, err2 := rowsOf.Mul(Const(wo))
	if err1 != nil || err2 != nil {
		return false
	}
	name := n.Output.Name // new nodes' names start with it: fresh names are not, until the pass ends
	var patches, wm *Tensor
	if nhwc := backFromNHWC(n.Inputs[0]); nhwc != nil {
		// [N, H, W, C] as [N*Ho, KH, Wo, KW*C], rows of patches, to
		// [N*Ho, Wo, KH, KW*C]; the weights [F, C, KH, KW] as [KH, KW,
		// C, F].
		rows := r.reshape(nhwc, name+"_patch_rows", rowsOf, Const(kh), Const(wo), Const(kw*c))
		patches = r.reshape(r.transpose(rows, name+"_patches_4d", 0, 2, 1, 3), name+"_patches", patchesOf, Const(k))
		wm = r.weightMatrix(r.transposed(w, fchwToHWCF), name, k, f)
	} else {
		// [N, C, H, W] as [N, C, Ho, KH, Wo, KW] to [N, Ho, Wo, C, KH,
		// KW]; the weights [F, C, KH, KW] as [F, K], transposed.
		six := r.reshape(n.Inputs[0], name+"_patch_rows", batch, Const(c), Const(ho), Const(kh), Const(wo), Const(kw))
		patches = r.reshape(r.transpose(six, name+"_patches_6d", 0, 2, 4, 1, 3, 5), name+"_patches", patchesOf, Const(k))
		if w.IsConst() {
			data, _ := transposeData(w.Data, Shape{Const(f), Const(k)}, []int{1, 0}) // constant sizes
			wm = r.weightMatrix(&Tensor{Name: w.Name, DType: w.DType, Data: data}, name, k, f)
		} else {
			// As [F, K, 1, 1] moved as filters are (fchwToHWCF): a
			// layout conversion, as weights given per call always get.
			filters := r.reshape(w, name+"_filters", Const(f), Const(k), Const(1), Const(1))
			wm = r.weightMatrix(r.transpose(filters, name+"_filters_t", fchwToHWCF...), name, k, f)
		}
	}
	mm := r.g.newNode(name+"_mm", "matmul", Attrs{}, patches, wm)
	mm.Output.DType = n.Output.DType
	r.out = append(r.out, mm)
	r.toImage(n, mm.Output)
	return true
}

// weightMatrix returns wt, a convolution's weights moved so that their
// elements run as a [k, f] matrix's do, as that matrix, named after
// name: a new constant of wt's data, or a reshape.
func (r *layoutRewriter) weightMatrix(wt *Tensor, name string, k, f int64) *Tensor {
	if wt.IsConst() {
		m := &Tensor{Name: r.g.freshName(wt.Name + "_matrix"), DType: wt.DType, Shape: Shape{Const(k), Const(f)}, Data: wt.Data}
		r.g.Constants = append(r.g.Constants, m)
		return m
	}
	return r.reshape(wt, name+"_weights", Const(k), Const(f))
}

// reshape appends a reshape of t to dims.
func (r *layoutRewriter) reshape(t *Tensor, name string, dims ...Dim) *Tensor {
	js := make([]JSONDim, len(dims))
	for i, d := range dims {
		js[i] = JSONDim{Dim: d}
	}
	re := r.g.newNode(name, "reshape", Attrs{Shape: js}, t)
	re.Output.DType = t.DType
	r.out = append(r.out, re)
	return re.Output
}

// transpose appends a transpose of t by perm.
func (r *layoutRewriter) transpose(t *Tensor, name string, perm ...int) *Tensor {
	tr := r.g.newNode(name, "transpose", Attrs{Perm: slices.Clone(perm)}, t)
	tr.Output.DType = t.DType
	r.out = append(r.out, tr)
	return tr.Output
}

// toImage makes NCHW node n the transpose of matrix m [N*H*W, F] seen as
// NHWC, and records that view.
func (r *layoutRewriter) toImage(n *Node, m *Tensor) {
	s := nhwcShape(n.Output.Shape)
	dims := []JSONDim{{Dim: s[0]}, {Dim: s[1]}, {Dim: s[2]}, {Dim: s[3]}}
	r.pixels[r.replaceByTwin(n, "reshape", Attrs{Shape: dims}, []*Tensor{m})] = m
}

// replaceByTwin appends a node computing n's result in NHWC (op, attrs,
// inputs), turns n into the transpose of it back to NCHW and returns the
// NHWC result.
func (r *layoutRewriter) replaceByTwin(n *Node, op string, attrs Attrs, inputs []*Tensor) *Tensor {
	twin := r.g.newNode(n.Output.Name+"_nhwc", op, attrs, inputs...)
	twin.Output.DType = n.Output.DType
	r.out = append(r.out, twin)
	n.Op, n.Inputs, n.Attrs = "transpose", []*Tensor{twin.Output}, Attrs{Perm: slices.Clone(nhwcToNCHW)}
	r.out = append(r.out, n)
	r.changed = true
	return twin.Output
}

// nhwcShape is NCHW shape s with its channels last.
func nhwcShape(s Shape) Shape {
	out := make(Shape, 4)
	for k, a := range nchwToNHWC {
		out[k] = s[a]
	}
	return out
}

// asPixels returns the NHWC tensor t (of operand orig) as a matrix [N*H*W, F]
// for an element-wise node of that result shape: the matrix it reshapes,
// a scalar as it is, a constant broadcast along the channels only as
// [F] or [1], or a tensor of the whole shape (whole) through a reshape
// (a view). ok is false for anything else.
func (r *layoutRewriter) asPixels(t, orig *Tensor, nhwc Shape, whole bool) (*Tensor, bool) {
	if m, ok := r.pixels[t]; ok {
		return m, true
	}
	switch {
	case len(orig.Shape) == 0:
		return t, true
	case t.IsConst():
		if len(t.Shape) != 4 || !isOne(t.Shape[0]) || !isOne(t.Shape[1]) || !isOne(t.Shape[2]) {
			return nil, false
		}
		c := &Tensor{Name: r.g.freshName(t.Name + "_row"), DType: t.DType, Shape: Shape{t.Shape[3]}, Data: t.Data}
		r.g.Constants = append(r.g.Constants, c)
		return c, true
	case whole:
		return r.flatten(t, nhwc), true
	}
	return nil, false
}

// flatten appends a reshape of NHWC tensor t, of shape nhwc, to [N*H*W,
// C]; nil when the pixels cannot be counted.
func (r *layoutRewriter) flatten(t *Tensor, nhwc Shape) *Tensor {
	if m, ok := r.pixels[t]; ok {
		return m
	}
	pixels, err := nhwc[0].Mul(nhwc[1])
	if err == nil {
		pixels, err = pixels.Mul(nhwc[2])
	}
	if err != nil {
		return nil
	}
	flat := r.g.newNode(t.Name+"_pixels", "reshape", Attrs{Shape: []JSONDim{{Dim: pixels}, {Dim: nhwc[3]}}}, t)
	flat.Output.DType = t.DType
	r.out = append(r.out, flat)
	return flat.Output
}

// backFromNHWC returns the NHWC tensor t is the transpose of, or nil.
func backFromNHWC(t *Tensor) *Tensor {
	p := t.Producer
	if p == nil || p.Op != "transpose" || !slices.Equal(perm(p), nhwcToNCHW) {
		return nil
	}
	return p.Inputs[0]
}

// transposed returns t (rank 4, or of lower rank and broadcast as rank
// 4) permuted by p: the tensor t was transposed from when p undoes that,
// a constant moved now, or a new node.
func (r *layoutRewriter) transposed(t *Tensor, p []int) *Tensor {
	if src := backFromNHWC(t); src != nil && slices.Equal(p, nchwToNHWC) {
		return src
	}
	if len(t.Shape) == 0 {
		return t
	}
	shape := slices.Clone(t.Shape)
	for len(shape) < 4 {
		shape = slices.Insert(shape, 0, Const(1))
	}
	if t.IsConst() {
		if data, ok := transposeData(t.Data, shape, p); ok {
			c := &Tensor{Name: r.g.freshName(t.Name + "_nhwc"), DType: t.DType, Data: data}
			for _, a := range p {
				c.Shape = append(c.Shape, shape[a])
			}
			r.g.Constants = append(r.g.Constants, c)
			return c
		}
	}
	if len(t.Shape) < 4 {
		dims := make([]JSONDim, len(shape))
		for k, d := range shape {
			dims[k] = JSONDim{Dim: d}
		}
		re := r.g.newNode(t.Name+"_4d", "reshape", Attrs{Shape: dims}, t)
		re.Output.DType = t.DType
		r.out = append(r.out, re)
		t = re.Output
	}
	n := r.g.newNode(t.Name+"_nhwc", "transpose", Attrs{Perm: slices.Clone(p)}, t)
	n.Output.DType = t.DType
	r.out = append(r.out, n)
	return n.Output
}

// sinkable says whether element-wise node n can run in NHWC: some operand
// is a transpose back from NHWC and the result is of rank 4 (every other
// operand is transposed to match: a constant now, a tensor per call).
func (r *layoutRewriter) sinkable(n *Node) bool {
	if ops[n.Op].kind != Elementwise || len(n.Output.Shape) != 4 {
		return false
	}
	back := false
	for _, in := range n.Inputs {
		switch {
		case backFromNHWC(in) != nil:
			back = true
		case len(in.Shape) > 4:
			return false
		}
	}
	return back
}

// sinkElementwise runs element-wise node n in NHWC, or on the pixel
// matrix when an operand is one (a 1x1 convolution's epilogue, which then
// fuses with its product: an anchor takes consumers of its own shape).
func (r *layoutRewriter) sinkElementwise(n *Node) {
	inputs := make([]*Tensor, len(n.Inputs))
	for k, in := range n.Inputs {
		inputs[k] = r.transposed(in, nchwToNHWC)
	}
	if m := r.onPixels(n, inputs); m != nil {
		r.toImage(n, m)
		return
	}
	r.replaceByTwin(n, n.Op, n.Attrs.clone(), inputs)
}

// onPixels appends element-wise node n on pixel matrices, its NHWC
// operands being inputs, and returns its result; nil where no operand is
// a pixel matrix or some other operand cannot be seen as one.
func (r *layoutRewriter) onPixels(n *Node, inputs []*Tensor) *Tensor {
	if !slices.ContainsFunc(inputs, func(t *Tensor) bool { _, ok := r.pixels[t]; return ok }) {
		return nil
	}
	nhwc := nhwcShape(n.Output.Shape)
	flat := make([]*Tensor, len(inputs))
	for k, t := range inputs {
		m, ok := r.asPixels(t, n.Inputs[k], nhwc, n.Inputs[k].Shape.Equal(n.Output.Shape))
		if !ok || m == nil {
			return nil
		}
		flat[k] = m
	}
	e := r.g.newNode(n.Output.Name+"_px", n.Op, n.Attrs.clone(), flat...)
	e.Output.DType = n.Output.DType
	r.out = append(r.out, e)
	return e.Output
}

// sinkableReduce says whether n is a reduction of a transpose back from
// NHWC.
func (r *layoutRewriter) sinkableReduce(n *Node) bool {
	return ops[n.Op].kind == Reduce && len(n.Inputs) == 1 && len(n.Inputs[0].Shape) == 4 && backFromNHWC(n.Inputs[0]) != nil
}

// sinkableConcat says whether n concatenates rank-4 transposes back from
// NHWC and nothing else.
func sinkableConcat(n *Node) bool {
	if n.Op != "concat" || len(n.Output.Shape) != 4 {
		return false
	}
	return !slices.ContainsFunc(n.Inputs, func(in *Tensor) bool { return backFromNHWC(in) == nil })
}

// sinkConcat concatenates the NHWC tensors instead, along the axis where
// NHWC has the one n joins (the channels: its last), and transposes the
// result back. SqueezeNet 1.1 on default schedules, one thread: each of
// its Fire modules converted the 1x1 expansion to NCHW and the
// concatenation back, 0.27-0.63 ms a module, 2.5 ms of 10.3.
func (r *layoutRewriter) sinkConcat(n *Node) {
	inputs := make([]*Tensor, len(n.Inputs))
	for k, in := range n.Inputs {
		inputs[k] = backFromNHWC(in)
	}
	axis := 0
	if n.Attrs.Axis != nil {
		axis = (*n.Attrs.Axis%4 + 4) % 4
	}
	attrs := n.Attrs.clone()
	attrs.Axis = &nhwcToNCHW[axis]
	r.replaceByTwin(n, "concat", attrs, inputs)
}

// sinkReduce reduces the NHWC tensor over the same axes instead; the
// axes kept come out in NHWC's order, transposed back when that differs
// from NCHW's.
func (r *layoutRewriter) sinkReduce(n *Node) {
	src := backFromNHWC(n.Inputs[0])
	axes := n.Attrs.Axes
	if axes == nil {
		axes = []int{0, 1, 2, 3}
	}
	reduced := make([]bool, 4) // by NCHW axis
	var srcAxes []int
	for _, a := range axes {
		a = (a + 4) % 4
		reduced[a] = true
		srcAxes = append(srcAxes, nhwcToNCHW[a])
	}
	slices.Sort(srcAxes)
	attrs := n.Attrs.clone()
	attrs.Axes = srcAxes
	twin := r.g.newNode(n.Output.Name+"_nhwc", n.Op, attrs, src)
	twin.Output.DType = n.Output.DType
	r.out = append(r.out, twin)
	// The NCHW axes the result keeps, and where NHWC puts each.
	var kept, at []int
	for a := range 4 {
		if n.Attrs.KeepDims || !reduced[a] {
			kept = append(kept, a)
			at = append(at, nhwcToNCHW[a])
		}
	}
	q := make([]int, len(kept)) // the result's perm: NCHW-kept axis k is NHWC-kept axis q[k]
	sorted := slices.Sorted(slices.Values(at))
	for k, a := range at {
		q[k] = slices.Index(sorted, a)
	}
	n.Inputs, n.Attrs = []*Tensor{twin.Output}, Attrs{}
	if isIdentityPerm(q) {
		n.Op = "identity"
	} else {
		n.Op, n.Attrs.Perm = "transpose", q
	}
	r.out = append(r.out, n)
	r.changed = true
}
