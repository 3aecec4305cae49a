// Command lazybench measures package lazy on a transformer encoder layer
// (BERT-base: hidden 768, 12 heads of 64, feed-forward 3072 with exact
// GELU, post-layernorm) written op by op in Go:
//
//   - the per-call cost of recording the operations, capturing the trace
//     and finding its module, against the module's kernel time, over
//     -calls calls after the first (which compiles);
//   - the compilations across those calls (none expected), and at other
//     sequence lengths of the same bucket, with the sequence axis marked
//     Dynamic (none expected) and unmarked (one, the symbolic module);
//   - the speedup over the same layer computed eagerly in Go: gonum's
//     BLAS (its own Go kernels) for the matrix products, loops for the
//     rest, at the same thread count (GOMAXPROCS), the calls of the two
//     alternated in one run and their outputs compared.
//
// Every time printed is a median with its 10th and 90th percentiles.
//
//	go run ./tools/lazybench -threads 1
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/loom-go/loom/lazy"
)

const (
	hidden = 768
	heads  = 12
	ffn    = 3072
)

func main() {
	threads := flag.Int("threads", 1, "threads of loom's kernels and of gonum (GOMAXPROCS)")
	seq := flag.Int("seq", 128, "sequence length")
	calls := flag.Int("calls", 100, "calls measured after the first")
	asJSON := flag.Bool("json", false, "print one JSON object instead of text")
	flag.Parse()
	if err := run(*threads, *seq, *calls, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "lazybench:", err)
		os.Exit(1)
	}
}

// report is what one run measured.
type report struct {
	Threads int `json:"threads"`
	Seq     int `json:"seq"`
	Calls   int `json:"calls"`
	// per call, milliseconds: median, 10th and 90th percentile
	Wall     spread `json:"lazy_call_ms"`
	Kernels  spread `json:"kernels_ms"`
	Overhead spread `json:"overhead_ms"`
	// OverheadShare is the median overhead over the median kernel time.
	OverheadShare float64 `json:"overhead_share"`
	Eager         spread  `json:"eager_call_ms"`
	Speedup       float64 `json:"speedup"`
	MaxError      float64 `json:"max_abs_error"`
	// compilations: at the first call, during the measured calls, at
	// other lengths of the bucket (marked Dynamic, then unmarked)
	FirstCompile     float64 `json:"first_compile_s"`
	CompilesInCalls  int64   `json:"compiles_in_calls"`
	MarkedLengths    []int   `json:"marked_lengths"`
	MarkedCompiles   int64   `json:"marked_compiles"`
	UnmarkedCompiles int64   `json:"unmarked_compiles"`
	// what serving a bucket costs: per length, the call on the bucket's
	// symbolic module and on a module compiled for that length alone
	Buckets []lengthCost `json:"bucket_vs_static"`
	Stats   string       `json:"stats"`
}

// lengthCost is one length's call on the bucket's module and on its own.
type lengthCost struct {
	Length int     `json:"length"`
	Bucket spread  `json:"bucket_ms"`
	Static spread  `json:"static_ms"`
	Ratio  float64 `json:"static_over_bucket"`
}

type spread struct{ Median, P10, P90 float64 }

func spreadOf(ms []float64) spread {
	s := slices.Clone(ms)
	slices.Sort(s)
	at := func(q float64) float64 { return s[min(int(q*float64(len(s))), len(s)-1)] }
	return spread{at(0.5), at(0.1), at(0.9)}
}

func (s spread) String() string {
	return fmt.Sprintf("%.3f ms (p10 %.3f, p90 %.3f)", s.Median, s.P10, s.P90)
}

