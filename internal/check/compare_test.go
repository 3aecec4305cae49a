package check

import (
	"math"
	"testing"

	"github.com/loom-go/loom/ast"
)

func TestNormRelErr(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		got, want any
		ok        bool
	}{
		{[]float32{1, 2, 3}, []float32{1, 2, 3}, true},
		{[]float32{1, 2, 3.00001}, []float32{1, 2, 3}, true},
		{[]float32{1, 2, 4}, []float32{1, 2, 3}, false},
		{[]float32{nan, 2, 3}, []float32{1, 2, 3}, false},
		{[]float32{nan}, []float32{nan}, true},
		{[]float32{float32(math.Inf(1)), 1}, []float32{float32(math.Inf(1)), 1}, true},
		{[]float32{float32(math.Inf(1)), 1}, []float32{1, 1}, false},
		{[]float32{1, 2}, []float32{1, 2, 3}, false},
		{[]float64{1e-12, 0}, []float64{0, 0}, true},
		{[]int32{1}, []int32{2}, false},
	} {
		if got := NormRelErr(ast.Float32, c.got, c.want) <= 1e-5; got != c.ok {
			t.Errorf("NormRelErr(%v, %v) = %g", c.got, c.want, NormRelErr(ast.Float32, c.got, c.want))
		}
	}
}

// TestNormRelErrBFloat16: bfloat16 encodings are read as bfloat16, not as
// float16 (whose reading of the same bits hides most of the error).
func TestNormRelErrBFloat16(t *testing.T) {
	one, two := ast.BFloat16Bits(1), ast.BFloat16Bits(2)
	if e := NormRelErr(ast.BFloat16, []uint16{two}, []uint16{one}); math.Abs(e-1) > 1e-9 {
		t.Errorf("bfloat16 2 against 1: %g, want 1", e)
	}
}

// TestMaxScaledErr: differences are measured against the largest
// magnitude of the expected data, so an element that is the small
// remainder of large terms may carry their rounding; a wrong element of
// the size of a term is still far off, and so is a NaN or a length
// mismatch.
func TestMaxScaledErr(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		got, want any
		ok        bool
	}{
		{[]float32{1, 2, 3}, []float32{1, 2, 3}, true},
		{[]float32{358, 0.01 + 1e-4}, []float32{358, 0.01}, true},  // rounding of terms near 358
		{[]float32{358, 0.01 + 0.5}, []float32{358, 0.01}, false},  // a term dropped
		{[]float32{0.5, 0.25 + 1e-4}, []float32{0.5, 0.25}, false}, // scale at least 1
		{[]float32{nan, 2}, []float32{1, 2}, false},
		{[]float32{nan, 2}, []float32{nan, 2}, true},
		{[]float32{1, 2}, []float32{1, 2, 3}, false},
		{[]float64{1e-12, 0}, []float64{0, 0}, true},
		{[]int32{1}, []int32{2}, false},
	} {
		if got := MaxScaledErr(c.got, c.want) <= 1e-5; got != c.ok {
			t.Errorf("MaxScaledErr(%v, %v) = %g", c.got, c.want, MaxScaledErr(c.got, c.want))
		}
	}
}
