package fusion_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-go/loom/fusion"
)

// tensor is a float64 reference tensor.
type tensor struct {
	shape []int
	data  []float64
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
		"gelu": func(x float64) float64 { return x * 0.5 * (1 + math.Erf(x/math.Sqrt2)) },
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
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.op == "broadcast_to" {
				src := c.ins[0]
				c.want = build([]int{2, 3, 4}, func(i []int) float64 { return bcast(src, []int{2, 3, 4}, i) })
			}
			got := runOp(t, c.op, c.attrs, c.ins)
			if len(got) != len(c.want.data) {
				t.Fatalf("%d elements, want %d", len(got), len(c.want.data))
			}
			for i := range got {
				if d := math.Abs(got[i] - c.want.data[i]); d > 1e-12*math.Max(1, math.Abs(c.want.data[i])) {
					t.Fatalf("element %d = %v, want %v", i, got[i], c.want.data[i])
				}
			}
		})
	}
}

// runOp compiles a one-node float64 graph and interprets it.
func runOp(t *testing.T, op string, attrs map[string]any, ins []tensor) []float64 {
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
		inputs = append(inputs, jt{name, "float64", in.shape})
		names = append(names, name)
		data[name] = in.data
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
	return out["Y"].([]float64)
}
