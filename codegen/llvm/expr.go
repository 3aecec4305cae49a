package llvm

import (
	"fmt"
	"strings"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
	"github.com/loom-go/loom/ast"
)

// value returns expression x in its register type (see regType).
func (e *emitter) value(x ast.Expr) lanes {
	switch x := x.(type) {
	case *ast.Const:
		return uniform(e.constant(x))
	case *ast.Var:
		l := e.lookup(x)
		if x.DType == ast.Int64 {
			return l
		}
		return e.apply1(l, func(v value.Value) value.Value {
			return e.b.NewTrunc(v, withLanes(regType(x.DType), lanesOf(v.Type())))
		})
	case *ast.Binary:
		return e.binary(x)
	case *ast.Not:
		return e.apply1(e.value(x.X), func(v value.Value) value.Value {
			return e.b.NewXor(v, splat(constant.True, lanesOf(v.Type())))
		})
	case *ast.Select:
		if v, ok := e.guardedLoad(x); ok {
			return v
		}
		c, t, f := e.value(x.Cond), e.value(x.T), e.value(x.F)
		if c.isUniform() && !(t.isUniform() && f.isUniform()) {
			// A uniform condition picks between whole vectors.
			return vector(e.b.NewSelect(e.scalar(c), e.vec(t), e.vec(f)))
		}
		return e.apply3(c, t, f, func(c, t, f value.Value) value.Value { return e.b.NewSelect(c, t, f) })
	case *ast.Cast:
		return e.cast(x.To, x.X.Type(), e.value(x.X))
	case *ast.Call:
		args := make([]lanes, len(x.Args))
		for i, a := range x.Args {
			args[i] = e.value(a)
		}
		return e.call(x, args)
	case *ast.Load:
		return e.load(x)
	}
	panic(internalf("unexpected expression %T", x))
}

// constant returns c in its register type.
func (e *emitter) constant(c *ast.Const) constant.Constant {
	switch {
	case c.DType == ast.Bool:
		return constant.NewBool(c.Int != 0)
	case c.DType.IsInt():
		return constant.NewInt(regType(c.DType).(*types.IntType), c.Int)
	case c.DType == ast.Float64:
		return constant.NewFloat(types.Double, c.Float)
	}
	return constant.NewFloat(types.Float, float64(float32(c.Float)))
}

func (e *emitter) binary(x *ast.Binary) lanes {
	t := x.A.Type()
	switch {
	case x.Op.IsLogical():
		return e.logical(x)
	case x.Op.IsCompare():
		return e.compare(x)
	case t.IsInt():
		if isIndexExpr(x) && t == ast.Int64 {
			return e.index(x)
		}
		return e.intBinary(x, x.Op, e.value(x.A), e.value(x.B), false)
	}
	a, b := e.value(x.A), e.value(x.B)
	return e.round(t, e.apply(a, b, func(p, q value.Value) value.Value { return e.floatOp(x.Op, p, q) }))
}

// fmf returns the fast-math flags of the kernel's floating-point
// arithmetic.
func (e *emitter) fmf() []enum.FastMathFlag {
	switch {
	case e.m.Options.FastMath:
		return []enum.FastMathFlag{enum.FastMathFlagFast}
	case !e.m.Options.NoFMA:
		return []enum.FastMathFlag{enum.FastMathFlagContract}
	}
	return nil
}

// floatOp applies a float arithmetic operator to values or vectors.
func (e *emitter) floatOp(op ast.BinaryOp, x, y value.Value) value.Value {
	switch op {
	case ast.OpAdd:
		i := e.b.NewFAdd(x, y)
		i.FastMathFlags = e.fmf()
		return i
	case ast.OpSub:
		i := e.b.NewFSub(x, y)
		i.FastMathFlags = e.fmf()
		return i
	case ast.OpMul:
		i := e.b.NewFMul(x, y)
		i.FastMathFlags = e.fmf()
		return i
	case ast.OpDiv:
		i := e.b.NewFDiv(x, y)
		i.FastMathFlags = e.fmf()
		return i
	case ast.OpMin, ast.OpMax:
		return e.minMax(op == ast.OpMin, x, y)
	}
	panic(internalf("float operator %v", op))
}

