package fusion_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

// tensor is a float64 reference tensor; dtype, when set, is the type the
// graph declares it with (integer indices).
type tensor struct {
	shape []int
	data  []float64
	dtype string
}

func elems(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// at returns the element at a multi-index.
func (t tensor) at(idx []int) float64 {
	off := 0
	for k, i := range idx {
		off = off*t.shape[k] + i
	}
	return t.data[off]
}

// each calls f with every multi-index of shape, in row-major order.
func each(shape []int, f func(idx []int)) {
	idx := make([]int, len(shape))
	for n := elems(shape); n > 0; n-- {
		f(idx)
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
}

// build computes out[idx] = f(idx) over shape.
func build(shape []int, f func(idx []int) float64) tensor {
	t := tensor{shape: shape}
	each(shape, func(idx []int) { t.data = append(t.data, f(idx)) })
	return t
}

// bcast reads t at an index of a broadcast shape.
func bcast(t tensor, out []int, idx []int) float64 {
	off := len(out) - len(t.shape)
	src := make([]int, len(t.shape))
	for k := range src {
		if t.shape[k] != 1 {
			src[k] = idx[off+k]
		}
	}
	return t.at(src)
}

// TestOperatorSemantics checks the lowering of every primitive operator
// against a direct Go implementation, on float64 data.
func TestOperatorSemantics(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rnd := func(shape ...int) tensor {
		x := tensor{shape: shape}
		for range elems(shape) {
			x.data = append(x.data, r.NormFloat64())
		}
		return x
	}
	pos := func(x tensor) tensor {
		for i := range x.data {
			x.data[i] = math.Abs(x.data[i]) + 0.1
		}
		return x
	}
	unary := map[string]func(float64) float64{
		"neg": func(x float64) float64 { return -x }, "abs": math.Abs,
		"relu": func(x float64) float64 { return math.Max(x, 0) }, "exp": math.Exp, "log": math.Log,
		"sqrt": math.Sqrt, "rsqrt": func(x float64) float64 { return 1 / math.Sqrt(x) }, "tanh": math.Tanh,
		"sigmoid": func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, "erf": math.Erf,
		"gelu":  func(x float64) float64 { return x * 0.5 * (1 + math.Erf(x/math.Sqrt2)) },
		"floor": math.Floor, "ceil": math.Ceil, "sin": math.Sin, "cos": math.Cos, "round": math.RoundToEven,
	}
	binary := map[string]func(a, b float64) float64{
		"add": func(a, b float64) float64 { return a + b }, "sub": func(a, b float64) float64 { return a - b },
		"mul": func(a, b float64) float64 { return a * b }, "div": func(a, b float64) float64 { return a / b },
		"max": math.Max, "min": math.Min, "pow": math.Pow,
	}
	type testCase struct {
		name  string
		op    string
		attrs map[string]any
		ins   []tensor
		want  tensor
	}
	var cases []testCase
	for op, f := range unary {
		x := pos(rnd(3, 5))
		cases = append(cases, testCase{name: op, op: op, ins: []tensor{x}, want: build(x.shape, func(i []int) float64 { return f(x.at(i)) })})
	}
	for op, f := range binary {
		a, b := pos(rnd(2, 3, 4)), pos(rnd(3, 1))
		out := []int{2, 3, 4}
		cases = append(cases, testCase{name: op + " broadcast", op: op, ins: []tensor{a, b},
			want: build(out, func(i []int) float64 { return f(bcast(a, out, i), bcast(b, out, i)) })})
	}
	x := rnd(2, 3, 4)
	cases = append(cases,
		testCase{name: "broadcast_to", op: "broadcast_to", attrs: map[string]any{"shape": []int{2, 3, 4}}, ins: []tensor{rnd(3, 1)}},
		testCase{name: "transpose", op: "transpose", attrs: map[string]any{"perm": []int{2, 0, 1}}, ins: []tensor{x},
			want: build([]int{4, 2, 3}, func(i []int) float64 { return x.at([]int{i[1], i[2], i[0]}) })},
		testCase{name: "reshape", op: "reshape", attrs: map[string]any{"shape": []int{6, -1}}, ins: []tensor{x},
			want: tensor{shape: []int{6, 4}, data: x.data}},
		testCase{name: "reshape middle", op: "reshape", attrs: map[string]any{"shape": []int{2, 12}}, ins: []tensor{x},
			want: tensor{shape: []int{2, 12}, data: x.data}},
		testCase{name: "slice", op: "slice", attrs: map[string]any{"axes": []int{1, 2}, "starts": []int{1, -3}, "ends": []int{3, 100}, "steps": []int{1, 2}}, ins: []tensor{x},
			want: build([]int{2, 2, 2}, func(i []int) float64 { return x.at([]int{i[0], 1 + i[1], 1 + 2*i[2]}) })},
	)
	c1, c2 := rnd(2, 1, 4), rnd(2, 2, 4)
	cases = append(cases, testCase{name: "concat", op: "concat", attrs: map[string]any{"axis": 1}, ins: []tensor{c1, c2, x},
		want: build([]int{2, 6, 4}, func(i []int) float64 {
			switch {
			case i[1] < 1:
				return c1.at(i)
			case i[1] < 3:
				return c2.at([]int{i[0], i[1] - 1, i[2]})
			}
			return x.at([]int{i[0], i[1] - 3, i[2]})
		})})
	reduce := map[string]func(xs []float64) float64{
		"reduce_sum": func(xs []float64) float64 {
			s := 0.0
			for _, v := range xs {
				s += v
			}
			return s
		},
		"reduce_mean": func(xs []float64) float64 {
			s := 0.0
			for _, v := range xs {
				s += v
			}
			return s / float64(len(xs))
		},
		"reduce_max": func(xs []float64) float64 {
			m := math.Inf(-1)
			for _, v := range xs {
				m = math.Max(m, v)
			}
			return m
		},
		"reduce_min": func(xs []float64) float64 {
			m := math.Inf(1)
			for _, v := range xs {
				m = math.Min(m, v)
			}
			return m
		},
	}
	for op, f := range reduce {
		for _, keep := range []bool{false, true} {
			out := []int{2, 4}
			if keep {
				out = []int{2, 1, 4}
			}
			cases = append(cases, testCase{name: fmt.Sprintf("%s keepdims=%v", op, keep), op: op, attrs: map[string]any{"axes": []int{1}, "keepdims": keep}, ins: []tensor{x},
				want: build(out, func(i []int) float64 {
					var xs []float64
					for j := 0; j < 3; j++ {
						xs = append(xs, x.at([]int{i[0], j, i[len(i)-1]}))
					}
					return f(xs)
				})})
		}
	}
	a, b := rnd(2, 1, 3, 5), rnd(4, 5, 2)
	cases = append(cases, testCase{name: "batch matmul", op: "matmul", ins: []tensor{a, b},
		want: build([]int{2, 4, 3, 2}, func(i []int) float64 {
			s := 0.0
			for k := 0; k < 5; k++ {
				s += a.at([]int{i[0], 0, i[2], k}) * b.at([]int{i[1], k, i[3]})
			}
			return s
		})})
	img, w := rnd(1, 2, 6, 5), rnd(3, 2, 3, 2)
	const sh, sw, ph, pw, dh = 2, 1, 1, 2, 2
	cases = append(cases, testCase{name: "conv2d", op: "conv2d", attrs: map[string]any{"strides": []int{sh, sw}, "pads": []int{ph, pw, ph, pw}, "dilations": []int{dh, 1}}, ins: []tensor{img, w},
		want: build([]int{1, 3, (6+2*ph-dh*2-1)/sh + 1, (5+2*pw-1-1)/sw + 1}, func(i []int) float64 {
			s := 0.0
			for c := 0; c < 2; c++ {
				for kh := 0; kh < 3; kh++ {
					for kw := 0; kw < 2; kw++ {
						h, v := i[2]*sh+kh*dh-ph, i[3]*sw+kw-pw
						if h >= 0 && h < 6 && v >= 0 && v < 5 {
							s += img.at([]int{i[0], c, h, v}) * w.at([]int{i[1], c, kh, kw})
						}
					}
				}
			}
			return s
		})})
	// Grouped and depthwise convolutions, conv1d and conv3d.
	for _, c := range []struct {
		name                 string
		op                   string
		x, w                 tensor
		groups               int
		strides, pads, dilat []int
	}{
		{"conv2d grouped", "conv2d", rnd(2, 4, 5, 6), rnd(6, 2, 3, 3), 2, []int{1, 2}, []int{1, 0, 1, 1}, []int{1, 1}},
		{"conv2d depthwise", "conv2d", rnd(1, 3, 7, 7), rnd(6, 1, 3, 3), 3, []int{2, 2}, []int{1, 1, 1, 1}, []int{1, 1}},
		{"conv2d 1x1", "conv2d", rnd(1, 5, 4, 4), rnd(3, 5, 1, 1), 1, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}},
		{"conv1d", "conv1d", rnd(2, 3, 9), rnd(4, 3, 3), 1, []int{2}, []int{1, 2}, []int{2}},
		{"conv1d depthwise", "conv1d", rnd(1, 4, 8), rnd(4, 1, 5), 4, []int{1}, []int{2, 2}, []int{1}},
		{"conv3d", "conv3d", rnd(1, 2, 4, 5, 3), rnd(3, 2, 2, 3, 2), 1, []int{1, 2, 1}, []int{0, 1, 1, 1, 0, 0}, []int{1, 1, 2}},
		// Strided 1x1 windows (the unstride pass: a slice, then stride 1),
		// odd extents included.
		{"conv2d 1x1 strided", "conv2d", rnd(1, 5, 7, 6), rnd(3, 5, 1, 1), 1, []int{2, 2}, []int{0, 0, 0, 0}, []int{1, 1}},
		{"conv2d 1x1 grouped strided", "conv2d", rnd(2, 4, 5, 5), rnd(6, 2, 1, 1), 2, []int{3, 1}, []int{0, 0, 0, 0}, []int{2, 1}},
		{"conv1d 1x1 strided", "conv1d", rnd(1, 3, 10), rnd(2, 3, 1), 1, []int{3}, []int{0, 0}, []int{1}},
		{"conv3d 1x1 strided", "conv3d", rnd(1, 2, 4, 5, 3), rnd(3, 2, 1, 1, 1), 1, []int{1, 2, 3}, []int{0, 0, 0, 0, 0, 0}, []int{1, 1, 1}},
		{"conv2d 1x1 strided padded", "conv2d", rnd(1, 2, 5, 5), rnd(2, 2, 1, 1), 1, []int{2, 2}, []int{1, 0, 1, 0}, []int{1, 1}},
		// On the padded input's rows (convOnRows): strides 1 to 3 along
		// either axis, dilations, padding on one side only, a window as
		// wide as the padded image.
		{"conv2d rows 3x3", "conv2d", rnd(2, 3, 7, 7), rnd(4, 3, 3, 3), 1, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}},
		{"conv2d rows strided", "conv2d", rnd(1, 3, 9, 8), rnd(2, 3, 3, 3), 1, []int{2, 2}, []int{1, 1, 1, 1}, []int{1, 1}},
		{"conv2d rows mixed strides", "conv2d", rnd(1, 2, 10, 11), rnd(3, 2, 3, 2), 1, []int{3, 2}, []int{0, 1, 2, 0}, []int{1, 2}},
		{"conv2d rows dilated", "conv2d", rnd(1, 2, 9, 9), rnd(2, 2, 3, 3), 1, []int{2, 1}, []int{2, 2, 2, 2}, []int{2, 2}},
		{"conv2d rows whole width", "conv2d", rnd(1, 2, 4, 3), rnd(2, 2, 2, 5), 1, []int{1, 1}, []int{0, 1, 1, 1}, []int{1, 1}},
		{"conv2d rows one pixel", "conv2d", rnd(1, 2, 3, 3), rnd(2, 2, 3, 3), 1, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}},
		{"conv2d rows stride past the window", "conv2d", rnd(1, 2, 11, 9), rnd(2, 2, 2, 2), 1, []int{4, 3}, []int{1, 1, 0, 2}, []int{1, 1}},
		{"conv2d rows 1x1 padded", "conv2d", rnd(2, 3, 5, 4), rnd(2, 3, 1, 1), 1, []int{1, 1}, []int{1, 2, 0, 1}, []int{1, 1}},
	} {
		want := refConv(c.x, c.w, c.groups, c.strides, c.pads, c.dilat)
		cases = append(cases, testCase{name: c.name, op: c.op, ins: []tensor{c.x, c.w},
			attrs: map[string]any{"groups": c.groups, "strides": c.strides, "pads": c.pads, "dilations": c.dilat},
			want:  want})
		if strings.Contains(c.name, "rows") {
			continue // convOnRows is of NCHW only
		}
		// The same with the channels last: NWC, NHWC, NDHWC.
		r := len(c.x.shape)
		last, wlast := channelsLastPerm(r)
		cases = append(cases, testCase{name: c.name + " channels last", op: c.op, ins: []tensor{permute(c.x, last), permute(c.w, wlast)},
			attrs: map[string]any{"groups": c.groups, "strides": c.strides, "pads": c.pads, "dilations": c.dilat, "layout": []string{3: "NWC", 4: "NHWC", 5: "NDHWC"}[r]},
			want:  permute(want, last)})
	}
	// Pooling.
	px := rnd(2, 3, 7, 6)
	cases = append(cases,
		testCase{name: "max_pool2d", op: "max_pool2d", ins: []tensor{px}, attrs: map[string]any{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}},
			want: refPool(px, true, []int{3, 3}, []int{2, 2}, []int{1, 1, 1, 1}, []int{1, 1}, false)},
		testCase{name: "max_pool2d dilated", op: "max_pool2d", ins: []tensor{px}, attrs: map[string]any{"kernel_shape": []int{2, 3}, "dilations": []int{2, 1}, "pads": []int{0, 1, 1, 0}},
			want: refPool(px, true, []int{2, 3}, []int{1, 1}, []int{0, 1, 1, 0}, []int{2, 1}, false)},
		testCase{name: "avg_pool2d", op: "avg_pool2d", ins: []tensor{px}, attrs: map[string]any{"kernel_shape": []int{3, 2}, "strides": []int{2, 1}, "pads": []int{1, 1, 1, 0}},
			want: refPool(px, false, []int{3, 2}, []int{2, 1}, []int{1, 1, 1, 0}, []int{1, 1}, false)},
		testCase{name: "avg_pool2d count_include_pad", op: "avg_pool2d", ins: []tensor{px}, attrs: map[string]any{"kernel_shape": []int{3, 3}, "strides": []int{2, 2}, "pads": []int{1, 1, 1, 1}, "count_include_pad": true},
			want: refPool(px, false, []int{3, 3}, []int{2, 2}, []int{1, 1, 1, 1}, []int{1, 1}, true)},
		testCase{name: "avg_pool2d global", op: "avg_pool2d", ins: []tensor{px}, attrs: map[string]any{"kernel_shape": []int{7, 6}},
			want: refPool(px, false, []int{7, 6}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}, false)},
	)
	// pad, gather, comparisons and where, batch_norm, silu, softplus and
	// the tanh form of gelu.
	padded := build([]int{2 + 1, 3 + 2, 4 + 1}, func(i []int) float64 {
		a, b, c := i[0]-1, i[1]-0, i[2]-1
		if a < 0 || a >= 2 || b < 0 || b >= 3 || c < 0 || c >= 4 {
			return 2.5
		}
		return x.at([]int{a, b, c})
	})
	cases = append(cases, testCase{name: "pad", op: "pad", ins: []tensor{x}, attrs: map[string]any{"pads": []int{1, 0, 1, 0, 2, 0}, "value": 2.5}, want: padded})
	emb := rnd(5, 3)
	ids := tensor{shape: []int{2, 2}, data: []float64{4, 0, -1, 2}, dtype: "int64"}
	cases = append(cases,
		testCase{name: "gather", op: "gather", ins: []tensor{emb, ids},
			want: build([]int{2, 2, 3}, func(i []int) float64 {
				j := int(ids.at(i[:2]))
				if j < 0 {
					j += 5
				}
				return emb.at([]int{j, i[2]})
			})},
		testCase{name: "gather axis 1", op: "gather", ins: []tensor{x, tensor{shape: []int{2}, data: []float64{3, 1}, dtype: "int32"}}, attrs: map[string]any{"axis": -1},
			want: build([]int{2, 3, 2}, func(i []int) float64 { return x.at([]int{i[0], i[1], []int{3, 1}[i[2]]}) })},
	)
	ca, cb := rnd(2, 3, 4), rnd(3, 1)
	cb.data[1] = ca.at([]int{0, 1, 2}) // one tie
	cmps := map[string]func(a, b float64) bool{
		"equal": func(a, b float64) bool { return a == b }, "not_equal": func(a, b float64) bool { return a != b },
		"less": func(a, b float64) bool { return a < b }, "less_equal": func(a, b float64) bool { return a <= b },
		"greater": func(a, b float64) bool { return a > b }, "greater_equal": func(a, b float64) bool { return a >= b },
	}
	out3 := []int{2, 3, 4}
	for op, f := range cmps {
		cases = append(cases, testCase{name: op, op: op, ins: []tensor{ca, cb}, want: build(out3, func(i []int) float64 {
			if f(bcast(ca, out3, i), bcast(cb, out3, i)) {
				return 1
			}
			return 0
		})})
	}
	bx, bs, bb, bm, bv := rnd(2, 3, 2, 2), rnd(3), rnd(3), rnd(3), pos(rnd(3))
	cases = append(cases, testCase{name: "batch_norm", op: "batch_norm", ins: []tensor{bx, bs, bb, bm, bv}, attrs: map[string]any{"epsilon": 1e-3},
		want: build(bx.shape, func(i []int) float64 {
			c := i[1]
			return (bx.at(i)-bm.data[c])/math.Sqrt(bv.data[c]+1e-3)*bs.data[c] + bb.data[c]
		})})
	sx := rnd(3, 5)
	sx.data[0], sx.data[1] = 40, -40 // softplus must neither overflow nor lose these
	cases = append(cases,
		testCase{name: "silu", op: "silu", ins: []tensor{sx}, want: build(sx.shape, func(i []int) float64 { v := sx.at(i); return v / (1 + math.Exp(-v)) })},
		testCase{name: "softplus", op: "softplus", ins: []tensor{sx}, want: build(sx.shape, func(i []int) float64 { v := sx.at(i); return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v))) })},
		testCase{name: "gelu tanh", op: "gelu", ins: []tensor{sx}, attrs: map[string]any{"approximate": "tanh"}, want: build(sx.shape, func(i []int) float64 {
			v := sx.at(i)
			return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
		})},
	)
	// Rounding and the periodic functions on negative values too; round's
	// halves go to the even neighbour, and values past 2^52 have no
	// fraction to round.
	for op, f := range map[string]func(float64) float64{"floor": math.Floor, "ceil": math.Ceil, "round": math.RoundToEven, "sin": math.Sin, "cos": math.Cos} {
		x := rnd(4, 6)
		copy(x.data, []float64{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.3, 0.49999999999999994, 1<<52 + 1, -7.7, 1e300, math.Inf(-1), math.Copysign(0, -1), 1e-310})
		for i := 15; i < len(x.data); i++ {
			x.data[i] *= 5
		}
		if op == "sin" || op == "cos" {
			x.data[11], x.data[12] = 1e3, -1e3 // sin(1e300) needs argument reduction beyond a kernel's
		}
		cases = append(cases, testCase{name: op + " edges", op: op, ins: []tensor{x}, want: build(x.shape, func(i []int) float64 { return f(x.at(i)) })})
	}
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.op == "broadcast_to" {
				src := c.ins[0]
				c.want = build([]int{2, 3, 4}, func(i []int) float64 { return bcast(src, []int{2, 3, 4}, i) })
			}
			interpreted, compiled := runOp(t, cache, c.op, c.attrs, c.ins)
			// The interpreter sums in the reference's order; the compiled
			// kernels (default schedules: vectors, tiles, other orders)
			// round differently.
			agrees(t, "interpreted", interpreted, c.want, 1e-12)
			agrees(t, "compiled", compiled, c.want, 1e-9)
		})
	}
}

