package lazy

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
)

// attention is a small attention block written op by op: the shape of
// code the cache must recognize call after call.
func attention(d *Device, x, wqkv, wo *Tensor, heads int) *Tensor {
	s, dm := x.Shape()[0], x.Shape()[1]
	hd := dm / heads
	qkv := x.MatMul(wqkv)
	q := qkv.Slice([]int{1}, []int{0}, []int{dm}, nil).Reshape(s, heads, hd).Transpose(1, 0, 2)
	k := qkv.Slice([]int{1}, []int{dm}, []int{2 * dm}, nil).Reshape(s, heads, hd).Transpose(1, 2, 0)
	v := qkv.Slice([]int{1}, []int{2 * dm}, []int{3 * dm}, nil).Reshape(s, heads, hd).Transpose(1, 0, 2)
	p := q.MatMul(k).MulScalar(0.25).Softmax(-1)
	o := p.MatMul(v).Transpose(1, 0, 2).Reshape(s, dm)
	return o.MatMul(wo).Add(x).LayerNorm(nil, nil, -1, 1e-5)
}

func randomFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Float64()*2 - 1)
	}
	return v
}

func TestSecondCallIsALookup(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(1, 2))
	wqkv, wo := d.Weight(randomFloats(r, 16*48), 16, 48), d.Weight(randomFloats(r, 16*16), 16, 16)
	in := randomFloats(r, 6*16)
	var first []float32
	for call := range 5 {
		y, err := attention(d, d.From(in, 6, 16), wqkv, wo, 4).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if call == 0 {
			first = y
		} else if i, ok := sameData(y, first); !ok {
			t.Fatalf("call %d differs from the first at %d", call, i)
		}
	}
	s := d.Stats()
	if s.Traces != 5 || s.Misses != 1 || s.Hits != 4 || s.ShapeRecompiles != 0 {
		t.Errorf("stats after 5 calls at one shape: %+v; want 5 traces, 1 miss, 4 hits", s)
	}
	if s.Compile == 0 || s.Run == 0 || s.Capture == 0 || s.Ops == 0 {
		t.Errorf("stats miss times or counts: %+v", s)
	}
	if !strings.Contains(s.String(), "4 hits") {
		t.Errorf("Stats.String: %s", s)
	}
}

// TestNewShapesShareASymbolicModule: the block at a second sequence
// length compiles once more, with the length a symbol, for the bucket
// of lengths it falls in; every other length of that bucket is then a
// lookup, and each result is the block's (attentionRef, in float64), and
// at length 13 (a lookup) the one a module compiled for its own length
// gives.
func TestNewShapesShareASymbolicModule(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(3, 4))
	wq, wo := randomFloats(r, 16*48), randomFloats(r, 16*16)
	wqkv, wout := d.Weight(wq, 16, 48), d.Weight(wo, 16, 16)
	steps := []struct {
		length int
		misses int64 // so far
	}{
		{6, 1},  // compiled at its sizes
		{9, 2},  // comes back at another length: symbolic, for (8, 16]
		{13, 2}, // the same bucket
		{16, 2},
		{40, 3}, // (32, 64]
		{33, 3},
		{9, 3},
		{1, 4}, // 1 and 0 are buckets of their own
		{0, 5},
	}
	for _, step := range steps {
		s := step.length
		in := randomFloats(r, s*16)
		got, err := attention(d, d.From(in, s, 16), wqkv, wout, 4).Float32s()
		if err != nil {
			t.Fatalf("length %d: %v", s, err)
		}
		if st := d.Stats(); st.Misses != step.misses {
			t.Fatalf("after length %d: %d misses, want %d (%v)", s, st.Misses, step.misses, st)
		}
		sameAsRef(t, got, in, s, wq, wo)
		if s == 13 {
			sameAsStatic(t, got, in, s, wq, wo)
		}
	}
	if st := d.Stats(); st.ShapeRecompiles != 4 || st.Symbolic != 4 || st.Hits != 4 {
		t.Errorf("stats: %v; want 4 recompilations for a new shape, all symbolic, 4 hits", st)
	}
}

