package llvm

import (
	"math"

	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
	"github.com/loom-go/loom/ast"
)

// Math intrinsics.
//
// On float32 (and the 16-bit formats, computed in float32), exp, exp2,
// log, log2, tanh, sigmoid and erf are loom's own branch-free
// implementations (Cephes' polynomials, and a fit of erf's; within 2
// ulp, sigmoid 2.5), so that a vectorized loop calling them stays vectorized; the C
// library has no vector versions LLVM could call. sqrt, abs, floor and
// ceil are LLVM intrinsics that are single instructions. The rest, and
// everything on float64, call the C library (through LLVM intrinsics
// where LLVM has them), lane by lane in vector code.

func (e *emitter) call(x *ast.Call, args []lanes) lanes {
	t := x.Args[0].Type()
	if t.IsInt() { // abs
		return e.apply1(args[0], func(v value.Value) value.Value {
			neg := e.b.NewSub(ki(v.Type(), 0), v)
			return e.sel(e.icmp(enum.IPredSLT, v, ki(v.Type(), 0)), neg, v)
		})
	}
	f := func(v value.Value) value.Value { return e.mathFunc(x.Func, t, v, nil) }
	if len(args) == 2 {
		return e.round(t, e.apply(args[0], args[1], func(v, w value.Value) value.Value { return e.mathFunc(x.Func, t, v, w) }))
	}
	return e.round(t, e.apply1(args[0], f))
}

// mathFunc applies intrinsic fn to v (and w for pow).
func (e *emitter) mathFunc(fn ast.Intrinsic, t ast.DType, v, w value.Value) value.Value {
	single := t != ast.Float64
	switch fn {
	case ast.IntrinsicSqrt:
		return e.callIntrinsic("llvm.sqrt", v)
	case ast.IntrinsicRsqrt:
		return e.fdiv(kf(v.Type(), 1), e.callIntrinsic("llvm.sqrt", v))
	case ast.IntrinsicAbs:
		return e.callIntrinsic("llvm.fabs", v)
	case ast.IntrinsicFloor:
		return e.callIntrinsic("llvm.floor", v)
	case ast.IntrinsicCeil:
		return e.callIntrinsic("llvm.ceil", v)
	case ast.IntrinsicPow:
		return e.callIntrinsic("llvm.pow", v, w)
	case ast.IntrinsicSin:
		return e.callIntrinsic("llvm.sin", v)
	case ast.IntrinsicCos:
		return e.callIntrinsic("llvm.cos", v)
	case ast.IntrinsicErf:
		if single {
			return e.callHelper("loom.erf", v, e.erff)
		}
		return e.perLane("erf", v)
	case ast.IntrinsicExp:
		if single {
			return e.callHelper("loom.exp", v, e.expf)
		}
		return e.callIntrinsic("llvm.exp", v)
	case ast.IntrinsicExp2:
		if single {
			return e.callHelper("loom.exp2", v, e.exp2f)
		}
		return e.callIntrinsic("llvm.exp2", v)
	case ast.IntrinsicLog:
		if single {
			return e.callHelper("loom.log", v, e.logf)
		}
		return e.callIntrinsic("llvm.log", v)
	case ast.IntrinsicLog2:
		if single {
			return e.callHelper("loom.log2", v, func(x value.Value) value.Value {
				return e.fmul(e.b.NewCall(e.mathHelper("loom.log", x.Type(), e.logf), x), kf(x.Type(), math.Log2E))
			})
		}
		return e.callIntrinsic("llvm.log2", v)
	case ast.IntrinsicTanh:
		if single {
			return e.callHelper("loom.tanh", v, e.tanhf)
		}
		return e.perLane("tanh", v)
	case ast.IntrinsicSigmoid:
		exp := func(x value.Value) value.Value { return e.callIntrinsic("llvm.exp", x) }
		if single {
			exp = func(x value.Value) value.Value { return e.b.NewCall(e.mathHelper("loom.exp", x.Type(), e.expf), x) }
		}
		return e.callHelper("loom.sigmoid", v, func(x value.Value) value.Value { return e.sigmoid(x, exp) })
	}
	panic(internalf("intrinsic %v", fn))
}

// callHelper calls the helper name.<type of v> that body defines.
func (e *emitter) callHelper(name string, v value.Value, body func(x value.Value) value.Value) value.Value {
	return e.b.NewCall(e.mathHelper(name, v.Type(), body), v)
}

func (e *emitter) mathHelper(name string, t types.Type, body func(x value.Value) value.Value) value.Value {
	return e.helper(name+"."+mangle(t), t, []types.Type{t}, func(a []value.Value) value.Value { return body(a[0]) })
}

// perLane calls the C library function name (double or float) on each lane.
func (e *emitter) perLane(name string, v value.Value) value.Value {
	st := scalarOf(v.Type())
	f := e.intrinsic(name, st, st)
	n := lanesOf(v.Type())
	if n == 0 {
		return e.b.NewCall(f, v)
	}
	var r value.Value = v
	for i := 0; i < n; i++ {
		r = e.b.NewInsertElement(r, e.b.NewCall(f, e.b.NewExtractElement(v, i32(int64(i)))), i32(int64(i)))
	}
	return r
}

