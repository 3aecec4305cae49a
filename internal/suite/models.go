package suite

import "fmt"

// conv is one convolution kernel: input [1, cin, h, w], cout filters of
// k x k at stride, padded to keep the size (k/2), in groups; its bias, a
// residual added when residual, and act: "relu", "relu6", "silu" or "".
func conv(cin, h, w, cout, k, stride, groups int, act string, residual bool) *graph {
	return convPadded(cin, h, w, cout, k, stride, k/2, groups, act, residual)
}

// convPadded is conv with pad rows and columns of zeros on every side.
func convPadded(cin, h, w, cout, k, stride, pad, groups int, act string, residual bool) *graph {
	name := fmt.Sprintf("conv%dx%d_%dto%d_%dx%d_s%d", k, k, cin, cout, h, w, stride)
	switch {
	case groups > 1 && groups == cin && cout == cin:
		name = fmt.Sprintf("dwconv%dx%d_%d_%dx%d_s%d", k, k, cin, h, w, stride)
	case groups > 1:
		name = fmt.Sprintf("gconv%dx%d_%dto%d_g%d_%dx%d_s%d", k, k, cin, cout, groups, h, w, stride)
	}
	if pad != k/2 {
		name += fmt.Sprintf("_p%d", pad)
	}
	if act != "" {
		name += "_" + act
	}
	if residual {
		name += "_residual"
	}
	g := newGraph(name)
	g.spec = fmt.Sprintf("conv 1 %d %d %d %d %d %d %d %d %d %s %d", cin, h, w, cout, k, k, stride, pad, groups, orNone(act), b2i(residual))
	x := g.input("X", 1, cin, h, w)
	wt := g.input("W", cout, cin/groups, k, k)
	b := g.input("Bias", cout, 1, 1)
	attrs := map[string]any{"strides": []int{stride, stride}, "pads": []int{pad, pad, pad, pad}}
	if groups > 1 {
		attrs["groups"] = groups
	}
	y := g.op("add", nil, g.op("conv2d", attrs, x, wt), b)
	if residual {
		ho, wo := (h+2*pad-k)/stride+1, (w+2*pad-k)/stride+1
		y = g.op("add", nil, y, g.input("R", 1, cout, ho, wo))
	}
	switch act {
	case "relu":
		y = g.op("relu", nil, y)
	case "relu6":
		y = g.op("min", nil, g.op("max", nil, y, g.scalar(0)), g.scalar(6))
	case "silu":
		y = g.op("silu", nil, y)
	}
	return g.out(y)
}

// matmul is [m, k] x [k, n] with a bias, an activation ("relu", "gelu",
// "gelu_tanh" or "") and a residual [m, n] added when residual.
func matmul(m, k, n int, act string, residual bool) *graph {
	name := fmt.Sprintf("matmul_%dx%dx%d_bias", m, k, n)
	if act != "" {
		name += "_" + act
	}
	if residual {
		name += "_residual"
	}
	g := newGraph(name)
	g.spec = fmt.Sprintf("matmul %d %d %d %s %d", m, k, n, orNone(act), b2i(residual))
	y := g.op("add", nil, g.op("matmul", nil, g.input("A", m, k), g.input("B", k, n)), g.input("Bias", n))
	switch act {
	case "relu":
		y = g.op("relu", nil, y)
	case "gelu":
		y = g.op("gelu", nil, y)
	case "gelu_tanh":
		y = g.op("gelu", map[string]any{"approximate": "tanh"}, y)
	}
	if residual {
		y = g.op("add", nil, y, g.input("R", m, n))
	}
	return g.out(y)
}

