package llvm

import (
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
	"github.com/loom-go/loom/ast"
)

// Conversions between types, and the 16-bit float formats.
//
// float16 and bfloat16 values live in float registers; every operation on
// them computes in float and rounds the result back to their precision.
// That gives the interpreter's result (which computes in float64 and rounds
// once): float carries more than twice their precision plus two bits, so
// rounding twice is the same as rounding once for + - * / and sqrt.

// cast converts x from type from to type to.
func (e *emitter) cast(to, from ast.DType, x lanes) lanes {
	if to == from {
		return x
	}
	rt := regType(to)
	conv := func(v value.Value) value.Value {
		n := lanesOf(v.Type())
		vt := withLanes(rt, n)
		switch {
		case to == ast.Bool:
			if from.IsFloat() {
				return e.fcmp(enum.FPredUNE, v, kf(v.Type(), 0))
			}
			return e.icmp(enum.IPredNE, v, ki(v.Type(), 0))
		case to.IsInt():
			switch {
			case from == ast.Bool:
				return e.b.NewZExt(v, vt)
			case from.IsFloat(): // saturating, NaN to 0, as the interpreter
				return e.b.NewCall(e.intrinsic("llvm.fptosi.sat."+mangle(vt)+"."+mangle(v.Type()), vt, v.Type()), v)
			case to.Bits() > from.Bits():
				return e.b.NewSExt(v, vt)
			}
			return e.b.NewTrunc(v, vt)
		}
		// to a float type
		switch {
		case from == ast.Bool:
			return e.b.NewUIToFP(v, vt)
		case from.IsInt():
			if to == ast.Float16 || to == ast.BFloat16 {
				return e.roundFromDouble(to, e.b.NewSIToFP(v, withLanes(types.Double, n)))
			}
			return e.b.NewSIToFP(v, vt)
		case from == ast.Float64: // to a narrower type
			if to == ast.Float32 {
				return e.b.NewFPTrunc(v, vt)
			}
			return e.roundFromDouble(to, v)
		case to == ast.Float64:
			return e.b.NewFPExt(v, vt)
		case to == ast.Float32: // from float16 or bfloat16: exact
			return v
		}
		// float32, float16 or bfloat16 to float16 or bfloat16
		return e.roundHalf(to, v)
	}
	return e.apply1(x, conv)
}

// round rounds a float result computed in float to the precision of type
// t when t is float16 or bfloat16.
func (e *emitter) round(t ast.DType, x lanes) lanes {
	if t != ast.Float16 && t != ast.BFloat16 {
		return x
	}
	return e.apply1(x, func(v value.Value) value.Value { return e.roundHalf(t, v) })
}

// roundHalf rounds float v (or a vector) to the nearest float16 or
// bfloat16, ties to even, and returns it as a float.
func (e *emitter) roundHalf(t ast.DType, v value.Value) value.Value {
	return e.fromHalfBits(t, e.toHalfBits(t, v))
}

// roundFromDouble rounds double v to float16 or bfloat16 once: it narrows
// to float rounding to odd (so that the second rounding cannot land on a
// tie the first one made), then rounds to the 16-bit format.
func (e *emitter) roundFromDouble(t ast.DType, v value.Value) value.Value {
	ft := withLanes(types.Float, lanesOf(v.Type()))
	name := "loom.round_to_odd." + mangle(v.Type())
	f := e.helper(name, ft, []types.Type{v.Type()}, func(a []value.Value) value.Value {
		x := a[0]
		r := e.b.NewFPTrunc(x, ft)
		back := e.b.NewFPExt(r, x.Type())
		inexact := e.fcmp(enum.FPredONE, back, x)
		away := e.b.NewAnd(inexact, e.fcmp(enum.FPredOGT, e.callIntrinsic("llvm.fabs", back), e.callIntrinsic("llvm.fabs", x)))
		it := e.intType(ft)
		bits := e.bitsOf(r)
		bits = e.b.NewSub(bits, e.b.NewZExt(away, it))
		bits = e.b.NewOr(bits, e.b.NewZExt(inexact, it))
		return e.floatOf(bits, ft)
	})
	return e.roundHalf(t, e.b.NewCall(f, v))
}