// expf is Cephes' expf: x = n*ln2 + r with |r| <= ln2/2, e^r by a degree-7
// polynomial, and 2^n applied in two halves so that results in the
// subnormal range and overflow to infinity come out right.
func (e *emitter) expf(x value.Value) value.Value {
	t := x.Type()
	c := e.fmin(e.fmax(x, kf(t, -104)), kf(t, 89)) // keeps NaN
	n := e.rint(e.fmul(c, kf(t, math.Log2E)))
	r := e.fsub(c, e.fmul(n, kf(t, 0.693359375)))
	r = e.fsub(r, e.fmul(n, kf(t, -2.12194440e-4)))
	y := e.expPoly(r)
	if e.hasScalef(t) {
		return e.scalef(y, n) // NaN in, NaN out
	}
	y = e.scale2(y, n)
	return e.sel(e.fcmp(enum.FPredUNO, x, x), x, y)
}

// exp2f is 2^x = 2^n * e^(r*ln2) with n = rint(x), r = x - n exact.
func (e *emitter) exp2f(x value.Value) value.Value {
	t := x.Type()
	c := e.fmin(e.fmax(x, kf(t, -151)), kf(t, 129))
	n := e.rint(c)
	r := e.fmul(e.fsub(c, n), kf(t, math.Ln2))
	if e.hasScalef(t) {
		return e.scalef(e.expPoly(r), n)
	}
	y := e.scale2(e.expPoly(r), n)
	return e.sel(e.fcmp(enum.FPredUNO, x, x), x, y)
}

