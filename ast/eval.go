package ast

import (
	"errors"
	"math/big"
)

// value is a scalar at run time: integers and bools in i (bool as 0 or 1),
// floating-point numbers in f, already rounded to their type. The static type
// of the expression says which field is meaningful.
type value struct {
	i int64
	f float64
}

func constValue(c *Const) value { return value{i: c.Int, f: c.Float} }

// valueConst returns the constant of type t holding x.
func valueConst(t DType, x value) *Const {
	if t.IsFloat() {
		return &Const{DType: t, Float: x.f}
	}
	return &Const{DType: t, Int: x.i}
}

func boolValue(b bool) value {
	if b {
		return value{i: 1}
	}
	return value{}
}

var errDivByZero = errors.New("integer division by zero")

// evalBinary applies op to operands of type t. This is the one definition
// of the operators' semantics: the interpreter and the simplifier's constant
// folding both call it. Integer results wrap to t; float results are rounded
// to t. Only an integer division or remainder by zero fails.
func evalBinary(op BinaryOp, t DType, a, b value) (value, error) {
	if t.IsFloat() {
		return evalFloatBinary(op, t, a.f, b.f), nil
	}
	x, y := a.i, b.i
	var r int64
	switch op {
	case OpAdd:
		r = x + y
	case OpSub:
		r = x - y
	case OpMul:
		r = x * y
	case OpDiv, OpMod, OpFloorDiv, OpFloorMod:
		if y == 0 {
			return value{}, errDivByZero
		}
		switch op {
		case OpDiv:
			r = x / y
		case OpMod:
			r = x % y
		case OpFloorDiv:
			r = floorDiv(x, y)
		case OpFloorMod:
			r = floorMod(x, y)
		}
	case OpMin:
		r = min(x, y)
	case OpMax:
		r = max(x, y)
	case OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE:
		return compare(op, x, y), nil
	case OpAnd:
		return boolValue(x != 0 && y != 0), nil
	case OpOr:
		return boolValue(x != 0 || y != 0), nil
	}
	return value{i: wrapInt(t, r)}, nil
}

func evalFloatBinary(op BinaryOp, t DType, x, y float64) value {
	var r float64
	switch op {
	case OpAdd:
		r = x + y
	case OpSub:
		r = x - y
	case OpMul:
		r = x * y
	case OpDiv:
		r = x / y
	case OpMin:
		r = min(x, y) // NaN if either is NaN; -0 below +0
	case OpMax:
		r = max(x, y)
	case OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE:
		return compare(op, x, y)
	}
	return value{f: roundFloat(t, r)}
}

// compare applies a comparison operator. On floats a comparison with NaN is
// false, except != which is true, as in IEEE 754 (and Go).
func compare[T int64 | float64](op BinaryOp, x, y T) value {
	switch op {
	case OpEQ:
		return boolValue(x == y)
	case OpNE:
		return boolValue(x != y)
	case OpLT:
		return boolValue(x < y)
	case OpLE:
		return boolValue(x <= y)
	case OpGT:
		return boolValue(x > y)
	}
	return boolValue(x >= y)
}

// floorDiv returns floor(x / y) for y != 0.
func floorDiv(x, y int64) int64 {
	q := x / y
	if (x%y != 0) && ((x < 0) != (y < 0)) {
		q--
	}
	return q
}

// floorMod returns x - y*floorDiv(x, y) for y != 0; its sign is y's.
func floorMod(x, y int64) int64 {
	r := x % y
	if r != 0 && ((r < 0) != (y < 0)) {
		r += y
	}
	return r
}

// evalCall applies a math intrinsic to arguments of type t.
func evalCall(f Intrinsic, t DType, args []value) value {
	if t.IsInt() { // only Abs accepts integers
		x := args[0].i
		if x < 0 {
			x = -x
		}
		return value{i: wrapInt(t, x)}
	}
	var y float64
	if len(args) > 1 {
		y = args[1].f
	}
	return value{f: roundFloat(t, intrinsicInfo[f].eval(args[0].f, y))}
}

// evalCast converts x from type from to type to.
func evalCast(to, from DType, x value) value {
	switch {
	case to == from:
		return x
	case to == Bool:
		if from.IsFloat() {
			return boolValue(x.f != 0)
		}
		return boolValue(x.i != 0)
	case to.IsFloat():
		if from.IsFloat() {
			return value{f: roundFloat(to, x.f)}
		}
		return value{f: intToFloat(to, x.i)}
	default: // to an integer type
		if from.IsFloat() {
			return value{i: floatToInt(to, x.f)}
		}
		return value{i: wrapInt(to, x.i)}
	}
}

// intToFloat converts an integer to float type t with a single rounding, as
// the hardware does. (float64(x) alone may already round a large int64, and
// rounding that again to a narrower type can differ from rounding once.)
func intToFloat(t DType, x int64) float64 {
	switch {
	case t == Float32:
		return float64(float32(x))
	case t == Float64 || (x > -1<<53 && x < 1<<53): // float64(x) is exact
		return roundFloat(t, float64(x))
	}
	prec := uint(float16Format.frac + 1)
	if t == BFloat16 {
		prec = uint(bfloat16Format.frac + 1)
	}
	r, _ := new(big.Float).SetPrec(prec).SetMode(big.ToNearestEven).SetInt64(x).Float64()
	return roundFloat(t, r) // exact now, except that it may overflow to infinity
}
