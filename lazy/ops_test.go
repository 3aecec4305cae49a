package lazy

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

var long = flag.Bool("long", false, "more random shapes per operator")

// operand is an input of a test case: its dtype, shape and data.
type operand struct {
	dtype ast.DType
	shape []int64
	data  any
}

// opCase is one operator at one set of random shapes: the fusion node a
// graph would have, and the method call a lazy program makes.
type opCase struct {
	op    string
	attrs fusion.Attrs
	ins   []operand
	lazy  func(x []*Tensor) *Tensor
}

func (c opCase) String() string {
	var shapes []string
	for _, in := range c.ins {
		shapes = append(shapes, fmt.Sprintf("%s%v", in.dtype, in.shape))
	}
	return fmt.Sprintf("%s%v", c.op, shapes)
}

// gen draws random shapes and data.
type gen struct{ r *rand.Rand }

// dim is a size, 0 and 1 among them.
func (g gen) dim() int64 { return []int64{0, 1, 1, 2, 3, 4, 5, 7, 9, 16, 17}[g.r.IntN(11)] }

// posDim is a size of at least 1.
func (g gen) posDim() int64 { return []int64{1, 1, 2, 3, 4, 5, 7, 9, 16, 17}[g.r.IntN(10)] }

func (g gen) shape(rank int, pos bool) []int64 {
	s := make([]int64, rank)
	for i := range s {
		if pos {
			s[i] = g.posDim()
		} else {
			s[i] = g.dim()
		}
	}
	return s
}

// operand makes random data of a dtype and shape.
func (g gen) operand(dt ast.DType, shape []int64) operand {
	n := int(elements(shape))
	switch dt {
	case ast.Bool:
		v := make([]bool, n)
		for i := range v {
			v[i] = g.r.IntN(2) == 1
		}
		return operand{dt, shape, v}
	case ast.Int64:
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(g.r.IntN(9) - 4)
		}
		return operand{dt, shape, v}
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.Round((g.r.Float64()*4-2)*64) / 64)
	}
	return operand{ast.Float32, shape, v}
}

func (g gen) f32(shape ...int64) operand { return g.operand(ast.Float32, shape) }

// broadcastPeer returns a shape that broadcasts with s: some dimensions
// 1, some leading ones dropped.
func (g gen) broadcastPeer(s []int64) []int64 {
	out := slices.Clone(s[g.r.IntN(len(s)+1):])
	for i := range out {
		if g.r.IntN(3) == 0 {
			out[i] = 1
		}
	}
	return out
}