// minMax returns min(x, y) or max(x, y) as Go's min and max builtins
// define them: NaN if either is NaN, and -0 below +0. With fast-math, the
// plain compare and select that one instruction does.
func (e *emitter) minMax(isMin bool, x, y value.Value) value.Value {
	if !e.m.Options.FastMath {
		if r, ok := e.minMaxConstant(isMin, x, y); ok {
			return r
		}
		if r, ok := e.minMaxConstant(isMin, y, x); ok {
			return r
		}
	}
	pred := enum.FPredOGT
	if isMin {
		pred = enum.FPredOLT
	}
	pick := e.b.NewSelect(e.b.NewFCmp(pred, x, y), x, y)
	if e.m.Options.FastMath {
		return pick
	}
	if name, ok := e.rangeIntrinsic(x.Type()); ok {
		ordered := e.vrange(name, isMin, x, y) // the result when neither is NaN
		nan := e.b.NewFCmp(enum.FPredUNO, x, y)
		sum := e.b.NewFAdd(x, y) // NaN when either is
		return e.b.NewSelect(nan, sum, ordered)
	}
	// Pick both ways round (each a compare and select: one instruction
	// where the target has min and max, x86's minps/maxps among them):
	// they agree unless the values are equal or one is NaN, when one pick
	// is x and the other y. Their bits or'ed give min's answers (-0 when
	// either zero is -0; a NaN keeps its all-ones exponent and nonzero
	// fraction); and'ed, max's for equal values (+0 when either is), with
	// the lanes where either is NaN then set to all ones, a quiet NaN.
	swapped := e.b.NewSelect(e.b.NewFCmp(pred, y, x), y, x)
	it := e.intType(x.Type())
	a, b := e.b.NewBitCast(pick, it), e.b.NewBitCast(swapped, it)
	if isMin {
		return e.b.NewBitCast(e.b.NewOr(a, b), x.Type())
	}
	nan := e.b.NewSExt(e.b.NewFCmp(enum.FPredUNO, x, y), it)
	return e.b.NewBitCast(e.b.NewOr(e.b.NewAnd(a, b), nan), x.Type())
}

// minMaxConstant is minMax where k is a constant, not NaN (a ReLU's 0,
// a ReLU6's 6, a clip's bounds): k compared with x and picked when it
// wins, else x, which is then NaN when x is, in one compare and select
// (one maxps or minps, k first). Equal values pick x, which differs from
// Go's answer only for zeros of opposite signs: max(-0, +0) is +0, made
// so by adding +0 (x + +0 is x for every other x, -0 + +0 is +0), and a
// constant -0 has compares of its own. (minMax's general path gave
// max(+0, -0.0) as -0 with the constant folded in: LLVM 14's x86
// lowering of its two picks.)
func (e *emitter) minMaxConstant(isMin bool, x, k value.Value) (value.Value, bool) {
	c, ok := constantFloat(k)
	if !ok || c.NaN {
		return nil, false
	}
	if c.X.Sign() == 0 && c.X.Signbit() {
		// -0: max(x, -0) is -0 where x < 0, else x (+0 stays +0);
		// min(x, -0) is -0 where x >= 0, else x. NaN fails both
		// compares and passes through.
		pred := enum.FPredOLT
		if isMin {
			pred = enum.FPredOGE
		}
		return e.b.NewSelect(e.b.NewFCmp(pred, x, k), k, x), true
	}
	pred := enum.FPredOGT
	if isMin {
		pred = enum.FPredOLT
	}
	r := value.Value(e.b.NewSelect(e.b.NewFCmp(pred, k, x), k, x))
	if !isMin && c.X.Sign() == 0 {
		r = e.b.NewFAdd(r, k)
	}
	return r, true
}

// constantFloat returns the value of k when it is a floating-point
// constant or a vector of one such constant in every lane.
func constantFloat(k value.Value) (*constant.Float, bool) {
	switch c := k.(type) {
	case *constant.Float:
		return c, true
	case *constant.Vector:
		first, ok := c.Elems[0].(*constant.Float)
		if !ok || first.NaN {
			return nil, false
		}
		for _, el := range c.Elems[1:] {
			f, ok := el.(*constant.Float)
			if !ok || f.NaN || f.X.Cmp(first.X) != 0 || f.X.Signbit() != first.X.Signbit() {
				return nil, false
			}
		}
		return first, true
	}
	return nil, false
}

// rangeIntrinsic names the AVX-512DQ vrangeps/vrangepd intrinsic for
// values of type t, if the target has one: min and max of ordered values
// in one instruction.
func (e *emitter) rangeIntrinsic(t types.Type) (string, bool) {
	target := e.m.Options.Target
	lanes := lanesOf(t)
	kind, bits := "ps", 32
	if scalarOf(t).Equal(types.Double) {
		kind, bits = "pd", 64
	} else if !scalarOf(t).Equal(types.Float) {
		return "", false
	}
	width := lanes * bits
	switch {
	case lanes < 2 || !target.Has("avx512dq"):
		return "", false
	case width == 512:
	case (width == 256 || width == 128) && target.Has("avx512vl"):
	default:
		return "", false
	}
	return fmt.Sprintf("llvm.x86.avx512.mask.range.%s.%d", kind, width), true
}

// vrange returns min(x, y) or max(x, y) by vrangeps/vrangepd, which puts
// -0 below +0 (but returns the other operand for a NaN, as minNum and
// maxNum do).
func (e *emitter) vrange(name string, isMin bool, x, y value.Value) value.Value {
	t := x.Type()
	const signOfResult = 0b0100
	op := int64(signOfResult | 0b01) // max
	if isMin {
		op = signOfResult | 0b00
	}
	mask := types.NewInt(uint64(max(lanesOf(t), 8)))
	params := []types.Type{t, t, types.I32, t, mask}
	args := []value.Value{x, y, ki(types.I32, op), x, ki(mask, -1)}
	if strings.HasSuffix(name, ".512") {
		const currentRounding = 4
		params = append(params, types.I32)
		args = append(args, ki(types.I32, currentRounding))
	}
	return e.b.NewCall(e.intrinsic(name, t, params...), args...)
}