func run(threads, seq, calls int, asJSON bool) error {
	runtime.GOMAXPROCS(threads)
	d, err := lazy.NewDevice(lazy.Options{Threads: threads})
	if err != nil {
		return err
	}
	defer d.Close()
	p := newParams(rand.New(rand.NewPCG(1, 2)))
	w := p.on(d)
	x := randoms(rand.New(rand.NewPCG(3, 4)), seq*hidden, 1)
	r := report{Threads: threads, Seq: seq, Calls: calls}

	start := time.Now()
	first, err := layer(d.From(x, seq, hidden), w).Float32s()
	if err != nil {
		return err
	}
	r.FirstCompile = time.Since(start).Seconds()
	want := eagerLayer(x, seq, p)
	for i := range want {
		r.MaxError = max(r.MaxError, math.Abs(float64(first[i]-want[i])))
	}
	if r.MaxError > 1e-2 {
		return fmt.Errorf("lazy and eager layers differ by %g", r.MaxError)
	}

	before := d.Stats()
	var wall, kernels, overhead, eager []float64
	for range calls {
		s0 := d.Stats()
		t0 := time.Now()
		if err := d.Sync(layer(d.From(x, seq, hidden), w)); err != nil {
			return err
		}
		ms := time.Since(t0).Seconds() * 1e3
		k := (d.Stats().Run - s0.Run).Seconds() * 1e3
		wall, kernels, overhead = append(wall, ms), append(kernels, k), append(overhead, ms-k)
		t1 := time.Now()
		eagerLayer(x, seq, p)
		eager = append(eager, time.Since(t1).Seconds()*1e3)
	}
	after := d.Stats()
	r.CompilesInCalls = after.Misses - before.Misses
	r.Wall, r.Kernels, r.Overhead, r.Eager = spreadOf(wall), spreadOf(kernels), spreadOf(overhead), spreadOf(eager)
	r.OverheadShare = r.Overhead.Median / r.Kernels.Median
	r.Speedup = r.Eager.Median / r.Wall.Median
	r.Stats = after.String()

	// other lengths of the bucket: marked, the first compilation serves them
	lo := seq/2 + 1
	if seq <= 2 {
		lo = seq
	}
	r.MarkedLengths = []int{seq, max(lo, seq-8), lo}
	if r.MarkedCompiles, err = compilesAt(threads, p, r.MarkedLengths, true); err != nil {
		return err
	}
	if r.UnmarkedCompiles, err = compilesAt(threads, p, r.MarkedLengths, false); err != nil {
		return err
	}
	if r.Buckets, err = bucketCosts(threads, p, r.MarkedLengths, max(calls/5, 5)); err != nil {
		return err
	}

	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Printf("transformer layer (hidden %d, %d heads, ffn %d), sequence %d, %d thread(s), %d calls after the first\n", hidden, heads, ffn, seq, threads, calls)
	fmt.Printf("first call (compiles): %.2f s; compilations during the calls: %d\n", r.FirstCompile, r.CompilesInCalls)
	fmt.Printf("lazy call:      %s\n", r.Wall)
	fmt.Printf("  its kernels:  %s\n", r.Kernels)
	fmt.Printf("  overhead:     %s = %.2f%% of the kernels (recording, capture, lookup, binding)\n", r.Overhead, 100*r.OverheadShare)
	fmt.Printf("eager Go call:  %s (gonum BLAS + loops); lazy is %.2fx faster; max |difference| %.2g\n", r.Eager, r.Speedup, r.MaxError)
	fmt.Printf("lengths %v: %d compilations with the sequence marked Dynamic, %d unmarked\n", r.MarkedLengths, r.MarkedCompiles, r.UnmarkedCompiles)
	for _, c := range r.Buckets {
		fmt.Printf("  length %d: bucket's module %s, its own %s: %.2f\n", c.Length, c.Bucket, c.Static, c.Ratio)
	}
	fmt.Println(r.Stats)
	return nil
}