// expPoly returns e^r for |r| <= ln2/2.
func (e *emitter) expPoly(r value.Value) value.Value {
	t := r.Type()
	p := e.poly(r, 1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
	return e.fadd(e.fma(p, e.fmul(r, r), r), kf(t, 1))
}

// scale2 returns y * 2^n for an integral float n in [-151, 129], in two
// steps of normal powers of two.
func (e *emitter) scale2(y, n value.Value) value.Value {
	t := y.Type()
	it := e.intType(t)
	ni := e.b.NewFPToSI(n, it)
	half := e.b.NewAShr(ni, ki(it, 1))
	rest := e.b.NewSub(ni, half)
	pow := func(k value.Value) value.Value {
		return e.floatOf(e.b.NewShl(e.b.NewAdd(k, ki(it, 127)), ki(it, 23)), t)
	}
	return e.fmul(e.fmul(y, pow(half)), pow(rest))
}

// hasScalef reports whether y * 2^n on values of type t is one AVX-512
// instruction (vscalefps on 16 float32 lanes).
func (e *emitter) hasScalef(t types.Type) bool {
	return lanesOf(t) == 16 && scalarOf(t).Equal(types.Float) && e.m.Options.Target.Has("avx512f")
}

// scalef returns y * 2^n for an integral float n by vscalefps, which
// rounds once and gets overflow, the subnormal range and NaN right on its
// own.
func (e *emitter) scalef(y, n value.Value) value.Value {
	t := y.Type()
	f := e.intrinsic("llvm.x86.avx512.mask.scalef.ps.512", t, t, t, t, types.I16, types.I32)
	const allLanes, currentRounding = -1, 4
	return e.b.NewCall(f, y, n, y, ki(types.I16, allLanes), ki(types.I32, currentRounding))
}

// rint rounds to the nearest integer, ties to even, for |x| < 2^22: adding
// and subtracting 1.5*2^23 leaves no fraction bits. (No fast-math flags
// here: they would fold the pair away.)
func (e *emitter) rint(x value.Value) value.Value {
	m := kf(x.Type(), 12582912)
	return e.fsub(e.fadd(x, m), m)
}

// fmin and fmax are ordered: when x is NaN they return x.
func (e *emitter) fmin(x, y value.Value) value.Value {
	return e.sel(e.fcmp(enum.FPredOGT, x, y), y, x)
}

func (e *emitter) fmax(x, y value.Value) value.Value {
	return e.sel(e.fcmp(enum.FPredOLT, x, y), y, x)
}

// logf is Cephes' logf: x = m * 2^k with m in [sqrt(1/2), sqrt(2)), log(m)
// by a degree-9 polynomial in m-1.
func (e *emitter) logf(x value.Value) value.Value {
	t := x.Type()
	it := e.intType(t)
	// Scale subnormals up into the normal range.
	sub := e.fcmp(enum.FPredOLT, x, kf(t, 0x1p-126))
	xs := e.sel(sub, e.fmul(x, kf(t, 0x1p23)), x)
	bias := e.sel(sub, kf(t, -23), kf(t, 0))
	u := e.bitsOf(xs)
	var k value.Value = e.b.NewSIToFP(e.b.NewSub(e.b.NewLShr(u, ki(it, 23)), ki(it, 126)), t)
	m := e.floatOf(e.b.NewOr(e.b.NewAnd(u, ki(it, 0x807fffff)), ki(it, 0x3f000000)), t) // in [0.5, 1)
	small := e.fcmp(enum.FPredOLT, m, kf(t, 0.707106781186547524))
	k = e.fadd(e.fsub(k, e.sel(small, kf(t, 1), kf(t, 0))), bias)
	m = e.fsub(e.sel(small, e.fadd(m, m), m), kf(t, 1))
	z := e.fmul(m, m)
	p := e.poly(m, 7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
		-1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
	y := e.fmul(e.fmul(m, z), p)
	y = e.fma(k, kf(t, -2.12194440e-4), y)
	y = e.fma(z, kf(t, -0.5), y)
	r := e.fma(k, kf(t, 0.693359375), e.fadd(m, y))
	// Special values: log(inf) = inf, log(0) = -inf, log(x<0) = NaN,
	// log(NaN) = NaN.
	r = e.sel(e.fcmp(enum.FPredOEQ, x, kf(t, math.Inf(1))), x, r)
	r = e.sel(e.fcmp(enum.FPredOEQ, x, kf(t, 0)), kf(t, math.Inf(-1)), r)
	return e.sel(e.fcmp(enum.FPredULT, x, kf(t, 0)), kf(t, math.NaN()), r)
}

// tanhf is Cephes' tanhf: an odd polynomial below 0.625, else
// 1 - 2/(e^(2|x|) + 1) with the sign of x.
func (e *emitter) tanhf(x value.Value) value.Value {
	t := x.Type()
	a := e.callIntrinsic("llvm.fabs", x)
	z := e.fmul(x, x)
	p := e.poly(z, -5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)
	small := e.fma(e.fmul(p, z), x, x)
	ex := e.b.NewCall(e.mathHelper("loom.exp", t, e.expf), e.fadd(a, a))
	big := e.fsub(kf(t, 1), e.fdiv(kf(t, 2), e.fadd(ex, kf(t, 1))))
	big = e.callIntrinsic("llvm.copysign", big, x)
	return e.sel(e.fcmp(enum.FPredOLT, a, kf(t, 0.625)), small, big)
}

// erff is erf on float32, branch-free (GELU calls it on every element of
// a matmul's output, which a call to the C library per lane makes several
// times slower than the matmul itself). Below |x| = 1 it is x + x*p(x^2),
// so that the polynomial's rounding errors reach the result scaled down
// by about x*p/erf <= 0.16; from 1 to 3.92 a polynomial in |x| - 2.46
// with the sign of x; above 3.92 erf rounds to +-1 in float32. The
// polynomials interpolate erf(x)/x - 1 (degree 6 in x^2) and erf(x)
// (degree 14) at Chebyshev nodes of their intervals, coefficients rounded
// to float32: within 1.4 ulp over every float32 of [0, 6] with fused
// multiply-adds, 1.6 without.
func (e *emitter) erff(x value.Value) value.Value {
	t := x.Type()
	a := e.callIntrinsic("llvm.fabs", x)
	p := e.poly(e.fmul(x, x), 7.87587487e-05, -8.01686430e-04, 5.18908724e-03, -2.68542115e-02,
		1.12835944e-01, -3.76126260e-01, 1.28379166e-01)
	small := e.fma(x, p, x)
	u := e.fsub(e.fmin(a, kf(t, 3.92)), kf(t, 2.46)) // NaN stays NaN
	q := e.poly(u, 1.09892505e-06, 8.31815541e-08, -1.73639892e-05, 2.47869830e-05, 7.59161048e-05,
		-2.99832114e-04, 3.55779077e-04, 4.59607138e-04, -2.93709175e-03, 6.79937378e-03,
		-9.91420820e-03, 9.83250327e-03, -6.53451821e-03, 2.65623350e-03, 9.99496639e-01)
	big := e.sel(e.fcmp(enum.FPredOGE, a, kf(t, 3.92)), kf(t, 1), q)
	big = e.callIntrinsic("llvm.copysign", big, x)
	return e.sel(e.fcmp(enum.FPredOLT, a, kf(t, 1)), small, big)
}

// sigmoid is 1/(1+e^-x), computed from e^-|x| so that it neither overflows
// nor loses the tiny results of very negative x.
func (e *emitter) sigmoid(x value.Value, exp func(value.Value) value.Value) value.Value {
	t := x.Type()
	ex := exp(e.b.NewFNeg(e.callIntrinsic("llvm.fabs", x)))
	// One division, of 1 or of e^-|x|: e^-|x| * (1/(1+e^-|x|)) would
	// round once more.
	num := e.sel(e.fcmp(enum.FPredUGE, x, kf(t, 0)), kf(t, 1), ex)
	return e.fdiv(num, e.fadd(kf(t, 1), ex))
}
