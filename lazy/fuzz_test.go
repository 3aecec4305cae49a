package lazy

import (
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// FuzzRecord records operations with attributes and operand shapes drawn
// from the fuzzer's bytes: every mistake must be a tensor's error, never
// a panic, and a trace without errors must build its graph, at its sizes
// and under the patterns its sizes suggest.
func FuzzRecord(f *testing.F) {
	f.Add([]byte{0, 2, 3, 1, 5, 7, 2, 1, 9, 4})
	f.Add([]byte{3, 1, 1, 4, 0, 0, 8, 2, 2, 6, 1, 255, 128})
	f.Add([]byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9})
	f.Add([]byte{})
	ops := []string{"add", "matmul", "reshape", "transpose", "slice", "softmax", "reduce_sum", "concat", "gather", "conv2d", "max_pool2d", "pad", "broadcast_to", "layernorm", "cast", "where", "iota", "frobnicate"}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := NewDevice(Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return int(int8(b))
		}
		small := func() int { return next() % 5 }
		shape := func() []int {
			s := make([]int, (next()&3)+1)
			for i := range s {
				s[i] = small()
			}
			return s
		}
		ints := func() []int {
			s := make([]int, next()&3)
			for i := range s {
				s[i] = small()
			}
			return s
		}
		pool := []*Tensor{}
		for range 2 {
			s := shape()
			n := 1
			for _, v := range s {
				n *= max(v, 0)
			}
			pool = append(pool, d.From(make([]float32, n), s...).Dynamic(0))
		}
		pick := func() *Tensor { return pool[(next()&0x7f)%len(pool)] }
		for range 6 {
			a := fusion.Attrs{Axes: ints(), Perm: ints(), Starts: ints64(ints()), Ends: ints64(ints()), Strides: ints64(ints()), Pads: ints64(ints()), KernelShape: ints64(ints())}
			if next()&1 == 1 {
				a.Axis = intPtr(small())
			}
			op := ops[(next()&0x7f)%len(ops)]
			switch op {
			case "reshape", "broadcast_to":
				a.Shape = jsonDims(shape())
			case "cast":
				a.DType = []string{"int32", "float64", "bool", "nonsense"}[next()&3]
			case "iota":
				a.DType = ast.Int64.String()
			}
			pool = append(pool, Op(op, a, pick(), pick()))
			pool = append(pool, pick().Reshape(shape()...), pick().Slice(ints(), ints(), ints(), nil))
		}
		var ok []*Tensor
		for _, t := range pool {
			_ = t.Err()
			if t.err == nil && t.node != nil {
				ok = append(ok, t)
			}
		}
		if len(ok) == 0 {
			return
		}
		d.mu.Lock()
		tr, err := d.capture(ok)
		d.mu.Unlock()
		if err != nil {
			return
		}
		if _, err := graphOf(tr, nil); err != nil {
			t.Fatalf("a trace of operations recorded without error does not build: %v", err)
		}
		if p, n, found := markedPattern(tr); found {
			_, _ = graphOf(tr, p) // may refuse; must not panic
			_ = p.accepts(tr.slots, n)
		}
	})
}