var unaryOps = []string{"neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "identity", "silu", "softplus", "floor", "ceil", "sin", "cos", "round", "gelu"}

var unaryMethods = map[string]func(*Tensor) *Tensor{
	"neg": (*Tensor).Neg, "abs": (*Tensor).Abs, "relu": (*Tensor).Relu, "exp": (*Tensor).Exp,
	"log": (*Tensor).Log, "sqrt": (*Tensor).Sqrt, "rsqrt": (*Tensor).Rsqrt, "tanh": (*Tensor).Tanh,
	"sigmoid": (*Tensor).Sigmoid, "erf": (*Tensor).Erf, "identity": (*Tensor).Identity, "silu": (*Tensor).Silu,
	"softplus": (*Tensor).Softplus, "floor": (*Tensor).Floor, "ceil": (*Tensor).Ceil, "sin": (*Tensor).Sin,
	"cos": (*Tensor).Cos, "round": (*Tensor).Round, "gelu": (*Tensor).Gelu,
}

var binaryMethods = map[string]func(*Tensor, *Tensor) *Tensor{
	"add": (*Tensor).Add, "sub": (*Tensor).Sub, "mul": (*Tensor).Mul, "div": (*Tensor).Div,
	"max": (*Tensor).Max, "min": (*Tensor).Min, "pow": (*Tensor).Pow,
	"equal": (*Tensor).Equal, "not_equal": (*Tensor).NotEqual, "less": (*Tensor).Less,
	"less_equal": (*Tensor).LessEqual, "greater": (*Tensor).Greater, "greater_equal": (*Tensor).GreaterEqual,
}

// cases draws the test cases of every operator.
func cases(g gen) []opCase {
	var out []opCase
	add := func(c opCase) { out = append(out, c) }
	for _, op := range unaryOps {
		add(opCase{op: op, ins: []operand{g.f32(g.shape(g.r.IntN(4), false)...)}, lazy: func(x []*Tensor) *Tensor { return unaryMethods[op](x[0]) }})
	}
	add(opCase{op: "gelu", attrs: fusion.Attrs{Approximate: "tanh"}, ins: []operand{g.f32(g.shape(2, false)...)}, lazy: func(x []*Tensor) *Tensor { return x[0].GeluTanh() }})
	for _, op := range slices.Sorted(mapKeys(binaryMethods)) {
		s := g.shape(1+g.r.IntN(3), false)
		a, b := s, g.broadcastPeer(s)
		if g.r.IntN(2) == 0 {
			a, b = b, a
		}
		add(opCase{op: op, ins: []operand{g.f32(a...), g.f32(b...)}, lazy: func(x []*Tensor) *Tensor { return binaryMethods[op](x[0], x[1]) }})
	}
	s := g.shape(2, false)
	add(opCase{op: "where", ins: []operand{g.operand(ast.Bool, s), g.f32(s...), g.f32(g.broadcastPeer(s)...)}, lazy: func(x []*Tensor) *Tensor { return Where(x[0], x[1], x[2]) }})
	for _, dt := range []ast.DType{ast.Int32, ast.Float64, ast.Bool} {
		add(opCase{op: "cast", attrs: fusion.Attrs{DType: dt.String()}, ins: []operand{g.f32(g.shape(2, false)...)}, lazy: func(x []*Tensor) *Tensor { return x[0].Cast(dt) }})
	}

	m, k, n, b := g.dim(), g.dim(), g.dim(), g.posDim()
	add(opCase{op: "matmul", ins: []operand{g.f32(m, k), g.f32(k, n)}, lazy: func(x []*Tensor) *Tensor { return x[0].MatMul(x[1]) }})
	add(opCase{op: "matmul", ins: []operand{g.f32(b, m, k), g.f32(b, k, n)}, lazy: func(x []*Tensor) *Tensor { return x[0].MatMul(x[1]) }})
	add(opCase{op: "matmul", ins: []operand{g.f32(b, g.posDim(), 33), g.f32(33, 40)}, lazy: func(x []*Tensor) *Tensor { return x[0].MatMul(x[1]) }})

	for _, last := range []bool{false, true} {
		for _, depthwise := range []bool{false, true} {
			nb, c, h, w := 1+g.r.IntN(2), 1+g.r.IntN(4), 1+g.r.IntN(9), 1+g.r.IntN(9)
			kh, kw := 1+g.r.IntN(3), 1+g.r.IntN(3)
			pad := g.r.IntN(2)
			h, w = max(h, kh), max(w, kw)
			f, groups, cg := 1+g.r.IntN(5), 1, c
			if depthwise {
				f, groups, cg = c, c, 1
			}
			o := ConvOptions{Strides: []int{1 + g.r.IntN(2), 1 + g.r.IntN(2)}, Pads: []int{pad, pad, pad, pad}, Groups: groups, ChannelsLast: last}
			a := fusion.Attrs{Strides: ints64(o.Strides), Pads: ints64(o.Pads), Groups: int64Ptr(int64(groups))}
			xs, ws := []int64{int64(nb), int64(c), int64(h), int64(w)}, []int64{int64(f), int64(cg), int64(kh), int64(kw)}
			if last {
				a.Layout = "NHWC"
				xs, ws = []int64{int64(nb), int64(h), int64(w), int64(c)}, []int64{int64(kh), int64(kw), int64(cg), int64(f)}
			}
			add(opCase{op: "conv2d", attrs: a, ins: []operand{g.f32(xs...), g.f32(ws...)}, lazy: func(x []*Tensor) *Tensor { return x[0].Conv(x[1], o) }})
		}
	}
	l := 2 + g.r.IntN(8)
	add(opCase{op: "conv1d", attrs: fusion.Attrs{Pads: []int64{1, 1}}, ins: []operand{g.f32(1, 3, int64(l)), g.f32(2, 3, 3)}, lazy: func(x []*Tensor) *Tensor { return x[0].Conv(x[1], ConvOptions{Pads: []int{1, 1}}) }})

	d3 := int64(2 + g.r.IntN(3))
	add(opCase{op: "conv3d", attrs: fusion.Attrs{Strides: []int64{1, 2, 1}, Pads: []int64{0, 1, 0, 0, 1, 0}}, ins: []operand{g.f32(1, 2, d3, 4, d3), g.f32(3, 2, 2, 2, 1)}, lazy: func(x []*Tensor) *Tensor {
		return x[0].Conv(x[1], ConvOptions{Strides: []int{1, 2, 1}, Pads: []int{0, 1, 0, 0, 1, 0}})
	}})

	for _, op := range []string{"max_pool2d", "avg_pool2d"} {
		kh := 1 + g.r.IntN(3)
		o := PoolOptions{Kernel: []int{kh, kh}, Strides: []int{1 + g.r.IntN(2), 1 + g.r.IntN(2)}, Pads: []int{0, kh / 2, 0, kh / 2}, CountIncludePad: g.r.IntN(2) == 0 && op == "avg_pool2d"}
		a := fusion.Attrs{KernelShape: ints64(o.Kernel), Strides: ints64(o.Strides), Pads: ints64(o.Pads), CountIncludePad: o.CountIncludePad}
		xs := []int64{1, g.posDim(), int64(kh + g.r.IntN(6)), int64(kh + g.r.IntN(6))}
		add(opCase{op: op, attrs: a, ins: []operand{g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor {
			if op == "max_pool2d" {
				return x[0].MaxPool2d(o)
			}
			return x[0].AvgPool2d(o)
		}})
	}

	for _, op := range []string{"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"} {
		rank := 1 + g.r.IntN(3)
		xs := g.shape(rank, op == "reduce_max" || op == "reduce_min")
		var axes []int
		for a := range rank {
			if g.r.IntN(2) == 0 {
				axes = append(axes, a-rank*g.r.IntN(2)) // some negative
			}
		}
		keep := g.r.IntN(2) == 0
		add(opCase{op: op, attrs: fusion.Attrs{Axes: axes, KeepDims: keep}, ins: []operand{g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor {
			return x[0].reduce(op, axes, keep)
		}})
	}
	add(opCase{op: "reduce_sum", attrs: fusion.Attrs{Axes: []int{0}, KeepDims: true}, ins: []operand{g.f32(3, 4)}, lazy: func(x []*Tensor) *Tensor { return x[0].SumKeep(0) }})
	add(opCase{op: "reduce_max", ins: []operand{g.f32(3, 4)}, lazy: func(x []*Tensor) *Tensor { return x[0].MaxOf() }})

	xs := g.shape(1+g.r.IntN(3), true)
	sax := -1 - g.r.IntN(len(xs))
	add(opCase{op: "softmax", attrs: fusion.Attrs{Axis: intPtr(sax)}, ins: []operand{g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor { return x[0].Softmax(sax) }})
	xs = g.shape(1+g.r.IntN(3), true)
	ax := g.r.IntN(len(xs))
	tail := xs[ax:]
	add(opCase{op: "layernorm", attrs: fusion.Attrs{Axis: intPtr(ax), Epsilon: floatPtr(1e-5)}, ins: []operand{g.f32(xs...), g.f32(tail...), g.f32(tail...)}, lazy: func(x []*Tensor) *Tensor { return x[0].LayerNorm(x[1], x[2], ax, 1e-5) }})
	add(opCase{op: "layernorm", attrs: fusion.Attrs{Axis: intPtr(ax), Epsilon: floatPtr(1e-5)}, ins: []operand{g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor { return x[0].LayerNorm(nil, nil, ax, 1e-5) }})
	add(opCase{op: "rms_norm", attrs: fusion.Attrs{Epsilon: floatPtr(1e-6)}, ins: []operand{g.f32(xs...), g.f32(xs[len(xs)-1])}, lazy: func(x []*Tensor) *Tensor { return x[0].RMSNorm(x[1], 1e-6) }})
	c := g.posDim()
	bn := []operand{g.f32(2, c, 3, 2), g.f32(c), g.f32(c), g.f32(c), g.operand(ast.Float32, []int64{c})}
	for i := range bn[4].data.([]float32) {
		bn[4].data.([]float32)[i] = float32(i%3) + 0.5 // a variance is positive
	}
	add(opCase{op: "batch_norm", attrs: fusion.Attrs{Epsilon: floatPtr(1e-5)}, ins: bn, lazy: func(x []*Tensor) *Tensor { return x[0].BatchNorm(x[1], x[2], x[3], x[4], 1e-5) }})

	xs = g.shape(1+g.r.IntN(3), false)
	flat := int(elements(xs))
	add(opCase{op: "reshape", attrs: fusion.Attrs{Shape: jsonDims([]int{flat})}, ins: []operand{g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor { return x[0].Reshape(flat) }})
	rows := int(g.posDim())
	add(opCase{op: "reshape", attrs: fusion.Attrs{Shape: jsonDims([]int{rows * 2, 3, -1})}, ins: []operand{g.f32(int64(rows), 6, g.dim())}, lazy: func(x []*Tensor) *Tensor { return x[0].Reshape(rows*2, 3, -1) }})
	xs = g.shape(1+g.r.IntN(4), false)
	perm := g.r.Perm(len(xs))
	add(opCase{op: "transpose", attrs: fusion.Attrs{Perm: perm}, ins: []operand{g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor { return x[0].Transpose(perm...) }})
	xs = []int64{g.posDim() + 2, g.posDim() + 1}
	st, en, sp := []int{1, 0}, []int{int(xs[0]), int(xs[1]) - 1}, []int{2, 1}
	add(opCase{op: "slice", attrs: fusion.Attrs{Axes: []int{0, 1}, Starts: ints64(st), Ends: ints64(en), Steps: ints64(sp)}, ins: []operand{g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor { return x[0].Slice([]int{0, 1}, st, en, sp) }})
	xs = g.shape(2, false)
	pads := []int{g.r.IntN(3), 1, 0, g.r.IntN(2)}
	add(opCase{op: "pad", attrs: fusion.Attrs{Pads: ints64(pads), Value: floatPtr(-1.5)}, ins: []operand{g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor { return x[0].Pad(pads, -1.5) }})
	xs = []int64{g.posDim(), g.posDim() + 4}
	gax := g.r.IntN(2)
	idx := g.operand(ast.Int64, []int64{g.dim(), 2})
	for i, v := range idx.data.([]int64) {
		idx.data.([]int64)[i] = (v%xs[gax] + xs[gax]) % xs[gax] // in range
		if i%3 == 0 {
			idx.data.([]int64)[i] -= xs[gax] // negative: from the end
		}
	}
	add(opCase{op: "gather", attrs: fusion.Attrs{Axis: intPtr(gax)}, ins: []operand{g.f32(xs...), idx}, lazy: func(x []*Tensor) *Tensor { return x[0].Gather(x[1], gax) }})
	xs = g.shape(2, false)
	ys := slices.Clone(xs)
	ys[1] = g.dim()
	add(opCase{op: "concat", attrs: fusion.Attrs{Axis: intPtr(1)}, ins: []operand{g.f32(xs...), g.f32(ys...), g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor { return Concat(1, x...) }})
	xs = []int64{1, g.dim(), 1}
	to := []int{int(g.dim()), int(xs[1]), int(g.posDim())}
	add(opCase{op: "broadcast_to", attrs: fusion.Attrs{Shape: jsonDims(to)}, ins: []operand{g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor { return x[0].BroadcastTo(to...) }})
	xs = g.shape(2, false)
	add(opCase{op: "iota", attrs: fusion.Attrs{Axis: intPtr(1), DType: "int64"}, ins: []operand{g.f32(xs...)}, lazy: func(x []*Tensor) *Tensor { return x[0].Iota(1, ast.Int64) }})
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestEveryOperatorAsModule runs every operator lazily and as a graph of
// one node compiled by package module (outputs poisoned with NaN), at
// random shapes with sizes 0 and 1 among them, and compares the results.
func TestEveryOperatorAsModule(t *testing.T) {
	d := newDevice(t)
	rounds := 1
	if *long {
		rounds = 8
	}
	covered := map[string]bool{}
	for round := range rounds {
		g := gen{rand.New(rand.NewPCG(uint64(round), 47))}
		for _, c := range cases(g) {
			covered[c.op] = true
			t.Run(fmt.Sprintf("%d/%s", round, c), func(t *testing.T) {
				want := viaModule(t, c)
				x := make([]*Tensor, len(c.ins))
				for i, in := range c.ins {
					x[i] = d.From(in.data, shapeInts(in.shape)...)
				}
				y := c.lazy(x)
				got, err := y.Data()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(y.Shape(), shapeInts(want.Shape)) {
					t.Fatalf("shape %v, module's %v", y.Shape(), want.Shape)
				}
				if i, ok := sameData(got, want.Data); !ok {
					t.Fatalf("element %d: lazy %v, module %v", i, formatElement(got, i), formatElement(want.Data, i))
				}
			})
		}
	}
	for op := range fusionOps() {
		if !covered[op] {
			t.Errorf("operator %s has no case", op)
		}
	}
}

// fusionOps lists the operators package fusion documents.
func fusionOps() map[string]bool {
	ops := map[string]bool{}
	for _, op := range append(slices.Clone(unaryOps), "cast", "add", "sub", "mul", "div", "max", "min", "pow",
		"equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "where", "iota", "broadcast_to",
		"reshape", "transpose", "slice", "concat", "pad", "gather", "reduce_sum", "reduce_mean", "reduce_max",
		"reduce_min", "matmul", "conv1d", "conv2d", "conv3d", "max_pool2d", "avg_pool2d", "softmax", "layernorm",
		"rms_norm", "batch_norm") {
		ops[op] = true
	}
	return ops
}

// viaModule computes a case as a one-node graph through package module.
func viaModule(t *testing.T, c opCase) module.Tensor {
	t.Helper()
	// named as a lazy trace is, so that an identical graph is one module
	// (package module's cache) and compiles once
	b := fusion.NewBuilder("lazy")
	ins := make([]*fusion.Tensor, len(c.ins))
	feed := map[string]module.Tensor{}
	for i, in := range c.ins {
		name := "x" + strconv.Itoa(i)
		var err error
		if ins[i], err = b.Input(name, in.dtype, constDims(in.shape)...); err != nil {
			t.Fatal(err)
		}
		feed[name] = module.Tensor{Shape: in.shape, Data: in.data}
	}
	y, err := b.Node("t0", c.op, c.attrs, ins...)
	if err != nil {
		t.Fatal(err)
	}
	gr, err := b.Graph(y)
	if err != nil {
		t.Fatal(err)
	}
	m, err := module.Compile(gr, module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	out, err := m.NewOutputs(feed)
	if err != nil {
		t.Fatal(err)
	}
	ast.Poison(m.Outputs()[0].DType, out["t0"].Data)
	if err := m.Run(feed, out); err != nil {
		t.Fatal(err)
	}
	return out["t0"]
}

// sameData compares two data slices, NaN equal to NaN, floats to a
// relative 1e-5; it returns the first index that differs.
func sameData(a, b any) (int, bool) {
	switch a := a.(type) {
	case []float32:
		b, ok := b.([]float32)
		if !ok || len(a) != len(b) {
			return -1, false
		}
		for i := range a {
			if !close64(float64(a[i]), float64(b[i])) {
				return i, false
			}
		}
		return 0, true
	case []float64:
		b, ok := b.([]float64)
		if !ok || len(a) != len(b) {
			return -1, false
		}
		for i := range a {
			if !close64(a[i], b[i]) {
				return i, false
			}
		}
		return 0, true
	case []int32:
		b, ok := b.([]int32)
		return firstDiff(a, b, ok)
	case []int64:
		b, ok := b.([]int64)
		return firstDiff(a, b, ok)
	case []bool:
		b, ok := b.([]bool)
		return firstDiff(a, b, ok)
	}
	return -1, false
}

func firstDiff[T comparable](a, b []T, ok bool) (int, bool) {
	if !ok || len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		if a[i] != b[i] {
			return i, false
		}
	}
	return 0, true
}

func close64(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-5*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func shapeInts(s []int64) []int {
	out := make([]int, len(s))
	for i, v := range s {
		out[i] = int(v)
	}
	return out
}

// newDevice is a one-thread device closed at the test's end.
func newDevice(t testing.TB) *Device {
	d, err := NewDevice(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