// attention is softmax(Q K^T / sqrt(d) + mask) V for heads of [m, d]
// queries over l keys; causal adds a mask of -inf above the diagonal
// (the queries are the last m of the l positions).
func attention(heads, m, l, d int, causal bool) *graph {
	name := fmt.Sprintf("attention_%dx%dx%dx%d", heads, m, l, d)
	if causal {
		name += "_causal"
	}
	g := newGraph(name)
	g.spec = fmt.Sprintf("attention %d %d %d %d %d", heads, m, l, d, b2i(causal))
	q, kt, v := g.input("Q", heads, m, d), g.input("Kt", heads, d, l), g.input("V", heads, l, d)
	s := g.op("mul", nil, g.op("matmul", nil, q, kt), g.scalar(1/sqrt(float64(d))))
	if causal {
		s = g.op("add", nil, s, g.input("Mask", m, l))
	}
	p := g.op("softmax", nil, s)
	return g.out(g.op("matmul", nil, p, v))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sqrt(x float64) float64 {
	r := x
	for range 40 {
		r = (r + x/r) / 2
	}
	return r
}

// layernorm is layernorm(x + r) with a scale and a shift over rows of n.
func layernorm(m, n int, residual bool) *graph {
	name := fmt.Sprintf("layernorm_%dx%d", m, n)
	if residual {
		name = fmt.Sprintf("add_layernorm_%dx%d", m, n)
	}
	g := newGraph(name)
	g.spec = fmt.Sprintf("layernorm %d %d %d", m, n, b2i(residual))
	x := g.input("X", m, n)
	if residual {
		x = g.op("add", nil, x, g.input("R", m, n))
	}
	return g.out(g.op("layernorm", map[string]any{"epsilon": 1e-5}, x, g.input("Gamma", n), g.input("Beta", n)))
}

// splitHeads is the data movement of multi-head attention: [m, 3*h*d]
// reshaped to [m, 3, h, d] and transposed to [3, h, m, d].
func splitHeads(m, h, d int) *graph {
	g := newGraph(fmt.Sprintf("split_heads_%dx%dx%d", m, h, d))
	// [m, 3, h, d] into the layout of [3, h, m, d].
	g.spec = fmt.Sprintf("reorder %d 3 %d %d %d %d %d 1", m, h, d, d, h*m*d, m*d)
	r := g.op("reshape", map[string]any{"shape": []int{m, 3, h, d}}, g.input("X", m, 3*h*d))
	return g.out(g.op("transpose", map[string]any{"perm": []int{1, 2, 0, 3}}, r))
}

// mergeHeads is [h, m, d] back to [m, h*d].
func mergeHeads(m, h, d int) *graph {
	g := newGraph(fmt.Sprintf("merge_heads_%dx%dx%d", m, h, d))
	// [h, m, d] (and a unit axis) into the layout of [m, h, d].
	g.spec = fmt.Sprintf("reorder 1 %d %d %d %d %d %d 1", h, m, d, h*m*d, d, h*d)
	t := g.op("transpose", map[string]any{"perm": []int{1, 0, 2}}, g.input("X", h, m, d))
	return g.out(g.op("reshape", map[string]any{"shape": []int{m, h * d}}, t))
}

// embedding gathers m rows of a vocab x n table by token id and adds the
// positions' rows.
func embedding(vocab, m, n int) *graph {
	g := newGraph(fmt.Sprintf("embedding_%dx%d_%d", vocab, n, m))
	tok := g.op("gather", nil, g.input("Wte", vocab, n), g.ids("Ids", m))
	return g.out(g.op("add", nil, tok, g.input("Wpe", m, n)))
}

func resnet50() []*graph {
	out := []*graph{conv(3, 224, 224, 64, 7, 2, 1, "relu", false)}
	g := newGraph("maxpool3x3_64_112x112_s2")
	g.spec = "pool max 1 64 112 112 3 2 1 1 1 1"
	out = append(out, g.out(g.op("max_pool2d", map[string]any{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}}, g.input("X", 1, 64, 112, 112))))
	// The bottleneck stages: width, blocks, input size; the first block
	// of stages 2 to 4 strides in its 3x3 convolution (ResNet v1.5).
	in := 64
	for i, st := range []struct{ width, size int }{{64, 56}, {128, 28}, {256, 14}, {512, 7}} {
		stride, inSize := 1, st.size
		if i > 0 {
			stride, inSize = 2, st.size*2
		}
		outC := 4 * st.width
		// First block: 1x1 reduce at the input size, 3x3 (strided), 1x1
		// expand with the projected shortcut added.
		out = append(out,
			conv(in, inSize, inSize, st.width, 1, 1, 1, "relu", false),
			conv(st.width, inSize, inSize, st.width, 3, stride, 1, "relu", false),
			conv(st.width, st.size, st.size, outC, 1, 1, 1, "relu", true),
			conv(in, inSize, inSize, outC, 1, stride, 1, "", false), // the shortcut's projection
			// The other blocks.
			conv(outC, st.size, st.size, st.width, 1, 1, 1, "relu", false),
			conv(st.width, st.size, st.size, st.width, 3, 1, 1, "relu", false))
		in = outC
	}
	g = newGraph("avgpool7x7_2048")
	g.spec = "pool avg 1 2048 7 7 7 1 0 0 0 0"
	out = append(out, g.out(g.op("avg_pool2d", map[string]any{"kernel_shape": []int{7, 7}}, g.input("X", 1, 2048, 7, 7))))
	return append(out, matmul(1, 2048, 1000, "", false))
}