// sameAsStatic checks the attention block's result at length s against
// the one a device of its own gives, which compiles that length alone.
func sameAsStatic(t *testing.T, got, in []float32, s int, wq, wo []float32) {
	t.Helper()
	ref := newDevice(t)
	want, err := attention(ref, ref.From(in, s, 16), ref.Weight(wq, 16, 48), ref.Weight(wo, 16, 16), 4).Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if j, ok := sameData(got, want); !ok {
		t.Fatalf("length %d: element %d is %v, the static module's %v", s, j, got[j], want[j])
	}
}

// attentionRef is attention (4 heads of width 4 over a model width of
// 16) at length s in float64, directly: x [s, 16], wq [16, 48], wo [16, 16].
func attentionRef(x []float32, s int, wq, wo []float32) []float64 {
	const dm, heads, hd = 16, 4, 4
	qkv := make([]float64, s*3*dm)
	for i := 0; i < s; i++ {
		for c := 0; c < 3*dm; c++ {
			sum := 0.0
			for k := 0; k < dm; k++ {
				sum += float64(x[i*dm+k]) * float64(wq[k*3*dm+c])
			}
			qkv[i*3*dm+c] = sum
		}
	}
	o := make([]float64, s*dm)
	p := make([]float64, s)
	for h := 0; h < heads; h++ {
		for i := 0; i < s; i++ {
			m := math.Inf(-1)
			for j := 0; j < s; j++ {
				dot := 0.0
				for d := 0; d < hd; d++ {
					dot += qkv[i*3*dm+h*hd+d] * qkv[j*3*dm+dm+h*hd+d]
				}
				p[j] = dot * 0.25
				m = math.Max(m, p[j])
			}
			sum := 0.0
			for j := 0; j < s; j++ {
				p[j] = math.Exp(p[j] - m)
				sum += p[j]
			}
			for d := 0; d < hd; d++ {
				acc := 0.0
				for j := 0; j < s; j++ {
					acc += p[j] / sum * qkv[j*3*dm+2*dm+h*hd+d]
				}
				o[i*dm+h*hd+d] = acc
			}
		}
	}
	y := make([]float64, s*dm)
	for i := 0; i < s; i++ {
		mean := 0.0
		for c := 0; c < dm; c++ {
			v := float64(x[i*dm+c])
			for k := 0; k < dm; k++ {
				v += o[i*dm+k] * float64(wo[k*dm+c])
			}
			y[i*dm+c] = v
			mean += v
		}
		mean /= dm
		variance := 0.0
		for c := 0; c < dm; c++ {
			variance += (y[i*dm+c] - mean) * (y[i*dm+c] - mean)
		}
		variance /= dm
		for c := 0; c < dm; c++ {
			y[i*dm+c] = (y[i*dm+c] - mean) / math.Sqrt(variance+1e-5)
		}
	}
	return y
}

// sameAsRef checks the attention block's result at length s against
// attentionRef's, to 1e-4 of each element's magnitude (at least 1): float32
// against float64.
func sameAsRef(t *testing.T, got, in []float32, s int, wq, wo []float32) {
	t.Helper()
	want := attentionRef(in, s, wq, wo)
	if len(got) != len(want) {
		t.Fatalf("length %d: %d elements, want %d", s, len(got), len(want))
	}
	for j := range want {
		if d := math.Abs(float64(got[j]) - want[j]); !(d <= 1e-4*math.Max(1, math.Abs(want[j]))) {
			t.Fatalf("length %d: element %d is %v, want %v", s, j, got[j], want[j])
		}
	}
}