// agrees fails t unless got has want's elements, each within tol of it
// relative to its magnitude (at least 1), or equal (infinities).
func agrees(t *testing.T, how string, got []float64, want tensor, tol float64) {
	t.Helper()
	if len(got) != len(want.data) {
		t.Fatalf("%s: %d elements, want %d", how, len(got), len(want.data))
	}
	for i := range got {
		if d := math.Abs(got[i] - want.data[i]); !(d <= tol*math.Max(1, math.Abs(want.data[i]))) && got[i] != want.data[i] {
			t.Fatalf("%s: element %d = %v, want %v", how, i, got[i], want.data[i])
		}
	}
}

// refConv is a convolution over any number of spatial axes, directly.
func refConv(x, w tensor, groups int, strides, pads, dil []int) tensor {
	s := len(x.shape) - 2
	F, cg := w.shape[0], w.shape[1]
	out := []int{x.shape[0], F}
	for d := 0; d < s; d++ {
		out = append(out, (x.shape[2+d]+pads[d]+pads[s+d]-dil[d]*(w.shape[2+d]-1)-1)/strides[d]+1)
	}
	return build(out, func(i []int) float64 {
		sum := 0.0
		g := i[1] / (F / groups)
		each(w.shape[1:], func(r []int) {
			xi := []int{i[0], g*cg + r[0]}
			for d := 0; d < s; d++ {
				p := i[2+d]*strides[d] + r[1+d]*dil[d] - pads[d]
				if p < 0 || p >= x.shape[2+d] {
					return
				}
				xi = append(xi, p)
			}
			sum += x.at(xi) * w.at(append([]int{i[1]}, r...))
		})
		return sum
	})
}