func mobilenetV2() []*graph {
	out := []*graph{conv(3, 224, 224, 32, 3, 2, 1, "relu6", false)}
	in, size := 32, 112
	for _, st := range []struct{ t, c, n, s int }{
		{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1},
	} {
		for i := 0; i < min(st.n, 2); i++ { // the third and later blocks repeat the second
			stride := 1
			if i == 0 {
				stride = st.s
			}
			hidden := in * st.t
			if st.t != 1 {
				out = append(out, conv(in, size, size, hidden, 1, 1, 1, "relu6", false))
			}
			out = append(out, conv(hidden, size, size, hidden, 3, stride, hidden, "relu6", false))
			size /= stride
			out = append(out, conv(hidden, size, size, st.c, 1, 1, 1, "", i > 0))
			in = st.c
		}
	}
	out = append(out, conv(320, 7, 7, 1280, 1, 1, 1, "relu6", false))
	g := newGraph("avgpool7x7_1280")
	g.spec = "pool avg 1 1280 7 7 7 1 0 0 0 0"
	out = append(out, g.out(g.op("avg_pool2d", map[string]any{"kernel_shape": []int{7, 7}}, g.input("X", 1, 1280, 7, 7))))
	return append(out, matmul(1, 1280, 1000, "", false))
}

func bert() []*graph {
	const s, h, heads, d, ffn = 128, 768, 12, 64, 3072
	return []*graph{
		embedding(30522, s, h),
		layernorm(s, h, false),
		matmul(s, h, 3*h, "", false),
		splitHeads(s, heads, d),
		attention(heads, s, s, d, false),
		mergeHeads(s, heads, d),
		matmul(s, h, h, "", true),
		layernorm(s, h, true),
		matmul(s, h, ffn, "gelu", false),
		matmul(s, ffn, h, "", true),
	}
}

func gpt2Decode() []*graph {
	const h, heads, d, ffn, cache, vocab = 768, 12, 64, 3072, 512, 50257
	return []*graph{
		embedding(vocab, 1, h),
		layernorm(1, h, false),
		matmul(1, h, 3*h, "", false),
		attention(heads, 1, cache, d, false),
		matmul(1, h, h, "", true),
		matmul(1, h, ffn, "gelu_tanh", false),
		matmul(1, ffn, h, "", true),
		matmul(1, h, vocab, "", false),
	}
}

func gpt2Prefill() []*graph {
	const s, h, heads, d, ffn = 512, 768, 12, 64, 3072
	return []*graph{
		embedding(50257, s, h),
		layernorm(s, h, false),
		matmul(s, h, 3*h, "", false),
		splitHeads(s, heads, d),
		attention(heads, s, s, d, true),
		mergeHeads(s, heads, d),
		matmul(s, h, h, "", true),
		matmul(s, h, ffn, "gelu_tanh", false),
		matmul(s, ffn, h, "", true),
	}
}

// issue20 are the operators of issue 20's table: ordinary kernels outside
// the built-in workloads that tuned loom kernels ran 1.2x to 100x slower
// than oneDNN.
func issue20() []*graph {
	g := newGraph("transpose_4096x4096")
	g.spec = "reorder 1 1 4096 4096 1 1 1 4096"
	transpose := g.out(g.op("transpose", nil, g.input("X", 4096, 4096)))
	g = newGraph("colsum_4096x4096")
	g.spec = "reduce sum 1 1 4096 4096 1 1 1 4096"
	colsum := g.out(g.op("reduce_sum", map[string]any{"axes": []int{0}}, g.input("X", 4096, 4096)))
	g = newGraph("batch_matmul_16x512x64x512")
	g.spec = "bmm 16 512 64 512"
	bmm := g.out(g.op("matmul", nil, g.input("A", 16, 512, 64), g.input("B", 16, 64, 512)))
	return []*graph{
		bmm,
		matmul(512, 768, 3072, "gelu", false),
		conv(128, 28, 28, 256, 3, 2, 1, "", false),
		conv(256, 14, 14, 1024, 1, 1, 1, "", false),
		layernorm(4096, 1024, false),
		transpose,
		attention(8, 256, 256, 64, false),
		colsum,
	}
}