// TestPatternRefined: two inputs of equal length twice share a symbol;
// when their lengths part, the pattern no longer fits and the trace is
// compiled again, correctly.
func TestPatternRefined(t *testing.T) {
	d := newDevice(t)
	outer := func(a, b []float32) []float32 {
		y, err := d.From(a, len(a), 1).MatMul(d.From(b, 1, len(b))).Tanh().Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	for _, n := range [][2]int{{3, 3}, {5, 5}, {7, 7}, {6, 8}, {5, 7}} {
		a, b := make([]float32, n[0]), make([]float32, n[1])
		for i := range a {
			a[i] = float32(i + 1)
		}
		for j := range b {
			b[j] = float32(j) / 8
		}
		got := outer(a, b)
		for i := range a {
			for j := range b {
				if w := float32(math.Tanh(float64(a[i] * b[j]))); !close64(float64(got[i*len(b)+j]), float64(w)) {
					t.Fatalf("%v: element [%d,%d] is %v, want %v", n, i, j, got[i*len(b)+j], w)
				}
			}
		}
	}
	if st := d.Stats(); st.Misses != 3 || st.Hits != 2 {
		t.Errorf("stats: %v; want 3 misses (3x3, the shared symbol at 5x5, two symbols at 6x8), 2 hits", st)
	}
}

// TestReadingAnIntermediateLater: a tensor read after the result it fed
// is computed from its own trace.
func TestReadingAnIntermediateLater(t *testing.T) {
	d := newDevice(t)
	x := d.FromFloat32s([]float32{0, 1, 2, 3}, 2, 2)
	e := x.Exp()
	total := e.Sum()
	if v, err := total.Item(); err != nil || !close64(v, 1+2.718281828+7.389056099+20.08553692) {
		t.Fatalf("sum of exp: %v, %v", v, err)
	}
	if total.Pending() || !e.Pending() {
		t.Fatal("the barrier should compute exactly the tensor asked for")
	}
	got, err := e.Float32s()
	if err != nil || !close64(float64(got[3]), 20.08553692) {
		t.Fatalf("exp read later: %v, %v", got, err)
	}
	// a computed result feeds the next trace as an input
	twice, err := total.Add(total).Item()
	if err != nil || !close64(twice, 2*(1+2.718281828+7.389056099+20.08553692)) {
		t.Fatalf("computed result reused: %v, %v", twice, err)
	}
}

// TestSyncComputesTogether: several tensors in one trace, one module.
func TestSyncComputesTogether(t *testing.T) {
	d := newDevice(t)
	x := d.FromFloat32s([]float32{1, 2, 3, 4}, 4)
	a, b := x.MulScalar(2), x.Neg()
	c := a.Add(b)
	if err := Sync(a, b, c, a); err != nil {
		t.Fatal(err)
	}
	if a.Pending() || b.Pending() || c.Pending() {
		t.Fatal("Sync left a tensor pending")
	}
	if st := d.Stats(); st.Traces != 1 {
		t.Fatalf("%d traces, want 1", st.Traces)
	}
	got, _ := c.Float32s()
	if i, ok := sameData(got, []float32{1, 2, 3, 4}); !ok {
		t.Fatalf("element %d: %v", i, got)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestDroppedValuesAreCollected: the device keeps no pending tensor the
// program has dropped, and a computed tensor keeps no trace.
func TestDroppedValuesAreCollected(t *testing.T) {
	d := newDevice(t)
	collected := make(chan struct{})
	func() {
		x := d.FromFloat32s([]float32{1, 2}, 2)
		y := x.Exp()
		runtime.AddCleanup(y, func(struct{}) { close(collected) }, struct{}{})
		z := y.Sum()
		if _, err := z.Item(); err != nil {
			t.Error(err)
		}
		if z.node != nil {
			t.Error("a computed tensor still holds its operation")
		}
	}()
	for range 20 {
		runtime.GC()
		select {
		case <-collected:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("a dropped pending tensor was never collected")
}

func TestErrors(t *testing.T) {
	d := newDevice(t)
	x := d.FromFloat32s(make([]float32, 6), 2, 3)
	y := d.FromFloat32s(make([]float32, 4), 4)
	bad := x.Add(y)
	err := bad.Err()
	if err == nil || !strings.Contains(err.Error(), "add of float32[2 3], float32[4]") || !strings.Contains(err.Error(), "cache_test.go:") {
		t.Fatalf("a broadcast mistake: %v; want the operator, both shapes and this file's line", err)
	}
	later := bad.Relu().MatMul(x)
	if _, err2 := later.Float32s(); !errors.Is(err2, err) && (err2 == nil || err2.Error() != err.Error()) {
		t.Fatalf("the barrier of a dependent tensor: %v, want %v", err2, err)
	}
	checks := []struct {
		name string
		t    *Tensor
		want string
	}{
		{"matmul", x.MatMul(x), "matmul of float32[2 3], float32[2 3]"},
		{"axis", x.Softmax(5), "softmax"},
		{"reshape", x.Reshape(4, 2), "reshape"},
		{"nil operand", x.Add(nil), "operand 1 is nil"},
		{"nil receiver", (*Tensor)(nil).Exp(), "exp of a nil tensor"},
		{"zero tensor", x.Add(&Tensor{}), "zero Tensor"},
		{"other device", x.Add(newDevice(t).FromFloat32s(make([]float32, 6), 2, 3)), "another device"},
		{"data", d.From([]float32{1, 2, 3}, 2, 2), "needs 4 elements"},
		{"data type", d.From([]string{"a"}, 1), "[]string"},
		{"negative", d.From([]float32{}, -1), "out of range"},
		{"broadcast", x.BroadcastTo(-2, 3), "broadcast_to"},
		{"concat", Concat(0), "concat of a nil tensor"},
		{"unknown op", Op("frobnicate", fusion.Attrs{}, x), "unknown operator"},
	}
	for _, c := range checks {
		if err := c.t.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
		if _, err := c.t.Data(); err == nil {
			t.Errorf("%s: Data gave no error", c.name)
		}
		_ = c.t.String() // prints the error, never panics
	}
	if _, err := x.Cast(ast.Int32).Float32s(); err == nil || !strings.Contains(err.Error(), "int32") {
		t.Errorf("Float32s of int32: %v", err)
	}
	if _, err := x.Item(); err == nil || !strings.Contains(err.Error(), "6 elements") {
		t.Errorf("Item of 6 elements: %v", err)
	}
	// an index out of range is the kernel's, reported by the barrier
	idx := d.From([]int64{0, 7}, 2)
	if _, err := x.Gather(idx, 1).Data(); err == nil {
		t.Error("gather out of range gave no error")
	}
	if err := Sync(x, nil); err == nil {
		t.Error("Sync of nil gave no error")
	}
	var zero Device
	if err := zero.Sync(x); err == nil {
		t.Error("a zero Device's Sync gave no error")
	}
	closed := newDevice(t)
	p := closed.FromFloat32s([]float32{1}, 1).Exp()
	done := closed.FromFloat32s([]float32{2}, 1).Neg()
	if _, err := done.Data(); err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if _, err := p.Data(); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	if v, err := done.Item(); err != nil || v != -2 {
		t.Errorf("a tensor computed before Close: %v, %v; want -2", v, err)
	}
}

// TestConcurrentUse: goroutines running the same block on one device get
// the results of a lone call.
func TestConcurrentUse(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	wq, wout, in := randomFloats(r, 16*48), randomFloats(r, 16*16), randomFloats(r, 5*16)
	ref := newDevice(t)
	want, err := attention(ref, ref.From(in, 5, 16), ref.Weight(wq, 16, 48), ref.Weight(wout, 16, 16), 4).Float32s()
	if err != nil {
		t.Fatal(err)
	}
	// a fresh device: the goroutines meet in the first compilation too,
	// and share tensors being computed
	d := newDevice(t)
	wqkv, wo := d.Weight(wq, 16, 48), d.Weight(wout, 16, 16)
	shared := attention(d, d.From(in, 5, 16), wqkv, wo, 4)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5 {
				y := shared
				if i > 0 {
					y = attention(d, d.From(in, 5, 16), wqkv, wo, 4)
				}
				got, err := y.Float32s()
				if err != nil {
					t.Error(g, err)
					return
				}
				if i, ok := sameData(got, want); !ok {
					t.Errorf("goroutine %d: element %d differs", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDynamicCompilesOncePerBucket: with the sequence axis marked, the
// first compilation is already symbolic, and other lengths of its bucket
// compile nothing; every result is the block's (attentionRef).
func TestDynamicCompilesOncePerBucket(t *testing.T) {
	d := newDevice(t)
	r := rand.New(rand.NewPCG(7, 8))
	wq, wo := randomFloats(r, 16*48), randomFloats(r, 16*16)
	wqkv, wout := d.Weight(wq, 16, 48), d.Weight(wo, 16, 16)
	// at length 8 the model's width, 16, is twice the length: a guess
	// the first compilation must take back
	for i, s := range []int{8, 5, 7, 3, 8} {
		in := randomFloats(r, s*16)
		got, err := attention(d, d.From(in, s, 16).Dynamic(0), wqkv, wout, 4).Float32s()
		if err != nil {
			t.Fatalf("length %d: %v", s, err)
		}
		sameAsRef(t, got, in, s, wq, wo)
		st := d.Stats()
		want1 := int64(1) // 8, 5 and 7 share the bucket (4, 8]
		if i >= 3 {
			want1 = 2 // 3 is in (2, 4]
		}
		if st.Misses != want1 || st.Symbolic != want1 {
			t.Fatalf("after length %d: %v; want %d misses, all symbolic", s, st, want1)
		}
	}
	if err := d.From([]float32{1}, 1).Exp().Dynamic(0).Err(); err == nil {
		t.Error("Dynamic of a pending tensor gave no error")
	}
	if err := d.From([]float32{1}, 1).Dynamic(1).Err(); err == nil {
		t.Error("Dynamic of an axis out of range gave no error")
	}
}

// TestDevicesOfTwoThreadCounts: each device's barrier runs on its own
// thread count, whichever device ran last.
func TestDevicesOfTwoThreadCounts(t *testing.T) {
	one := newDevice(t)
	two, err := NewDevice(Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer two.Close()
	for _, d := range []*Device{one, two, one} {
		if _, err := d.FromFloat32s([]float32{1, 2}, 2).Exp().Sum().Item(); err != nil {
			t.Fatal(err)
		}
		if n, err := native.Threads(); err != nil || n != d.Threads() {
			t.Fatalf("after a barrier of a device of %d threads the runtime has %d (%v)", d.Threads(), n, err)
		}
	}
}

// TestSyncWithNoTensors: Sync with none computes every pending tensor the
// program holds, in one trace; the package's Sync does so on the Default
// device.
func TestSyncWithNoTensors(t *testing.T) {
	d := newDevice(t)
	x := d.FromFloat32s([]float32{1, 2, 3}, 3)
	y := x.Exp()
	z := y.Sum()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	if y.Pending() || z.Pending() {
		t.Fatal("Sync() left a held tensor pending")
	}
	if st := d.Stats(); st.Traces != 1 {
		t.Errorf("%d traces, want 1", st.Traces)
	}
	if v, err := z.Item(); err != nil || !close64(v, math.E+math.Exp(2)+math.Exp(3)) {
		t.Errorf("sum: %v, %v", v, err)
	}
	if err := d.Sync(); err != nil { // nothing left
		t.Fatal(err)
	}
	w := FromFloat32s([]float32{4}, 1).Sqrt()
	if err := Sync(); err != nil {
		t.Fatal(err)
	}
	if w.Pending() {
		t.Error("the package's Sync() left a tensor of the Default device pending")
	}
}