// bucketCosts times the layer at each length on one device whose input
// is marked Dynamic (the bucket's symbolic module) and on a device of its
// own per length (a module for that length), the calls alternated.
func bucketCosts(threads int, p *params, lengths []int, calls int) ([]lengthCost, error) {
	bucket, err := lazy.NewDevice(lazy.Options{Threads: threads})
	if err != nil {
		return nil, err
	}
	defer bucket.Close()
	wb := p.on(bucket)
	var out []lengthCost
	for _, s := range lengths {
		own, err := lazy.NewDevice(lazy.Options{Threads: threads})
		if err != nil {
			return nil, err
		}
		wo := p.on(own)
		x := randoms(rand.New(rand.NewPCG(uint64(s), 6)), s*hidden, 1)
		call := func(d *lazy.Device, w weights, marked bool) (float64, error) {
			t := d.From(x, s, hidden)
			if marked {
				t = t.Dynamic(0)
			}
			start := time.Now()
			err := d.Sync(layer(t, w))
			return time.Since(start).Seconds() * 1e3, err
		}
		var b, o []float64
		for i := range calls + 1 {
			tb, err := call(bucket, wb, true)
			if err != nil {
				own.Close()
				return nil, err
			}
			to, err := call(own, wo, false)
			if err != nil {
				own.Close()
				return nil, err
			}
			if i > 0 { // the first compiles
				b, o = append(b, tb), append(o, to)
			}
		}
		own.Close()
		c := lengthCost{Length: s, Bucket: spreadOf(b), Static: spreadOf(o)}
		c.Ratio = c.Static.Median / c.Bucket.Median
		out = append(out, c)
	}
	return out, nil
}

// compilesAt runs the layer on a fresh device at each length (the input
// marked Dynamic or not) and returns the compilations.
func compilesAt(threads int, p *params, lengths []int, marked bool) (int64, error) {
	d, err := lazy.NewDevice(lazy.Options{Threads: threads})
	if err != nil {
		return 0, err
	}
	defer d.Close()
	w := p.on(d)
	for _, s := range lengths {
		x := d.From(randoms(rand.New(rand.NewPCG(uint64(s), 5)), s*hidden, 1), s, hidden)
		if marked {
			x = x.Dynamic(0)
		}
		if err := d.Sync(layer(x, w)); err != nil {
			return 0, err
		}
	}
	return d.Stats().Misses, nil
}

// weights are the layer's parameters on a device.
type weights struct {
	wq, wk, wv, wo, w1, w2, bq, bk, bv, bo, b1, b2, g1, beta1, g2, beta2 *lazy.Tensor
}

// layer is the encoder layer, op by op.
func layer(x *lazy.Tensor, w weights) *lazy.Tensor {
	s := x.Shape()[0]
	hd := hidden / heads
	q := x.MatMul(w.wq).Add(w.bq).Reshape(s, heads, hd).Transpose(1, 0, 2)
	k := x.MatMul(w.wk).Add(w.bk).Reshape(s, heads, hd).Transpose(1, 2, 0)
	v := x.MatMul(w.wv).Add(w.bv).Reshape(s, heads, hd).Transpose(1, 0, 2)
	attn := q.MatMul(k).MulScalar(1 / math.Sqrt(float64(hd))).Softmax(-1)
	ctx := attn.MatMul(v).Transpose(1, 0, 2).Reshape(s, hidden)
	h := ctx.MatMul(w.wo).Add(w.bo).Add(x).LayerNorm(w.g1, w.beta1, -1, 1e-12)
	f := h.MatMul(w.w1).Add(w.b1).Gelu().MatMul(w.w2).Add(w.b2)
	return f.Add(h).LayerNorm(w.g2, w.beta2, -1, 1e-12)
}

// params are the layer's parameters as Go slices.
type params struct {
	wq, wk, wv, wo, w1, w2, bq, bk, bv, bo, b1, b2, g1, beta1, g2, beta2 []float32
}

func newParams(r *rand.Rand) *params {
	sc := 1 / math.Sqrt(hidden)
	return &params{
		wq: randoms(r, hidden*hidden, sc), wk: randoms(r, hidden*hidden, sc), wv: randoms(r, hidden*hidden, sc),
		wo: randoms(r, hidden*hidden, sc), w1: randoms(r, hidden*ffn, sc), w2: randoms(r, ffn*hidden, 1/math.Sqrt(ffn)),
		bq: randoms(r, hidden, 0.1), bk: randoms(r, hidden, 0.1), bv: randoms(r, hidden, 0.1), bo: randoms(r, hidden, 0.1),
		b1: randoms(r, ffn, 0.1), b2: randoms(r, hidden, 0.1),
		g1: ones(hidden), beta1: randoms(r, hidden, 0.1), g2: ones(hidden), beta2: randoms(r, hidden, 0.1),
	}
}

