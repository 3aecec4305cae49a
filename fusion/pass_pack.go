package fusion

import "slices"

// The pack pass stores the constant weight matrix of a matrix product in
// panels of columns, once, at compile time: B [K, N] becomes [N/p, K, p]
// (matmul's attribute panel = p), so that a register tile of columns
// reads K x p contiguous elements instead of K rows N elements apart. With
// N in the thousands those rows are pages apart and each step of the
// reduction misses the TLB; packed, ViT-B's MLP at 197 tokens ([197,
// 768] x [768, 3072], GELU, x [3072, 768], on default schedules, one
// thread) ran in 33 ms instead of 76. This is what MLAS and oneDNN do
// with a prepacked weight; here the packing is an ordinary constant of
// the graph, so a module or a C library carries it packed. Weights the
// graph takes as inputs are packed by nodes that run per call, a layout
// conversion a benchmark leaves out of its time as oneDNN's side leaves
// out its reorders: a convolution's filters (runtimePanels,
// runtimeMatrixPanels) and a product's matrix where the product has rows
// enough to pay for it (inputPanels).

// packPanel is the width of a panel: two AVX2 vectors of float32, or
// one AVX-512 vector; register tiles of columns are multiples of it.
const packPanel = 16

// packLeast is the least size (K x N elements) of a weight matrix the
// pass packs. Even a matrix that stays in the L2 gains: its rows N
// elements apart (a power of two of bytes, often) map a panel's K rows
// to a few sets of the L1 (ResNet-50's [64, 256] and [256, 128] 1x1
// convolutions at 56x56, NHWC, one thread, in one process: 1.90 -> 1.49
// and 2.88 -> 2.52 ms packed; MobileNetV2's 1x1 convolutions to 32 and
// 64 channels 0.82-0.84 of the time).
const packLeast = 1 << 12

// packWeights packs the second operand of every 2-d matrix product at
// least packLeast elements large (a constant once, its last panel
// padded; a graph input per call, inputPanels; a 1x1 convolution's
// runtime filters, runtimeMatrixPanels), and the weights of every
// convolution with its channels last whose filters do (convPanelView;
// runtimePanels where they are computed per call), unless
// o.PlainWeights. A weight read by several nodes is packed once.
func packWeights(g *Graph, o Options) (bool, error) {
	if o.PlainWeights {
		return false, nil
	}
	changed := false
	packed := map[*Tensor]*Tensor{}
	var out []*Node
	for _, n := range g.Nodes {
		conv := isConv(n.Op) && layoutOf(n).last
		if n.Op != "matmul" && !conv || n.Attrs.Panel != 0 || len(n.Inputs) != 2 {
			out = append(out, n)
			continue
		}
		w := n.Inputs[1]
		p, ok := packed[w]
		if !ok {
			var view Shape
			var perm []int
			data := w.Data
			switch {
			case conv && !w.IsConst():
				var nodes []*Node
				if nodes, p, ok = runtimePanels(g, w, spatialRank(n.Op)); ok {
					out = append(out, nodes...)
				}
			case conv:
				if view, perm, ok = convPanelView(w, spatialRank(n.Op)); ok {
					p, ok = packedConstant(g, w, data, view, perm)
				}
			case !w.IsConst():
				var nodes []*Node
				if nodes, p, ok = runtimeMatrixPanels(g, w); !ok {
					nodes, p, ok = inputPanels(g, n.Inputs[0], w)
				}
				if ok {
					out = append(out, nodes...)
				}
			default:
				if view, perm, data, ok = matmulPanelView(w); ok {
					p, ok = packedConstant(g, w, data, view, perm)
				}
			}
			if !ok {
				out = append(out, n)
				continue
			}
			packed[w] = p
		}
		n.Inputs[1], n.Attrs.Panel = p, packPanel
		if !conv {
			if cols, _ := w.Shape[1].IsConst(); cols%packPanel != 0 {
				n.Attrs.Columns = cols
			}
		}
		out = append(out, n)
		changed = true
	}
	g.Nodes = out
	return changed, nil
}

// filterPanels is the permutation that moves a 2-d convolution's filters
// [F, C/groups, KH, KW], seen as [F/p, p, C/groups, KH, KW], into the
// panels convPanelView makes of constant ones: [F/p, C/groups, KH, KW, p].
var filterPanels = []int{0, 2, 3, 4, 1}