// permute returns t with its axes permuted: out.shape[k] = t.shape[perm[k]].
func permute(t tensor, perm []int) tensor {
	shape := make([]int, len(perm))
	for k, p := range perm {
		shape[k] = t.shape[p]
	}
	return build(shape, func(i []int) float64 {
		src := make([]int, len(i))
		for k, p := range perm {
			src[p] = i[k]
		}
		return t.at(src)
	})
}

// toLast and weightsLast move a 2-d window's channels last: NCHW to NHWC,
// FCHW weights to HWCF.
var toLast, weightsLast = channelsLastPerm(4)

// channelsLastPerm returns the permutations that move the channels of an
// input of rank r last ([N, C, spatial...] to [N, spatial..., C]) and
// those of its weights ([F, C, kernel...] to [kernel..., C, F]).
func channelsLastPerm(r int) (input, weights []int) {
	input = []int{0}
	for d := 2; d < r; d++ {
		input = append(input, d)
		weights = append(weights, d)
	}
	return append(input, 1), append(weights, 1, 0)
}

// refPool is a 2-d max or average pooling, directly.
func refPool(x tensor, max bool, k, strides, pads, dil []int, includePad bool) tensor {
	out := []int{x.shape[0], x.shape[1]}
	for d := 0; d < 2; d++ {
		out = append(out, (x.shape[2+d]+pads[d]+pads[2+d]-dil[d]*(k[d]-1)-1)/strides[d]+1)
	}
	return build(out, func(i []int) float64 {
		acc, n := 0.0, 0
		if max {
			acc = math.Inf(-1)
		}
		each(k, func(r []int) {
			h, w := i[2]*strides[0]+r[0]*dil[0]-pads[0], i[3]*strides[1]+r[1]*dil[1]-pads[1]
			if h < 0 || h >= x.shape[2] || w < 0 || w >= x.shape[3] {
				if includePad {
					n++
				}
				return
			}
			n++
			v := x.at([]int{i[0], i[1], h, w})
			if max {
				acc = math.Max(acc, v)
			} else {
				acc += v
			}
		})
		if max {
			return acc
		}
		return acc / float64(n)
	})
}