// toHalfBits returns the float16 or bfloat16 encoding (i16) nearest to
// float v.
func (e *emitter) toHalfBits(t ast.DType, v value.Value) value.Value {
	n := lanesOf(v.Type())
	i16, i32t := withLanes(types.I16, n), withLanes(types.I32, n)
	name := "loom.f32_to_f16." + mangle(v.Type())
	if t == ast.BFloat16 {
		name = "loom.f32_to_bf16." + mangle(v.Type())
	}
	f := e.helper(name, i16, []types.Type{v.Type()}, func(a []value.Value) value.Value {
		u := e.bitsOf(a[0])
		mag := e.b.NewAnd(u, ki(i32t, 0x7fffffff))
		isNaN := e.icmp(enum.IPredUGT, mag, ki(i32t, 0x7f800000))
		if t == ast.BFloat16 {
			// Round to nearest even on the upper 16 bits; NaN stays NaN.
			lsb := e.b.NewAnd(e.b.NewLShr(u, ki(i32t, 16)), ki(i32t, 1))
			var r value.Value = e.b.NewAdd(e.b.NewAdd(u, ki(i32t, 0x7fff)), lsb)
			r = e.sel(isNaN, e.b.NewOr(u, ki(i32t, 0x400000)), r)
			return e.b.NewTrunc(e.b.NewLShr(r, ki(i32t, 16)), i16)
		}
		sign := e.b.NewAnd(e.b.NewLShr(u, ki(i32t, 16)), ki(i32t, 0x8000))
		// Normal: drop 13 fraction bits, rounding to nearest even, and
		// rebias the exponent from 127 to 15.
		lsb := e.b.NewAnd(e.b.NewLShr(mag, ki(i32t, 13)), ki(i32t, 1))
		r := e.b.NewAdd(e.b.NewAdd(mag, ki(i32t, 0xfff)), lsb)
		var normal value.Value = e.b.NewSub(e.b.NewLShr(r, ki(i32t, 13)), ki(i32t, (127-15)<<10))
		normal = e.sel(e.icmp(enum.IPredUGE, r, ki(i32t, 0x47800000)), ki(i32t, 0x7c00), normal)
		// Below the smallest normal float16: adding 0.5 rounds to a
		// multiple of 2^-24, the float16 subnormal step, and the bits above
		// 0.5's are the encoding.
		ft := withLanes(types.Float, n)
		sub := e.b.NewSub(e.bitsOf(e.fadd(e.floatOf(mag, ft), kf(ft, 0.5))), ki(i32t, 0x3f000000))
		h := e.sel(e.icmp(enum.IPredULT, mag, ki(i32t, 0x38800000)), sub, normal)
		h = e.sel(isNaN, ki(i32t, 0x7e00), h)
		return e.b.NewTrunc(e.b.NewOr(h, sign), i16)
	})
	return e.b.NewCall(f, v)
}

// fromHalfBits returns the float value of float16 or bfloat16 encodings.
func (e *emitter) fromHalfBits(t ast.DType, h value.Value) value.Value {
	n := lanesOf(h.Type())
	i32t, ft := withLanes(types.I32, n), withLanes(types.Float, n)
	if t == ast.BFloat16 {
		return e.floatOf(e.b.NewShl(e.b.NewZExt(h, i32t), ki(i32t, 16)), ft)
	}
	f := e.helper("loom.f16_to_f32."+mangle(h.Type()), ft, []types.Type{h.Type()}, func(a []value.Value) value.Value {
		u := e.b.NewZExt(a[0], i32t)
		sign := e.b.NewShl(e.b.NewAnd(u, ki(i32t, 0x8000)), ki(i32t, 16))
		exp := e.b.NewAnd(e.b.NewLShr(u, ki(i32t, 10)), ki(i32t, 0x1f))
		frac := e.b.NewAnd(u, ki(i32t, 0x3ff))
		normal := e.b.NewOr(e.b.NewShl(e.b.NewAdd(exp, ki(i32t, 127-15)), ki(i32t, 23)), e.b.NewShl(frac, ki(i32t, 13)))
		special := e.b.NewOr(ki(i32t, 0x7f800000), e.b.NewShl(frac, ki(i32t, 13)))
		sub := e.bitsOf(e.fmul(e.b.NewUIToFP(frac, ft), kf(ft, 1.0/(1<<24))))
		bits := e.sel(e.icmp(enum.IPredEQ, exp, ki(i32t, 0)), sub, e.sel(e.icmp(enum.IPredEQ, exp, ki(i32t, 31)), special, normal))
		return e.floatOf(e.b.NewOr(bits, sign), ft)
	})
	return e.b.NewCall(f, h)
}

// fromMem converts a loaded element (or vector) to its register form.
func (e *emitter) fromMem(t ast.DType, v value.Value) value.Value {
	switch t {
	case ast.Bool:
		return e.icmp(enum.IPredNE, v, ki(v.Type(), 0))
	case ast.Float16, ast.BFloat16:
		return e.fromHalfBits(t, v)
	}
	return v
}

// toMem converts a register value (or vector) to its memory form.
func (e *emitter) toMem(t ast.DType, v value.Value) value.Value {
	n := lanesOf(v.Type())
	switch t {
	case ast.Bool:
		return e.b.NewZExt(v, withLanes(types.I8, n))
	case ast.Float16, ast.BFloat16:
		return e.toHalfBits(t, v)
	}
	return v
}
