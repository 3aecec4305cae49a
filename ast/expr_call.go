package ast

// Intrinsic is a math function that a [Call] applies.
type Intrinsic uint8

// The math intrinsics. Each takes and returns floating-point values of one
// type; Pow takes two arguments of the same type and Abs also accepts
// integers.
const (
	Exp Intrinsic = iota + 1
	Exp2
	Log
	Log2
	Sqrt
	Rsqrt
	Tanh
	Sigmoid
	Erf
	Pow
	Abs
	Floor
	Ceil
	Sin
	Cos
)

var intrinsicInfo = [...]struct {
	name    string
	arity   int
	intsToo bool // also defined on integer operands
}{
	Exp:     {"exp", 1, false},
	Exp2:    {"exp2", 1, false},
	Log:     {"log", 1, false},
	Log2:    {"log2", 1, false},
	Sqrt:    {"sqrt", 1, false},
	Rsqrt:   {"rsqrt", 1, false},
	Tanh:    {"tanh", 1, false},
	Sigmoid: {"sigmoid", 1, false},
	Erf:     {"erf", 1, false},
	Pow:     {"pow", 2, false},
	Abs:     {"abs", 1, true},
	Floor:   {"floor", 1, false},
	Ceil:    {"ceil", 1, false},
	Sin:     {"sin", 1, false},
	Cos:     {"cos", 1, false},
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
