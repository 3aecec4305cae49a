package llvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// intrinsic returns the declaration of an LLVM intrinsic or C library
// function, declaring it on first use.
func (e *emitter) intrinsic(name string, ret types.Type, params ...types.Type) *ir.Func {
	if f := e.decl[name]; f != nil {
		return f
	}
	ps := make([]*ir.Param, len(params))
	for i, t := range params {
		ps[i] = ir.NewParam("", t)
	}
	f := e.m.IR.NewFunc(name, ret, ps...)
	e.decl[name] = f
	return f
}

// runtimeFunc declares a function of the C library or of loom's runtime.
func (e *emitter) runtimeFunc(name string) *ir.Func {
	i8p := types.NewPointer(types.I8)
	switch name {
	case "free":
		return e.intrinsic(name, types.Void, i8p)
	case "aligned_alloc":
		return e.intrinsic(name, i8p, types.I64, types.I64)
	case "loom_parallel_for":
		task := types.NewPointer(types.NewFunc(types.Void, i8p, types.I64, types.I64))
		return e.intrinsic(name, types.Void, task, i8p, types.I64, types.I64)
	}
	panic(internalf("unknown runtime function %s", name))
}

// callIntrinsic calls the overloaded LLVM intrinsic base.<type of first
// argument>, returning that type.
func (e *emitter) callIntrinsic(base string, args ...value.Value) value.Value {
	t := args[0].Type()
	params := make([]types.Type, len(args))
	for i, a := range args {
		params[i] = a.Type()
	}
	return e.b.NewCall(e.intrinsic(base+"."+mangle(t), t, params...), args...)
}

// helper returns the internal function name.<mangled t> that build
// defines, building it on first use. build emits straight-line code into
// e.b from the parameters and returns the result; it must not depend on
// the emitter's loop state. Helpers are always inlined.
func (e *emitter) helper(name string, ret types.Type, params []types.Type, build func(args []value.Value) value.Value) *ir.Func {
	if f := e.decl[name]; f != nil {
		return f
	}
	ps := make([]*ir.Param, len(params))
	args := make([]value.Value, len(params))
	for i, t := range params {
		ps[i] = ir.NewParam("", t)
		args[i] = ps[i]
	}
	f := e.m.IR.NewFunc(name, ret, ps...)
	f.Linkage = enum.LinkageInternal
	f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrAlwaysInline, enum.FuncAttrNoUnwind)
	e.decl[name] = f
	savedB, savedMask, savedWidth := e.b, e.mask, e.width
	e.b, e.mask, e.width = f.NewBlock("entry"), nil, lanesOf(ret)
	e.b.NewRet(build(args))
	e.b, e.mask, e.width = savedB, savedMask, savedWidth
	return f
}

// kf returns the float constant v of type t (a scalar or vector type).
func kf(t types.Type, v float64) constant.Constant {
	s := scalarOf(t).(*types.FloatType)
	if s.Kind == types.FloatKindFloat {
		v = float64(float32(v))
	}
	return splat(constant.NewFloat(s, v), lanesOf(t))
}

// ki returns the integer constant v of type t (a scalar or vector type).
func ki(t types.Type, v int64) constant.Constant {
	return splat(constant.NewInt(scalarOf(t).(*types.IntType), v), lanesOf(t))
}

// Short forms for the straight-line code of helpers.

func (e *emitter) fadd(x, y value.Value) value.Value { return e.b.NewFAdd(x, y) }
func (e *emitter) fsub(x, y value.Value) value.Value { return e.b.NewFSub(x, y) }
func (e *emitter) fmul(x, y value.Value) value.Value { return e.b.NewFMul(x, y) }
func (e *emitter) fdiv(x, y value.Value) value.Value { return e.b.NewFDiv(x, y) }

// fma returns x*y + z with one rounding where the target can (llvm.fmuladd).
func (e *emitter) fma(x, y, z value.Value) value.Value {
	return e.callIntrinsic("llvm.fmuladd", x, y, z)
}

// poly evaluates the polynomial c[0]*x^n + ... + c[n] by Horner's rule.
func (e *emitter) poly(x value.Value, c ...float64) value.Value {
	t := x.Type()
	var r value.Value = kf(t, c[0])
	for _, k := range c[1:] {
		r = e.fma(r, x, kf(t, k))
	}
	return r
}

func (e *emitter) fcmp(p enum.FPred, x, y value.Value) value.Value { return e.b.NewFCmp(p, x, y) }
func (e *emitter) icmp(p enum.IPred, x, y value.Value) value.Value { return e.b.NewICmp(p, x, y) }
func (e *emitter) sel(c, x, y value.Value) value.Value             { return e.b.NewSelect(c, x, y) }

func (e *emitter) bitsOf(x value.Value) value.Value { return e.b.NewBitCast(x, e.intType(x.Type())) }
func (e *emitter) floatOf(x value.Value, t types.Type) value.Value {
	return e.b.NewBitCast(x, t)
}