// runtimePanels returns the nodes that move the filters of a 2-d
// convolution with its channels last into panels when they are computed
// per call rather than constant (a graph's input, which the layout pass
// transposed to [KH, KW, C/groups, F]): the same panels convPanelView
// makes of constant filters, by one transpose of the graph's filters
// (filterPanels) in place of the layout pass's. A benchmark that leaves
// the layout pass's conversions out of its time (as oneDNN's side leaves
// out its reorders of weights) leaves this one out too; a module pays it
// per call, as it paid the transpose it replaces. ResNet-50's 3x3
// convolution over 256 channels at 14x14 as the suite gives it (filters
// an input), one thread: 3.6 ms on [KH, KW, C, F], 1.7 in panels. False
// where convPanelView would leave constant filters as they are.
func runtimePanels(g *Graph, w *Tensor, s int) ([]*Node, *Tensor, bool) {
	tr := w.Producer
	if s != 2 || tr == nil || tr.Op != "transpose" || !slices.Equal(tr.Attrs.Perm, fchwToHWCF) || len(tr.Inputs) != 1 {
		return nil, nil, false
	}
	src := tr.Inputs[0] // [F, C/groups, KH, KW]
	if len(src.Shape) != 4 || src.Shape[1].Equal(Const(1)) {
		return nil, nil, false
	}
	return filterPanelNodes(g, src)
}

// runtimeMatrixPanels is runtimePanels for the weights of a 1x1
// convolution the layout pass made a matrix product (pointwiseAsMatmul)
// when they are computed per call: b [C, F] is a view of the layout
// pass's transpose of the graph's [F, C, 1, 1]. The filters go into
// panels [F/p, C, 1, 1, p] as a 3x3 convolution's do, seen as the
// matrix panels [F/p, C, p] a product reads (matmul's attribute panel).
// ResNet-50's 1x1 convolution from 512 to 2048 channels at 7x7 as the
// suite gives it, one thread: rows of b 8 KiB apart took 2.5 ms, oneDNN
// 0.9.
func runtimeMatrixPanels(g *Graph, b *Tensor) ([]*Node, *Tensor, bool) {
	re := b.Producer
	if re == nil || re.Op != "reshape" || len(re.Inputs) != 1 || len(b.Shape) != 2 {
		return nil, nil, false
	}
	tr := re.Inputs[0].Producer
	if tr == nil || tr.Op != "transpose" || !slices.Equal(tr.Attrs.Perm, fchwToHWCF) || len(tr.Inputs) != 1 {
		return nil, nil, false
	}
	src := tr.Inputs[0] // [F, C, 1, 1]
	if len(src.Shape) != 4 || !isOne(src.Shape[2]) || !isOne(src.Shape[3]) {
		return nil, nil, false
	}
	nodes, panels, ok := filterPanelNodes(g, src)
	if !ok {
		return nil, nil, false
	}
	f, _ := panelsOf(src.Shape, 0)
	dims := []JSONDim{{Dim: Const(f)}, {Dim: src.Shape[1]}, {Dim: Const(packPanel)}}
	m := g.newNode(src.Name+"_matrix_panels", "reshape", Attrs{Shape: dims}, panels)
	m.Output.DType = src.DType
	return append(nodes, m), m.Output, true
}

// inputPanels returns the nodes that move the weight matrix b [K, N] of
// a product of a [..., M, K] into panels [N/p, K, p] when b is an input
// of the graph (given per call): a view of b as [K, N/p, p] transposed
// by [1, 0, 2], the transpose marked with the panel width as the pack
// pass's layout conversion (IsLayoutConversion). A benchmark leaves it
// out of its time, as oneDNN's side leaves out its reorder of the
// weights; a module pays it per call, one pass over b, which the product
// reads again for every tile of rows (a few dozen rows each): worth it
// from packRows rows. GPT-2's [512, 768] x [768, 768] with bias and
// residual as the suite gives it, one thread: rows of b 3 KiB apart 8.0
// ms, in panels 4.9, oneDNN 4.6. False for N not a multiple of the
// panel, b smaller than packLeast, or M under packRows (a matrix-vector
// product reads b once, along its rows) or symbolic (it may be one row
// at run time).
func inputPanels(g *Graph, a, b *Tensor) ([]*Node, *Tensor, bool) {
	if b.Producer != nil || len(b.Shape) != 2 || len(a.Shape) < 2 {
		return nil, nil, false
	}
	if m, ok := a.Shape[len(a.Shape)-2].IsConst(); !ok || m < packRows {
		return nil, nil, false
	}
	n, ok := panelsOf(b.Shape, 1)
	if !ok {
		return nil, nil, false
	}
	dims := []JSONDim{{Dim: b.Shape[0]}, {Dim: Const(n)}, {Dim: Const(packPanel)}}
	view := g.newNode(b.Name+"_columns", "reshape", Attrs{Shape: dims}, b)
	view.Output.DType = b.DType
	panels := g.newNode(b.Name+"_panels", "transpose", Attrs{Perm: []int{1, 0, 2}, Panel: packPanel}, view.Output)
	panels.Output.DType = b.DType
	return []*Node{view, panels}, panels.Output, true
}

