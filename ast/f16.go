package ast

import "math"

// Half-precision formats: the number of fraction bits and the exponent range
// of normal numbers (value = 1.fraction × 2^e, emin <= e <= emax).
type floatFormat struct {
	frac, emin, emax int
}

var (
	float16Format  = floatFormat{frac: 10, emin: -14, emax: 15}
	bfloat16Format = floatFormat{frac: 7, emin: -126, emax: 127}
)

// round returns v rounded to the nearest value of the format, ties to even,
// with overflow to ±Inf and gradual underflow.
func (f floatFormat) round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	_, exp := math.Frexp(v) // v = fr × 2^exp, 0.5 <= |fr| < 1
	e := exp - 1
	if e < f.emin {
		e = f.emin // subnormal: the quantum stops shrinking
	}
	quantum := math.Ldexp(1, e-f.frac)
	r := math.RoundToEven(v/quantum) * quantum
	if math.Abs(r) >= math.Ldexp(1, f.emax+1) {
		return math.Copysign(math.Inf(1), v)
	}
	return r
}

// bits returns the encoding of v, which must already be a value of the
// format (see round).
func (f floatFormat) bits(v float64) uint16 {
	expBits := 15 - f.frac
	bias := f.emax
	var sign uint16
	if math.Signbit(v) {
		sign = 1 << 15
	}
	switch {
	case math.IsNaN(v):
		return 0x7fff
	case math.IsInf(v, 0):
		return sign | uint16((1<<expBits-1)<<f.frac)
	case v == 0:
		return sign
	}
	a := math.Abs(v)
	_, exp := math.Frexp(a)
	e := exp - 1
	if e < f.emin { // subnormal
		return sign | uint16(a/math.Ldexp(1, f.emin-f.frac))
	}
	mant := uint16(a/math.Ldexp(1, e-f.frac)) & (1<<f.frac - 1)
	return sign | uint16(e+bias)<<f.frac | mant
}

// value decodes an encoding of the format.
func (f floatFormat) value(b uint16) float64 {
	expBits := 15 - f.frac
	bias := f.emax
	sign := 1.0
	if b&(1<<15) != 0 {
		sign = -1
	}
	e := int(b>>f.frac) & (1<<expBits - 1)
	mant := float64(b & (1<<f.frac - 1))
	switch e {
	case 0:
		return sign * mant * math.Ldexp(1, f.emin-f.frac)
	case 1<<expBits - 1:
		if mant != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * (1 + mant/math.Ldexp(1, f.frac)) * math.Ldexp(1, e-bias)
}

// roundFloat rounds v to the precision of float type t.
func roundFloat(t DType, v float64) float64 {
	switch t {
	case Float32:
		return float64(float32(v))
	case Float16:
		return float16Format.round(v)
	case BFloat16:
		return bfloat16Format.round(v)
	}
	return v
}

// Float16Bits returns the IEEE 754 binary16 encoding of v rounded to the
// nearest float16 (ties to even). Buffers of type Float16 hold such
// encodings as uint16.
func Float16Bits(v float64) uint16 { return float16Format.bits(float16Format.round(v)) }

// Float16Value returns the value of the binary16 encoding b.
func Float16Value(b uint16) float64 { return float16Format.value(b) }

// BFloat16Bits returns the bfloat16 encoding of v rounded to the nearest
// bfloat16 (ties to even). Buffers of type BFloat16 hold such encodings as
// uint16.
func BFloat16Bits(v float64) uint16 { return bfloat16Format.bits(bfloat16Format.round(v)) }

// BFloat16Value returns the value of the bfloat16 encoding b.
func BFloat16Value(b uint16) float64 { return bfloat16Format.value(b) }