// runOp compiles a one-node float64 graph and runs it: interpreted, and
// compiled as a module on default schedules (kernels cached in cache).
func runOp(t *testing.T, cache *native.Cache, op string, attrs map[string]any, ins []tensor) (interpreted, compiled []float64) {
	t.Helper()
	type jt struct {
		Name  string `json:"name"`
		DType string `json:"dtype"`
		Shape []int  `json:"shape"`
	}
	var inputs []jt
	var names []string
	data := map[string]any{}
	for k, in := range ins {
		name := fmt.Sprintf("X%d", k)
		dt := in.dtype
		if dt == "" {
			dt = "float64"
		}
		inputs = append(inputs, jt{name, dt, in.shape})
		names = append(names, name)
		switch dt {
		case "int32":
			v := make([]int32, len(in.data))
			for i, x := range in.data {
				v[i] = int32(x)
			}
			data[name] = v
		case "int64":
			v := make([]int64, len(in.data))
			for i, x := range in.data {
				v[i] = int64(x)
			}
			data[name] = v
		default:
			data[name] = in.data
		}
	}
	src, _ := json.Marshal(map[string]any{
		"name": "op", "inputs": inputs, "outputs": []string{"Y"},
		"nodes": []any{map[string]any{"op": op, "inputs": names, "output": "Y", "attrs": attrs}},
	})
	g, err := fusion.ParseJSON(src)
	if err != nil {
		t.Fatal(err)
	}
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Interpret(nil, data)
	if err != nil {
		t.Fatal(err)
	}
	m, err := module.Compile(g, module.Options{Cache: cache, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	tensors := map[string]module.Tensor{}
	for k, in := range inputs {
		shape := make([]int64, len(in.Shape))
		for d, n := range in.Shape {
			shape[d] = int64(n)
		}
		tensors[in.Name] = module.Tensor{Shape: shape, Data: data[names[k]]}
	}
	outs, err := m.NewOutputs(tensors)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(tensors, outs); err != nil {
		t.Fatal(err)
	}
	y := g.Outputs[0].DType
	// bools as 0 and 1
	return ast.Float64s(ast.Float64, out["Y"]), ast.Float64s(y, outs["Y"].Data)
}

var (
	randomOps  = flag.Int("random-ops", 0, "random convolutions and poolings TestRandomWindows compiles and checks (0: 12, or 24 with -long)")
	randomSeed = flag.Uint64("random-seed", 7, "the seed of TestRandomWindows")
	long       = flag.Bool("long", false, "TestRandomWindows checks 24 random windows, not 12")
)

// TestRandomWindows: random 2-d convolutions (groups, depthwise, strides
// 1-3, dilations, uneven padding, windows up to the padded image, channels
// enough for tiles) and poolings, interpreted and compiled on their
// default schedules, against refConv and refPool in float64; each in
// layout NCHW, and a third of them again in NHWC (input, weights and
// result transposed). By default 12 of each (seed 7: groups of 1 and 3,
// depthwise, strides 1 to 3, dilations, pads up to 2, in both layouts,
// max and average poolings with and without the padding counted), with
// -long 24, -random-ops as many as it says.
func TestRandomWindows(t *testing.T) {
	ops := *randomOps
	if ops == 0 {
		ops = 12
		if *long {
			ops = 24
		}
	}
	r := rand.New(rand.NewPCG(*randomSeed, 8))
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rnd := func(shape ...int) tensor {
		x := tensor{shape: shape}
		for range elems(shape) {
			x.data = append(x.data, r.NormFloat64())
		}
		return x
	}
	check := func(t *testing.T, name string, op string, attrs map[string]any, ins []tensor, want tensor) {
		interpreted, compiled := runOp(t, cache, op, attrs, ins)
		agrees(t, fmt.Sprintf("%s %v interpreted", name, attrs), interpreted, want, 1e-9)
		agrees(t, fmt.Sprintf("%s %v compiled", name, attrs), compiled, want, 1e-9)
	}
	for n := 0; n < ops; n++ {
		// A window that fits the padded image, and at least one output.
		var strides, dil, pads, k, in []int
		for d := 0; d < 2; d++ {
			strides = append(strides, 1+r.IntN(3))
			dil = append(dil, 1+r.IntN(2))
			k = append(k, 1+r.IntN(3))
			in = append(in, 1+r.IntN(16))
		}
		pads = []int{r.IntN(3), r.IntN(3), r.IntN(3), r.IntN(3)}
		ok := true
		for d := 0; d < 2; d++ {
			ok = ok && in[d]+pads[d]+pads[2+d] >= dil[d]*(k[d]-1)+1
		}
		if !ok {
			n--
			continue
		}
		groups := []int{1, 1, 2, 3}[r.IntN(4)]
		cg, fg := 1+r.IntN(4), 1+r.IntN(12)
		if r.IntN(4) == 0 { // depthwise
			groups, cg, fg = 1+r.IntN(8), 1, 1+r.IntN(2)
		}
		batch := 1 + r.IntN(2)
		x, w := rnd(batch, groups*cg, in[0], in[1]), rnd(groups*fg, cg, k[0], k[1])
		t.Run(fmt.Sprintf("conv%d", n), func(t *testing.T) {
			attrs := map[string]any{"groups": groups, "strides": strides, "pads": pads, "dilations": dil}
			t.Logf("x %v, w %v, %v", x.shape, w.shape, attrs)
			want := refConv(x, w, groups, strides, pads, dil)
			check(t, "conv2d", "conv2d", attrs, []tensor{x, w}, want)
			if n%3 != 0 {
				return // every third one in NHWC too (each compile costs)
			}
			attrs["layout"] = "NHWC"
			check(t, "conv2d", "conv2d", attrs, []tensor{permute(x, toLast), permute(w, weightsLast)}, permute(want, toLast))
		})
		isMax, includePad := r.IntN(2) == 0, r.IntN(2) == 0
		op := "avg_pool2d"
		if !isMax {
			dil = []int{1, 1}
		}
		// A pooling window may not lie in the padding only: pads
		// smaller than the window, as ONNX requires.
		for d := 0; d < 2; d++ {
			pads[d], pads[2+d] = min(pads[d], dil[d]*(k[d]-1)), min(pads[2+d], dil[d]*(k[d]-1))
		}
		attrs := map[string]any{"kernel_shape": k, "strides": strides, "pads": pads}
		if isMax {
			op, attrs["dilations"] = "max_pool2d", dil
		} else {
			attrs["count_include_pad"] = includePad
		}
		ok = true
		for d := 0; d < 2; d++ {
			ok = ok && in[d]+pads[d]+pads[2+d] >= dil[d]*(k[d]-1)+1
		}
		if !ok {
			continue
		}
		t.Run(fmt.Sprintf("pool%d", n), func(t *testing.T) {
			t.Logf("%s of x %v, %v", op, x.shape, attrs)
			want := refPool(x, isMax, k, strides, pads, dil, includePad && !isMax)
			check(t, op, op, attrs, []tensor{x}, want)
			if n%3 != 1 {
				return // another third in NHWC too
			}
			attrs["layout"] = "NHWC"
			check(t, op, op, attrs, []tensor{permute(x, toLast)}, permute(want, toLast))
		})
	}
}
