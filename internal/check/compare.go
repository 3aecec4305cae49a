package check

import (
	"math"

	"github.com/loom-go/loom/ast"
)

// MaxRelErr returns the largest difference between two buffers' data (Go
// slices of one element type), element by element, relative to the
// expected value's magnitude or to 1 if that is smaller: a relative error
// for large values, an absolute one for values near zero (where the sums of
// values in [-1, 1) that the workloads compute cancel). NaN matches NaN.
// Integer and bool data must match exactly: any difference is +Inf, as is
// a difference in type or length.
func MaxRelErr(got, want any) float64 {
	worst := 0.0
	floats := func(g, w float64) {
		if math.IsNaN(g) && math.IsNaN(w) || g == w {
			return
		}
		d := math.Abs(g-w) / math.Max(1, math.Abs(w))
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		worst = math.Max(worst, d)
	}
	switch w := want.(type) {
	case []float32:
		g, ok := got.([]float32)
		if !ok || len(g) != len(w) {
			return math.Inf(1)
		}
		for i := range w {
			floats(float64(g[i]), float64(w[i]))
		}
	case []float64:
		g, ok := got.([]float64)
		if !ok || len(g) != len(w) {
			return math.Inf(1)
		}
		for i := range w {
			floats(g[i], w[i])
		}
	case []uint16: // float16 encodings
		g, ok := got.([]uint16)
		if !ok || len(g) != len(w) {
			return math.Inf(1)
		}
		for i := range w {
			floats(ast.Float16Value(g[i]), ast.Float16Value(w[i]))
		}
	case []int32:
		return exact(got, w)
	case []int64:
		return exact(got, w)
	case []bool:
		return exact(got, w)
	default:
		return math.Inf(1)
	}
	return worst
}

// MaxScaledErr is the largest difference between got and want, element
// by element, relative to the largest magnitude in want (or to 1 if that
// is smaller): the measure for results that sum long chains of
// reductions (a network's layers), where an element near zero is the
// small remainder of large terms that cancel, and its rounding error is
// that of the terms, not of itself. A wrong element (a term dropped, a
// value from the wrong place) is off by the size of a term, far more
// than rounding. NaN matches NaN; data other than float32 and float64 is
// MaxRelErr's.
func MaxScaledErr(got, want any) float64 {
	scaled := func(g, w []float64) float64 {
		if len(g) != len(w) {
			return math.Inf(1)
		}
		scale, worst := 1.0, 0.0
		for i := range w {
			if !math.IsNaN(w[i]) && !math.IsInf(w[i], 0) {
				scale = math.Max(scale, math.Abs(w[i]))
			}
		}
		for i := range w {
			if g[i] == w[i] || math.IsNaN(g[i]) && math.IsNaN(w[i]) {
				continue
			}
			d := math.Abs(g[i] - w[i])
			if math.IsNaN(d) {
				return math.Inf(1)
			}
			worst = math.Max(worst, d/scale)
		}
		return worst
	}
	widen := func(v []float32) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	switch w := want.(type) {
	case []float32:
		g, ok := got.([]float32)
		if !ok {
			return math.Inf(1)
		}
		return scaled(widen(g), widen(w))
	case []float64:
		g, ok := got.([]float64)
		if !ok {
			return math.Inf(1)
		}
		return scaled(g, w)
	}
	return MaxRelErr(got, want)
}

// NormRelErr is the error of got against want, data of type t, over the
// whole data, in the 2-norm: ‖got − want‖ / max(‖want‖, 1). NaN anywhere
// in got where want has none, or data of another type or length, is
// +Inf; integer and boolean data compare exactly (0 or +Inf). 16-bit
// float data is its encodings, float16 or bfloat16 as t says.
func NormRelErr(t ast.DType, got, want any) float64 {
	var diff, norm float64
	add := func(g, w float64) bool {
		if g == w || math.IsNaN(g) && math.IsNaN(w) {
			if !math.IsInf(w, 0) && !math.IsNaN(w) {
				norm += w * w
			}
			return true
		}
		d := g - w
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return false
		}
		diff += d * d
		norm += w * w
		return true
	}
	each := func(n int, at func(i int) (float64, float64)) float64 {
		for i := range n {
			if !add(at(i)) {
				return math.Inf(1)
			}
		}
		return math.Sqrt(diff) / math.Max(math.Sqrt(norm), 1)
	}
	switch w := want.(type) {
	case []float32:
		g, ok := got.([]float32)
		if !ok || len(g) != len(w) {
			return math.Inf(1)
		}
		return each(len(w), func(i int) (float64, float64) { return float64(g[i]), float64(w[i]) })
	case []float64:
		g, ok := got.([]float64)
		if !ok || len(g) != len(w) {
			return math.Inf(1)
		}
		return each(len(w), func(i int) (float64, float64) { return g[i], w[i] })
	case []uint16:
		g, ok := got.([]uint16)
		if !ok || len(g) != len(w) {
			return math.Inf(1)
		}
		value := ast.Float16Value
		if t == ast.BFloat16 {
			value = ast.BFloat16Value
		}
		return each(len(w), func(i int) (float64, float64) { return value(g[i]), value(w[i]) })
	}
	return MaxRelErr(got, want)
}

func exact[T comparable](got any, want []T) float64 {
	g, ok := got.([]T)
	if !ok || len(g) != len(want) {
		return math.Inf(1)
	}
	for i := range want {
		if g[i] != want[i] {
			return math.Inf(1)
		}
	}
	return 0
}

// Tolerance is the largest MaxRelErr accepted between the interpreter and
// a schedule or kernel of the same function, for each float type: a few
// roundings of difference, from operations fused or reordered.
func Tolerance(t ast.DType) float64 {
	switch t {
	case ast.Float64:
		return 1e-9
	case ast.Float16, ast.BFloat16:
		return 1e-2
	}
	return 1e-5
}