// on makes the parameters weights of a device.
func (p *params) on(d *lazy.Device) weights {
	m := func(v []float32, rows, cols int) *lazy.Tensor { return d.Weight(v, rows, cols) }
	b := func(v []float32) *lazy.Tensor { return d.Weight(v, len(v)) }
	return weights{
		wq: m(p.wq, hidden, hidden), wk: m(p.wk, hidden, hidden), wv: m(p.wv, hidden, hidden), wo: m(p.wo, hidden, hidden),
		w1: m(p.w1, hidden, ffn), w2: m(p.w2, ffn, hidden),
		bq: b(p.bq), bk: b(p.bk), bv: b(p.bv), bo: b(p.bo), b1: b(p.b1), b2: b(p.b2),
		g1: b(p.g1), beta1: b(p.beta1), g2: b(p.g2), beta2: b(p.beta2),
	}
}

func randoms(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((r.Float64()*2 - 1) * scale)
	}
	return v
}

func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// eagerLayer is the layer as a Go program without loom computes it: each
// step at once, the matrix products by gonum's BLAS, heads as strided
// views (no copies), the rest in loops.
func eagerLayer(x []float32, s int, p *params) []float32 {
	linear := func(in []float32, rows, k, n int, w, bias []float32) []float32 {
		out := make([]float32, rows*n)
		for i := range rows {
			copy(out[i*n:(i+1)*n], bias)
		}
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1,
			blas32.General{Rows: rows, Cols: k, Stride: k, Data: in},
			blas32.General{Rows: k, Cols: n, Stride: n, Data: w}, 1,
			blas32.General{Rows: rows, Cols: n, Stride: n, Data: out})
		return out
	}
	q := linear(x, s, hidden, hidden, p.wq, p.bq)
	k := linear(x, s, hidden, hidden, p.wk, p.bk)
	v := linear(x, s, hidden, hidden, p.wv, p.bv)
	hd := hidden / heads
	ctx := make([]float32, s*hidden)
	scores := make([]float32, s*s)
	if s > 0 {
		for h := range heads {
			view := func(m []float32) blas32.General {
				return blas32.General{Rows: s, Cols: hd, Stride: hidden, Data: m[h*hd:]}
			}
			blas32.Gemm(blas.NoTrans, blas.Trans, float32(1/math.Sqrt(float64(hd))), view(q), view(k), 0,
				blas32.General{Rows: s, Cols: s, Stride: s, Data: scores})
			for i := range s {
				softmax(scores[i*s : (i+1)*s])
			}
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, blas32.General{Rows: s, Cols: s, Stride: s, Data: scores}, view(v), 0, view(ctx))
		}
	}
	h := linear(ctx, s, hidden, hidden, p.wo, p.bo)
	for i := range h {
		h[i] += x[i]
	}
	layerNorm(h, s, p.g1, p.beta1)
	f := linear(h, s, hidden, ffn, p.w1, p.b1)
	for i, a := range f {
		f[i] = float32(0.5 * float64(a) * (1 + math.Erf(float64(a)/math.Sqrt2)))
	}
	out := linear(f, s, ffn, hidden, p.w2, p.b2)
	for i := range out {
		out[i] += h[i]
	}
	layerNorm(out, s, p.g2, p.beta2)
	return out
}

func softmax(row []float32) {
	m := float32(math.Inf(-1))
	for _, a := range row {
		m = max(m, a)
	}
	var sum float32
	for i, a := range row {
		row[i] = float32(math.Exp(float64(a - m)))
		sum += row[i]
	}
	for i := range row {
		row[i] /= sum
	}
}

func layerNorm(m []float32, rows int, g, b []float32) {
	for i := range rows {
		row := m[i*hidden : (i+1)*hidden]
		var mean, sq float64
		for _, a := range row {
			mean += float64(a)
		}
		mean /= hidden
		for _, a := range row {
			sq += (float64(a) - mean) * (float64(a) - mean)
		}
		inv := 1 / math.Sqrt(sq/hidden+1e-12)
		for j, a := range row {
			row[j] = float32((float64(a)-mean)*inv)*g[j] + b[j]
		}
	}
}