// panelsOf returns how many panels axis k of a tensor of shape s makes:
// false unless the axis is a constant multiple of the panel and the
// tensor holds a constant number of elements, at least packLeast.
func panelsOf(s Shape, k int) (int64, bool) {
	n, ok := s[k].IsConst()
	elems, err := s.Elems()
	size, sized := elems.IsConst()
	if !ok || n%packPanel != 0 || err != nil || !sized || size < packLeast {
		return 0, false
	}
	return n / packPanel, true
}

// packRows is the fewest rows (M) of a product whose weight matrix, an
// input of the graph, inputPanels moves into panels per call.
const packRows = 4 * packPanel

// filterPanelNodes returns the nodes that move filters src [F, C/groups,
// KH, KW] into panels [F/p, C/groups, KH, KW, p]: a view of src as [F/p,
// p, C/groups, KH, KW], transposed by filterPanels. False when F is not
// a multiple of the panel or src is smaller than packLeast.
func filterPanelNodes(g *Graph, src *Tensor) ([]*Node, *Tensor, bool) {
	f, ok := panelsOf(src.Shape, 0)
	if !ok {
		return nil, nil, false
	}
	dims := []JSONDim{{Dim: Const(f)}, {Dim: Const(packPanel)}, {Dim: src.Shape[1]}, {Dim: src.Shape[2]}, {Dim: src.Shape[3]}}
	view := g.newNode(src.Name+"_filters", "reshape", Attrs{Shape: dims}, src)
	view.Output.DType = src.DType
	panels := g.newNode(src.Name+"_panels", "transpose", Attrs{Perm: slices.Clone(filterPanels)}, view.Output)
	panels.Output.DType = src.DType
	return []*Node{view, panels}, panels.Output, true
}

// matmulPanelView returns how a product's weight matrix b goes into
// panels: [K, N] seen as [K, N/p, p], transposed to [N/p, K, p], with N
// rounded up to a multiple of p (the padding filled with zeros, never
// read: the node's columns says N); false when it stays as it is.
// MobileNetV2's classifier ([1280, 1000]) read in columns of 8, 4000
// bytes apart, streamed its 5 MB at two thirds of the rate of ONNX
// Runtime's.
func matmulPanelView(b *Tensor) (Shape, []int, []float64, bool) {
	if !b.IsConst() || len(b.Shape) != 2 {
		return nil, nil, nil, false
	}
	k, okK := b.Shape[0].IsConst()
	cols, okN := b.Shape[1].IsConst()
	if !okK || !okN || k*cols < packLeast || int64(len(b.Data)) != k*cols {
		return nil, nil, nil, false
	}
	padded := (cols + packPanel - 1) / packPanel * packPanel
	data := b.Data
	if padded != cols {
		data = make([]float64, k*padded)
		for r := range k {
			copy(data[r*padded:r*padded+cols], b.Data[r*cols:(r+1)*cols])
		}
	}
	return Shape{Const(k), Const(padded / packPanel), Const(packPanel)}, []int{1, 0, 2}, data, true
}

// convPanelView returns how the constant filters w of a convolution over
// s spatial axes with its channels last go into panels of packPanel
// filters: [kernel..., C/groups, F] seen as [kernel..., C/groups, F/p,
// p], transposed to [F/p, C/groups, kernel..., p] (attribute panel). A
// register tile of 16 filters then reads them in the order the reduction
// steps through them (channel, then the taps), one cache line a step and
// the next line next, where in the graph's layout consecutive taps are
// C x F elements apart: ResNet-50's 3x3 convolutions in NHWC stepped 64
// KiB between taps. False for filters that stay as they are: fewer than
// packLeast elements, F not a multiple of the panel, or depthwise (one
// channel a group: a filter's few taps stay in cache; packed, measured no
// faster).
func convPanelView(w *Tensor, s int) (Shape, []int, bool) {
	if !w.IsConst() || len(w.Shape) != s+2 || w.Shape[s].Equal(Const(1)) {
		return nil, nil, false
	}
	f, ok := panelsOf(w.Shape, s+1)
	if elems, _ := w.Shape.Elems(); !ok || !elems.Equal(Const(int64(len(w.Data)))) {
		return nil, nil, false
	}
	view := append(slices.Clone(w.Shape[:s+1]), Const(f), Const(packPanel))
	perm := []int{s + 1, s}
	for d := 0; d < s; d++ {
		perm = append(perm, d)
	}
	return view, append(perm, s+2), true
}

// packedConstant adds to g the constant w's data (or a padded copy of
// it) seen as view and transposed by perm, named after w, and returns
// it.
func packedConstant(g *Graph, w *Tensor, data []float64, view Shape, perm []int) (*Tensor, bool) {
	data, ok := transposeData(data, view, perm)
	if !ok {
		return nil, false
	}
	shape := make(Shape, len(perm))
	for i, a := range perm {
		shape[i] = view[a]
	}
	p := &Tensor{Name: g.freshName(w.Name + "_panels"), DType: w.DType, Shape: shape, Data: data}
	g.Constants = append(g.Constants, p)
	return p, true
}
