package lazy_test

import (
	"fmt"
	"math"

	"github.com/loom-go/loom/lazy"
)

// An MLP's inference loop: the weights are recorded once, each batch is
// an input, and the loop body is ordinary Go. The first batch compiles
// the trace; the others find it compiled.
func Example() {
	d, err := lazy.NewDevice(lazy.Options{Threads: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	w1 := d.Weight(series(4*8, 0.1), 4, 8)
	b1 := d.Weight(series(8, 0.05), 8)
	w2 := d.Weight(series(8*3, -0.2), 8, 3)
	for batch := range 3 {
		x := d.FromFloat32s(series(2*4, float32(batch+1)), 2, 4)
		probs := x.MatMul(w1).Add(b1).Relu().MatMul(w2).Softmax(-1)
		p, err := probs.Float32s() // the barrier
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("batch %d: %.3f\n", batch, p)
	}
	st := d.Stats()
	fmt.Printf("%d traces: %d compiled, %d found compiled\n", st.Traces, st.Misses, st.Hits)
	// Output:
	// batch 0: [0.335 0.333 0.332 0.337 0.333 0.330]
	// batch 1: [0.336 0.333 0.331 0.340 0.333 0.326]
	// batch 2: [0.337 0.333 0.329 0.344 0.333 0.323]
	// 3 traces: 1 compiled, 2 found compiled
}

// series returns n values i*step/n, i = 0..n-1.
func series(n int, step float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i) * step / float32(n)
	}
	return v
}

// waves returns n values sin(i).
func waves(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.Sin(float64(i)))
	}
	return v
}

// encoder is a transformer encoder layer's parameters.
type encoder struct {
	wq, wk, wv, wo, w1, w2, g1, b1, g2, b2 *lazy.Tensor
	heads                                  int
}

// forward is the layer written op by op: attention over heads, a
// residual and a layer norm, a GELU feed-forward, another residual and
// layer norm.
func (e encoder) forward(x *lazy.Tensor) *lazy.Tensor {
	s, dm := x.Shape()[0], x.Shape()[1]
	hd := dm / e.heads
	q := x.MatMul(e.wq).Reshape(s, e.heads, hd).Transpose(1, 0, 2)
	k := x.MatMul(e.wk).Reshape(s, e.heads, hd).Transpose(1, 2, 0)
	v := x.MatMul(e.wv).Reshape(s, e.heads, hd).Transpose(1, 0, 2)
	attn := q.MatMul(k).MulScalar(1 / math.Sqrt(float64(hd))).Softmax(-1)
	ctx := attn.MatMul(v).Transpose(1, 0, 2).Reshape(s, dm)
	h := ctx.MatMul(e.wo).Add(x).LayerNorm(e.g1, e.b1, -1, 1e-5)
	return h.MatMul(e.w1).Gelu().MatMul(e.w2).Add(h).LayerNorm(e.g2, e.b2, -1, 1e-5)
}

// A transformer layer written op by op and called at several sequence
// lengths. The sequence axis is marked Dynamic, so the first call
// compiles the layer for a bucket of lengths (5 to 8) and the others of
// that bucket compile nothing.
func Example_transformerLayer() {
	d, err := lazy.NewDevice(lazy.Options{Threads: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	const dm, ffn = 16, 32
	e := encoder{
		wq: d.Weight(series(dm*dm, 1), dm, dm), wk: d.Weight(series(dm*dm, -1), dm, dm),
		wv: d.Weight(series(dm*dm, 0.5), dm, dm), wo: d.Weight(series(dm*dm, 0.25), dm, dm),
		w1: d.Weight(series(dm*ffn, 0.5), dm, ffn), w2: d.Weight(series(ffn*dm, -0.5), ffn, dm),
		g1: d.Weight(series(dm, 1), dm), b1: d.Weight(series(dm, 0.1), dm),
		g2: d.Weight(series(dm, 2), dm), b2: d.Weight(series(dm, -0.1), dm),
		heads: 4,
	}
	for _, s := range []int{8, 6, 5, 8} {
		x := d.FromFloat32s(waves(s*dm), s, dm).Dynamic(0)
		y := e.forward(x)
		// the barrier: the largest value
		top, err := y.MaxOf().Item()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("length %d: %.4f\n", s, top)
	}
	st := d.Stats()
	fmt.Printf("%d calls, %d compilation(s)\n", st.Traces, st.Misses)
	// Output:
	// length 8: 3.9238
	// length 6: 3.3526
	// length 5: 3.2639
	// length 8: 3.9238
	// 4 calls, 1 compilation(s)
}

// A loop whose trip count depends on the data, which a graph front end
// cannot capture in one piece: Newton's iteration for square roots runs
// until no element changes by more than 1e-6. Each step computes the new
// state and its change together (Sync), so that the next step starts
// from computed values: one trace per step, the same each time.
func Example_dataDependentLoop() {
	d, err := lazy.NewDevice(lazy.Options{Threads: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	x := d.FromFloat32s([]float32{2, 9, 1e4, 0.25}, 4)
	y := x // the first guess
	steps := 0
	for {
		next := y.Add(x.Div(y)).MulScalar(0.5)
		delta := next.Sub(y).Abs().MaxOf()
		if err := d.Sync(next, delta); err != nil {
			fmt.Println(err)
			return
		}
		change, err := delta.Item()
		if err != nil {
			fmt.Println(err)
			return
		}
		y, steps = next, steps+1
		if change <= 1e-6*math.Max(1, math.Abs(change)) {
			break
		}
	}
	roots, err := y.Float32s()
	if err != nil {
		fmt.Println(err)
		return
	}
	st := d.Stats()
	fmt.Printf("%d steps: %.4f\n", steps, roots)
	fmt.Printf("compiled %d trace(s) for %d barriers\n", st.Misses, st.Traces)
	// Output:
	// 11 steps: [1.4142 3.0000 100.0000 0.5000]
	// compiled 2 trace(s) for 11 barriers
}