// The families below are layers of architectures the ones above do not
// have: grouped, large-kernel, patchifying and strided depthwise
// convolutions, a squeeze-excitation gate, dense convolutions over
// channels no whole number of vectors and a chain of pools. Each
// keeps its model's shapes at batch 1.

// resnext50 is ResNeXt-50 32x4d's grouped 3x3 convolutions: 32 groups,
// the first of stages 2 and 3 strided (v1.5).
func resnext50() []*graph {
	return []*graph{
		conv(128, 56, 56, 128, 3, 1, 32, "relu", false),
		conv(256, 56, 56, 256, 3, 2, 32, "relu", false),
		conv(512, 14, 14, 512, 3, 1, 32, "relu", false),
	}
}

// convnextTiny is ConvNeXt-T's patchifying stem (4x4 at stride 4), its
// 7x7 depthwise convolutions and a 2x2 stride-2 downsampling.
func convnextTiny() []*graph {
	return []*graph{
		convPadded(3, 224, 224, 96, 4, 4, 0, 1, "", false),
		conv(96, 56, 56, 96, 7, 1, 96, "", false),
		convPadded(96, 56, 56, 192, 2, 2, 0, 1, "", false),
		conv(384, 14, 14, 384, 7, 1, 384, "", false),
	}
}

// efficientnetB0 is EfficientNet-B0's 5x5 depthwise convolutions with
// SiLU, strided and not, and the squeeze-excitation gate of its third
// stage: the channels' means, squeezed to 6 and expanded back through
// SiLU and a sigmoid, scaling the input.
func efficientnetB0() []*graph {
	const c, size, squeezed = 144, 28, 6
	g := newGraph(fmt.Sprintf("squeeze_excitation_%d_%dx%d_%d", c, size, size, squeezed))
	x := g.input("X", 1, c, size, size)
	mean := g.op("reduce_mean", map[string]any{"axes": []int{2, 3}, "keepdims": true}, x)
	s := g.op("silu", nil, g.op("add", nil, g.op("conv2d", nil, mean, g.input("W1", squeezed, c, 1, 1)), g.input("B1", squeezed, 1, 1)))
	e := g.op("sigmoid", nil, g.op("add", nil, g.op("conv2d", nil, s, g.input("W2", c, squeezed, 1, 1)), g.input("B2", c, 1, 1)))
	return []*graph{
		conv(144, 56, 56, 144, 5, 2, 144, "silu", false),
		conv(480, 14, 14, 480, 5, 1, 480, "silu", false),
		conv(672, 14, 14, 672, 5, 2, 672, "silu", false),
		g.out(g.op("mul", nil, x, e)),
	}
}

// efficientnetV2S is EfficientNetV2-S's first fused blocks (FusedMBConv):
// dense 3x3 convolutions with SiLU over 24 channels (a vector and a half
// on AVX-512), one strided to 96, and over 48 to 192.
func efficientnetV2S() []*graph {
	return []*graph{
		conv(24, 112, 112, 24, 3, 1, 1, "silu", false),
		conv(24, 112, 112, 96, 3, 2, 1, "silu", false),
		conv(48, 56, 56, 192, 3, 1, 1, "silu", false),
	}
}

// yolov5s is YOLOv5s's 6x6 stride-2 stem at 640x640 and its SPPF block's
// pools: three 5x5 max pools in a chain and the concat of the input
// with each.
func yolov5s() []*graph {
	const c, size = 256, 20
	g := newGraph(fmt.Sprintf("sppf_maxpool5x5_%d_%dx%d", c, size, size))
	x := g.input("X", 1, c, size, size)
	pool := map[string]any{"kernel_shape": []int{5, 5}, "strides": []int{1, 1}, "pads": []int{2, 2, 2, 2}}
	y1 := g.op("max_pool2d", pool, x)
	y2 := g.op("max_pool2d", pool, y1)
	y3 := g.op("max_pool2d", pool, y2)
	return []*graph{
		convPadded(3, 640, 640, 32, 6, 2, 2, 1, "silu", false),
		g.out(g.op("concat", map[string]any{"axis": 1}, x, y1, y2, y3)),
	}
}

// vitB16 is ViT-B/16's patch embedding: 16x16 at stride 16 to 768
// channels.
func vitB16() []*graph {
	return []*graph{convPadded(3, 224, 224, 768, 16, 16, 0, 1, "", false)}
}