// intType returns the integer type (or vector) as wide as float type t.
func (e *emitter) intType(t types.Type) types.Type {
	bits := 32
	if scalarOf(t).Equal(types.Double) {
		bits = 64
	}
	return withLanes(types.NewInt(uint64(bits)), lanesOf(t))
}

// compare applies a comparison.
func (e *emitter) compare(x *ast.Binary) lanes {
	t := x.A.Type()
	var a, b lanes
	if t.IsInt() && isIndexExpr(x.A) && isIndexExpr(x.B) {
		a, b = e.index(x.A), e.index(x.B)
	} else {
		a, b = e.value(x.A), e.value(x.B)
	}
	if t.IsFloat() {
		pred := map[ast.BinaryOp]enum.FPred{
			ast.OpEQ: enum.FPredOEQ, ast.OpNE: enum.FPredUNE, ast.OpLT: enum.FPredOLT,
			ast.OpLE: enum.FPredOLE, ast.OpGT: enum.FPredOGT, ast.OpGE: enum.FPredOGE,
		}[x.Op]
		return e.apply(a, b, func(p, q value.Value) value.Value { return e.b.NewFCmp(pred, p, q) })
	}
	preds := map[ast.BinaryOp]enum.IPred{
		ast.OpEQ: enum.IPredEQ, ast.OpNE: enum.IPredNE, ast.OpLT: enum.IPredSLT,
		ast.OpLE: enum.IPredSLE, ast.OpGT: enum.IPredSGT, ast.OpGE: enum.IPredSGE,
	}
	if t == ast.Bool { // false < true
		preds = map[ast.BinaryOp]enum.IPred{
			ast.OpEQ: enum.IPredEQ, ast.OpNE: enum.IPredNE, ast.OpLT: enum.IPredULT,
			ast.OpLE: enum.IPredULE, ast.OpGT: enum.IPredUGT, ast.OpGE: enum.IPredUGE,
		}
	}
	return e.compare64(preds[x.Op], a, b)
}

// logical emits && and ||. The right operand is evaluated only where the
// left one does not decide, as in the interpreter, when evaluating it could
// fault (a load, a division); otherwise both are evaluated and combined.
func (e *emitter) logical(x *ast.Binary) lanes {
	isAnd := x.Op == ast.OpAnd
	a := e.value(x.A)
	combine := func(p, q value.Value) value.Value {
		if isAnd {
			return e.b.NewAnd(p, q)
		}
		return e.b.NewOr(p, q)
	}
	if !canFault(x.B) {
		return e.apply(a, e.value(x.B), combine)
	}
	// decided is the lanes whose result the left operand gives.
	if a.isUniform() {
		pre := e.b
		rhs, join := e.newBlock("rhs"), e.newBlock("rhs.end")
		if isAnd {
			pre.NewCondBr(e.scalar(a), rhs, join)
		} else {
			pre.NewCondBr(e.scalar(a), join, rhs)
		}
		e.b = rhs
		b := e.value(x.B)
		bv := e.vec(b)
		rhsEnd := e.b
		e.b.NewBr(join)
		e.b = join
		short := value.Value(constant.NewBool(!isAnd))
		if n := lanesOf(bv.Type()); n > 0 {
			short = splat(constant.NewBool(!isAnd), n)
		}
		phi := join.NewPhi(ir.NewIncoming(short, pre), ir.NewIncoming(bv, rhsEnd))
		if lanesOf(bv.Type()) > 0 {
			return vector(phi)
		}
		return uniform(phi)
	}
	// Lanes differ: evaluate the right operand only in the lanes that need
	// it.
	av := e.vec(a)
	need := av
	if !isAnd {
		need = e.b.NewXor(av, splat(constant.True, e.width))
	}
	need = e.andMask(need)
	pre := e.b
	var bv value.Value
	var rhsEnd = pre
	e.masked(need, "rhs", func() {
		bv = e.vec(e.value(x.B))
		rhsEnd = e.b
	})
	phi := e.b.NewPhi(ir.NewIncoming(splat(constant.False, e.width), pre), ir.NewIncoming(bv, rhsEnd))
	return vector(combine(av, phi))
}

// canFault reports whether evaluating x may fault or read memory: a load,
// or an integer division by something other than a positive constant.
func canFault(x ast.Expr) bool {
	fault := false
	ast.Inspect(x, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Load:
			fault = true
		case *ast.Binary:
			switch n.Op {
			case ast.OpDiv, ast.OpMod, ast.OpFloorDiv, ast.OpFloorMod:
				if c, ok := ast.ConstIntValue(n.B); n.A.Type().IsInt() && (!ok || c <= 0) {
					fault = true
				}
			}
		}
		return !fault
	})
	return fault
}
