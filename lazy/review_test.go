package lazy

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
)

// Regressions of a hostile review: each was a crash, a wrong result or a
// silent wrap.

// TestCloseWhileSyncing: Close waits for the barriers running; the
// others get ErrClosed, and the process does not crash.
func TestCloseWhileSyncing(t *testing.T) {
	d := newDevice(t)
	in := make([]float32, 64*64)
	w := d.Weight(in, 64, 64)
	if _, err := d.From(in, 64, 64).MatMul(w).Tanh().Sum().Item(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range 200 {
				if _, err := d.From(in, 64, 64).MatMul(w).Tanh().Sum().Item(); err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Error(err)
					}
					return
				}
			}
		})
	}
	time.Sleep(2 * time.Millisecond)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

// TestSliceOfAShortLength: x[6:] at lengths 7, 8 and then 5 (no rows):
// the symbolic module of 7 and 8 would make S - 6 = -1 rows at 5; the
// trace is compiled for its own length instead.
func TestSliceOfAShortLength(t *testing.T) {
	for _, marked := range []bool{false, true} {
		d := newDevice(t)
		for _, n := range []int{7, 8, 5, 6, 7} {
			data := make([]float32, n*2)
			for i := range data {
				data[i] = float32(i)
			}
			x := d.From(data, n, 2)
			if marked {
				x = x.Dynamic(0)
			}
			y := x.Slice([]int{0}, []int{6}, []int{n}, nil).Neg()
			got, err := y.Float32s()
			if err != nil {
				t.Fatalf("length %d (marked %v): %v", n, marked, err)
			}
			var want []float32
			for i := 6 * 2; i < n*2; i++ {
				want = append(want, -float32(i))
			}
			if i, ok := sameData(got, want); !ok || len(got) != len(want) {
				t.Fatalf("length %d (marked %v): %v, want %v (element %d)", n, marked, got, want, i)
			}
		}
		if st := d.Stats(); st.Traces != st.Hits+st.Misses {
			t.Errorf("stats: %v: traces are not hits plus misses", st)
		}
	}
}

func TestReviewedErrors(t *testing.T) {
	d := newDevice(t)
	checks := []struct {
		name string
		t    *Tensor
		want string
	}{
		{"huge broadcast", d.Full(ast.Float32, 1, 1<<40, 1<<40), "out of range"},
		{"huge product", d.Full(ast.Float32, 1, 1<<30, 1<<30, 4), "2^40"},
		{"int32 scalar", d.ScalarOf(ast.Int32, 3e9), "out of range"},
		{"int32 infinity", d.ScalarOf(ast.Int32, math.Inf(1)), "whole number"},
		{"int64 scalar", d.ScalarOf(ast.Int64, 1e30), "out of range"},
		{"int add", d.From([]int32{1}, 1).AddScalar(3e9), "out of range"},
		{"float32 scalar", d.ScalarOf(ast.Float32, 1e300), "float32"},
		{"epsilon", d.FromFloat32s([]float32{1, 2}, 2).LayerNorm(nil, nil, -1, math.NaN()), "epsilon"},
		{"pad value", d.FromFloat32s([]float32{1, 2}, 2).Pad([]int{1, 1}, math.Inf(-1)), "finite"},
		{"leaf order", d.From([]float32{}, 1<<30, 1<<30, 0), ""},
	}
	for _, c := range checks {
		err := c.t.Err()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if err := d.From([]float32{}, 0, 1<<30, 1<<30).Err(); err != nil {
		t.Errorf("a zero dimension first: %v", err)
	}
	// a scalar's reduction over all (no) axes is itself
	if v, err := d.Scalar(2.5).Sum().Item(); err != nil || v != 2.5 {
		t.Errorf("sum of a scalar: %v, %v", v, err)
	}
	// float16 results read as numbers
	if v, err := d.FromFloat32s([]float32{1.5, -2}, 2).Cast(ast.Float16).Sum().Item(); err != nil || v != -0.5 {
		t.Errorf("Item of float16: %v, %v; want -0.5", v, err)
	}
	// nil receivers: errors, never panics
	var nt *Tensor
	var nd *Device
	if nt.Err() == nil || nt.Shape() != nil || nt.Pending() || nt.Rank() != 0 || nt.Len() != 0 {
		t.Error("a nil tensor's accessors")
	}
	if _, err := nt.Data(); err == nil {
		t.Error("Data of nil")
	}
	if _, err := nt.Float32s(); err == nil {
		t.Error("Float32s of nil")
	}
	if _, err := nt.Item(); err == nil {
		t.Error("Item of nil")
	}
	if nt.Conv(nt, ConvOptions{}).Err() == nil || nt.String() != "lazy.Tensor(nil)" {
		t.Error("Conv or String of nil")
	}
	if nd.Sync() == nil || nd.Close() != nil || nd.From([]float32{1}, 1).Err() == nil || nd.Stats() != (Stats{}) {
		t.Error("a nil device")
	}
}
