package ast

import "math"

// Const is a typed constant. Integer and boolean values are held in Int
// (0 or 1 for Bool); floating-point values are held in Float, already rounded
// to the precision of DType, so a float32 constant always holds a value that
// float32 can represent exactly.
type Const struct {
	DType DType
	Int   int64
	Float float64
}

// Type returns c.DType.
func (c *Const) Type() DType { return c.DType }

// IntConst returns an integer constant of type t (Int32 or Int64). The value
// is not range-checked here; [Verify] rejects an int32 constant out of range.
func IntConst(t DType, v int64) *Const { return &Const{DType: t, Int: v} }

// FloatConst returns a floating-point constant of type t, rounding v to the
// precision of t.
func FloatConst(t DType, v float64) *Const { return &Const{DType: t, Float: roundFloat(t, v)} }

// BoolConst returns the constant true or false.
func BoolConst(v bool) *Const {
	if v {
		return &Const{DType: Bool, Int: 1}
	}
	return &Const{DType: Bool}
}

// I32 returns the int32 constant v.
func I32(v int32) *Const { return IntConst(Int32, int64(v)) }

// I64 returns the int64 constant v.
func I64(v int64) *Const { return IntConst(Int64, v) }

// F32 returns the float32 constant v.
func F32(v float32) *Const { return FloatConst(Float32, float64(v)) }

// F64 returns the float64 constant v.
func F64(v float64) *Const { return FloatConst(Float64, v) }

// Zero returns the constant 0 (or false) of type t.
func Zero(t DType) *Const {
	if t.IsFloat() {
		return FloatConst(t, 0)
	}
	return &Const{DType: t}
}

// One returns the constant 1 (or true) of type t.
func One(t DType) *Const {
	if t.IsFloat() {
		return FloatConst(t, 1)
	}
	return &Const{DType: t, Int: 1}
}

// ConstOf returns the constant of type t nearest to v: v truncated toward
// zero for integer types, v != 0 for Bool, v rounded for float types.
func ConstOf(t DType, v float64) *Const {
	switch {
	case t.IsFloat():
		return FloatConst(t, v)
	case t == Bool:
		return BoolConst(v != 0)
	default:
		return IntConst(t, floatToInt(t, v))
	}
}

// IsConstInt reports whether e is an integer constant equal to v.
func IsConstInt(e Expr, v int64) bool {
	c, ok := e.(*Const)
	return ok && c.DType.IsInt() && c.Int == v
}

// ConstIntValue returns the value of e if it is an integer constant.
func ConstIntValue(e Expr) (int64, bool) {
	c, ok := e.(*Const)
	if !ok || !c.DType.IsInt() {
		return 0, false
	}
	return c.Int, true
}

// intRange returns the smallest and largest value of integer type t.
func intRange(t DType) (lo, hi int64) {
	if t == Int32 {
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// wrapInt reduces v to the range of integer type t by two's-complement
// wrap-around, as the generated code does.
func wrapInt(t DType, v int64) int64 {
	if t == Int32 {
		return int64(int32(v))
	}
	return v
}

// floatToInt converts v to integer type t the way the interpreter defines a
// float-to-int cast: truncation toward zero, saturating at the type's range,
// NaN giving 0.
func floatToInt(t DType, v float64) int64 {
	lo, hi := intRange(t)
	switch {
	case math.IsNaN(v):
		return 0
	case v <= float64(lo):
		return lo
	case v >= float64(hi):
		return hi
	}
	return int64(v)
}
