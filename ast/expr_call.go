package ast

import "math"

// Intrinsic is a math function that a [Call] applies.
type Intrinsic uint8

// The math intrinsics. Each takes and returns floating-point values of one
// type; Pow takes two arguments of the same type and Abs also accepts
// integers.
const (
	IntrinsicExp Intrinsic = iota + 1
	IntrinsicExp2
	IntrinsicLog
	IntrinsicLog2
	IntrinsicSqrt
	IntrinsicRsqrt
	IntrinsicTanh
	IntrinsicSigmoid
	IntrinsicErf
	IntrinsicPow
	IntrinsicAbs
	IntrinsicFloor
	IntrinsicCeil
	IntrinsicSin
	IntrinsicCos
)

// intrinsicInfo is the table of intrinsics: the name the text form uses, the
// number of arguments, whether integers are accepted, and the meaning on
// floating-point values, computed in float64 (the interpreter rounds the
// result to the operand type). y is the second argument of Pow.
var intrinsicInfo = [...]struct {
	name    string
	arity   int
	intsToo bool
	eval    func(x, y float64) float64
}{
	IntrinsicExp:     {"exp", 1, false, func(x, _ float64) float64 { return math.Exp(x) }},
	IntrinsicExp2:    {"exp2", 1, false, func(x, _ float64) float64 { return math.Exp2(x) }},
	IntrinsicLog:     {"log", 1, false, func(x, _ float64) float64 { return math.Log(x) }},
	IntrinsicLog2:    {"log2", 1, false, func(x, _ float64) float64 { return math.Log2(x) }},
	IntrinsicSqrt:    {"sqrt", 1, false, func(x, _ float64) float64 { return math.Sqrt(x) }},
	IntrinsicRsqrt:   {"rsqrt", 1, false, func(x, _ float64) float64 { return 1 / math.Sqrt(x) }},
	IntrinsicTanh:    {"tanh", 1, false, func(x, _ float64) float64 { return math.Tanh(x) }},
	IntrinsicSigmoid: {"sigmoid", 1, false, func(x, _ float64) float64 { return 1 / (1 + math.Exp(-x)) }},
	IntrinsicErf:     {"erf", 1, false, func(x, _ float64) float64 { return math.Erf(x) }},
	IntrinsicPow:     {"pow", 2, false, math.Pow},
	IntrinsicAbs:     {"abs", 1, true, func(x, _ float64) float64 { return math.Abs(x) }},
	IntrinsicFloor:   {"floor", 1, false, func(x, _ float64) float64 { return math.Floor(x) }},
	IntrinsicCeil:    {"ceil", 1, false, func(x, _ float64) float64 { return math.Ceil(x) }},
	IntrinsicSin:     {"sin", 1, false, func(x, _ float64) float64 { return math.Sin(x) }},
	IntrinsicCos:     {"cos", 1, false, func(x, _ float64) float64 { return math.Cos(x) }},
}

// String returns the intrinsic's name as the text form spells it ("exp").
func (f Intrinsic) String() string {
	if f.Valid() {
		return intrinsicInfo[f].name
	}
	return "?"
}

// Valid reports whether f is one of the intrinsics.
func (f Intrinsic) Valid() bool { return f > 0 && int(f) < len(intrinsicInfo) }

// Arity returns the number of arguments f takes.
func (f Intrinsic) Arity() int {
	if f.Valid() {
		return intrinsicInfo[f].arity
	}
	return 0
}

// AcceptsInt reports whether f is also defined on integer arguments.
func (f Intrinsic) AcceptsInt() bool { return f.Valid() && intrinsicInfo[f].intsToo }

// LookupIntrinsic returns the intrinsic called name and whether there is one.
func LookupIntrinsic(name string) (Intrinsic, bool) {
	for f := range intrinsicInfo {
		if f > 0 && intrinsicInfo[f].name == name {
			return Intrinsic(f), true
		}
	}
	return 0, false
}

// Call applies a math intrinsic to its arguments: exp(x), pow(x, y).
type Call struct {
	Func Intrinsic
	Args []Expr
}

// Type returns the type of the first argument.
func (e *Call) Type() DType {
	if len(e.Args) == 0 || e.Args[0] == nil {
		return Invalid
	}
	return e.Args[0].Type()
}

// NewCall returns f(args...).
func NewCall(f Intrinsic, args ...Expr) *Call { return &Call{Func: f, Args: args} }

// Exp returns the call exp(x), e^x.
func Exp(x Expr) *Call { return NewCall(IntrinsicExp, x) }

// Exp2 returns the call exp2(x), 2^x.
func Exp2(x Expr) *Call { return NewCall(IntrinsicExp2, x) }

// Log returns the call log(x), the natural logarithm of x.
func Log(x Expr) *Call { return NewCall(IntrinsicLog, x) }

// Log2 returns the call log2(x), the base-2 logarithm of x.
func Log2(x Expr) *Call { return NewCall(IntrinsicLog2, x) }

// Sqrt returns the call sqrt(x), the square root of x.
func Sqrt(x Expr) *Call { return NewCall(IntrinsicSqrt, x) }

// Rsqrt returns the call rsqrt(x), 1/sqrt(x).
func Rsqrt(x Expr) *Call { return NewCall(IntrinsicRsqrt, x) }

// Tanh returns the call tanh(x), the hyperbolic tangent of x.
func Tanh(x Expr) *Call { return NewCall(IntrinsicTanh, x) }

// Sigmoid returns the call sigmoid(x), 1/(1+e^-x).
func Sigmoid(x Expr) *Call { return NewCall(IntrinsicSigmoid, x) }

// Erf returns the call erf(x), the error function of x.
func Erf(x Expr) *Call { return NewCall(IntrinsicErf, x) }

// Pow returns the call pow(x, y), x to the power y.
func Pow(x, y Expr) *Call { return NewCall(IntrinsicPow, x, y) }

// Abs returns the call abs(x), |x|.
func Abs(x Expr) *Call { return NewCall(IntrinsicAbs, x) }

// Floor returns the call floor(x), x rounded down to an integer value.
func Floor(x Expr) *Call { return NewCall(IntrinsicFloor, x) }

// Ceil returns the call ceil(x), x rounded up to an integer value.
func Ceil(x Expr) *Call { return NewCall(IntrinsicCeil, x) }

// Sin returns the call sin(x), the sine of x.
func Sin(x Expr) *Call { return NewCall(IntrinsicSin, x) }

// Cos returns the call cos(x), the cosine of x.
func Cos(x Expr) *Call { return NewCall(IntrinsicCos, x) }
