package cuda

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Expressions print as C with the interpreter's meaning: integer floordiv
// and floormod, min and max of floats that propagate NaN and order -0
// below +0 (Go's math.Min and math.Max), float-to-integer casts that
// saturate and take NaN to 0, and float32 math in float32 (expf, ...).
// The helpers that C lacks are device functions of the kernel's prelude.

// ctype returns the C type of a value of type t in registers: float16
// and bfloat16 values are floats there (see halfNames).
func ctype(t ast.DType) (string, error) {
	switch t {
	case ast.Float16, ast.BFloat16:
		return "float", nil
	case ast.Bool:
		return "bool", nil
	case ast.Int32:
		return "int", nil
	case ast.Int64:
		return "long long", nil
	case ast.Float32:
		return "float", nil
	case ast.Float64:
		return "double", nil
	}
	return "", fmt.Errorf("type %s has no CUDA lowering yet (float16, bfloat16, float32, float64, int32, int64 and bool do)", t)
}

// memType returns the C type of an element of type t in memory: float16
// and bfloat16 elements are their 16-bit encodings.
func memType(t ast.DType) (string, error) {
	if isHalf(t) {
		return "unsigned short", nil
	}
	return ctype(t)
}

// float16 and bfloat16 values live in float registers, as in codegen/llvm:
// a load converts the encoding to float (exactly), every operation computes
// in float and rounds its result to the type's precision, a store writes
// the encoding. That is the interpreter's result, which computes in
// float64 and rounds once: float carries more than twice their precision
// plus two bits, so rounding twice is rounding once for + - * / and sqrt.
// The conversions are integer arithmetic on the bits (helpers.go), the
// same on the GPU and in the CPU emulation.

// isHalf reports whether t is float16 or bfloat16.
func isHalf(t ast.DType) bool { return t == ast.Float16 || t == ast.BFloat16 }

// halfName is the helper name part of a 16-bit float type.
func halfName(t ast.DType) string {
	if t == ast.BFloat16 {
		return "bf16"
	}
	return "f16"
}

// fromMem converts an element loaded from memory, x, to its register
// form.
func (k *kernelWriter) fromMem(t ast.DType, x string) string {
	if !isHalf(t) {
		return x
	}
	name := "loom_from_" + halfName(t)
	k.use(name)
	return name + "(" + x + ")"
}

// toMem converts a register value x to its memory form.
func (k *kernelWriter) toMem(t ast.DType, x string) string {
	if !isHalf(t) {
		return x
	}
	name := "loom_to_" + halfName(t)
	k.use(name)
	return name + "(" + x + ")"
}

// rounded rounds x, an operation's result computed in float, to the
// precision of t when t is float16 or bfloat16.
func (k *kernelWriter) rounded(t ast.DType, x string) string {
	if !isHalf(t) {
		return x
	}
	k.useHalf(t)
	name := "loom_round_" + halfName(t)
	k.use(name)
	return name + "(" + x + ")"
}

// useHalf puts t's conversions into the prelude, which its rounding
// helpers call.
func (k *kernelWriter) useHalf(t ast.DType) {
	k.use("loom_from_" + halfName(t))
	k.use("loom_to_" + halfName(t))
}

// suffix is the helper name suffix of t: f32 (of float16 and bfloat16 too:
// their values are floats), f64, i32, i64.
func suffix(t ast.DType) string {
	switch t {
	case ast.Float32, ast.Float16, ast.BFloat16:
		return "f32"
	case ast.Float64:
		return "f64"
	case ast.Int32:
		return "i32"
	}
	return "i64"
}

// expr prints e. names maps variables (loop and iteration variables,
// sizes) to the C names in scope.
func (k *kernelWriter) expr(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Const:
		return constant(e)
	case *ast.Var:
		if slices.ContainsFunc(k.f.Sizes, func(v *ast.Var) bool { return v.Name == e.Name }) && k.names[e.Name] == e.Name {
			k.sizes[e.Name] = true
		}
		if n, ok := k.names[e.Name]; ok {
			return n
		}
		k.fail(fmt.Errorf("variable %s is not in scope", e.Name))
		return e.Name
	case *ast.Load:
		if c, ok := k.laneLoads[e]; ok {
			return c
		}
		return k.fromMem(e.Buffer.DType, k.access(e.Buffer, e.Indices))
	case *ast.Binary:
		return k.binary(e)
	case *ast.Not:
		return "!(" + k.expr(e.X) + ")"
	case *ast.Select:
		return "(" + k.expr(e.Cond) + " ? " + k.expr(e.T) + " : " + k.expr(e.F) + ")"
	case *ast.Cast:
		return k.cast(e)
	case *ast.Call:
		return k.call(e)
	}
	k.fail(fmt.Errorf("expression %s has no CUDA lowering", ast.Print(e)))
	return "0"
}

func constant(c *ast.Const) string {
	switch c.DType {
	case ast.Bool:
		if c.Int != 0 {
			return "true"
		}
		return "false"
	case ast.Int32:
		if c.Int == math.MinInt32 {
			return "(-2147483647 - 1)"
		}
		return strconv.FormatInt(c.Int, 10)
	case ast.Int64:
		if c.Int == math.MinInt64 {
			return "(-9223372036854775807LL - 1)"
		}
		return strconv.FormatInt(c.Int, 10) + "LL"
	case ast.Float32, ast.Float16, ast.BFloat16: // a 16-bit float's value is a float's
		return floatLit(c.Float, true)
	}
	return floatLit(c.Float, false)
}

// floatLit prints a float exactly: hexadecimal for ordinary values, the
// CUDA constants for infinities and NaN.
func floatLit(v float64, single bool) string {
	switch {
	case math.IsNaN(v):
		if single {
			return "__int_as_float(0x7fc00000)"
		}
		return "__longlong_as_double(0x7ff8000000000000LL)"
	case math.IsInf(v, 1):
		if single {
			return "__int_as_float(0x7f800000)"
		}
		return "__longlong_as_double(0x7ff0000000000000LL)"
	case math.IsInf(v, -1):
		if single {
			return "__int_as_float(0xff800000)"
		}
		return "__longlong_as_double(0xfff0000000000000LL)"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if single {
		s = strconv.FormatFloat(v, 'g', -1, 32)
	}
	if !strings.ContainsAny(s, ".en") {
		s += ".0"
	}
	if single {
		s += "f"
	}
	return s
}

var cOps = map[ast.BinaryOp]string{
	ast.OpAdd: "+", ast.OpSub: "-", ast.OpMul: "*", ast.OpDiv: "/", ast.OpMod: "%",
	ast.OpEQ: "==", ast.OpNE: "!=", ast.OpLT: "<", ast.OpLE: "<=", ast.OpGT: ">", ast.OpGE: ">=",
	ast.OpAnd: "&&", ast.OpOr: "||",
}

// helperOps are the operators C lacks (or has with another meaning),
// called as helpers loom_<name>_<type>.
var helperOps = map[ast.BinaryOp]string{ast.OpFloorDiv: "floordiv", ast.OpFloorMod: "floormod", ast.OpMin: "min", ast.OpMax: "max"}

func (k *kernelWriter) binary(e *ast.Binary) string {
	a, b := k.expr(e.A), k.expr(e.B)
	if op, ok := helperOps[e.Op]; ok {
		name := "loom_" + op + "_" + suffix(e.A.Type())
		k.use(name)
		return k.rounded(e.Type(), name+"("+a+", "+b+")")
	}
	return k.rounded(e.Type(), "("+a+" "+cOps[e.Op]+" "+b+")")
}

func (k *kernelWriter) cast(e *ast.Cast) string {
	from := e.X.Type()
	x := k.expr(e.X)
	to, err := ctype(e.To)
	if err != nil {
		k.fail(err)
	}
	switch {
	case e.To == from:
		return x
	case e.To == ast.Bool:
		return "(" + x + " != 0)"
	case from.IsFloat() && e.To.IsInt():
		name := "loom_to_" + suffix(e.To) + "_" + suffix(from)
		k.use(name)
		return name + "(" + x + ")"
	case isHalf(e.To) && (from == ast.Float64 || from.IsInt()):
		// Rounded once from the exact value, as the interpreter does:
		// through a double, narrowed to float rounding to odd.
		name := "loom_round_" + halfName(e.To) + "_f64"
		k.useHalf(e.To)
		k.use("loom_round_" + halfName(e.To))
		k.use(name)
		return name + "((double)" + x + ")"
	case isHalf(e.To) && from != ast.Bool:
		return k.rounded(e.To, x) // from float32, float16 or bfloat16
	case isHalf(from) && e.To == ast.Float32:
		return x // exact
	}
	return "((" + to + ")" + x + ")"
}

// mathNames are the CUDA math functions of the intrinsics, on float32
// (float64 drops the f).
var mathNames = map[ast.Intrinsic]string{
	ast.IntrinsicExp: "expf", ast.IntrinsicExp2: "exp2f", ast.IntrinsicLog: "logf", ast.IntrinsicLog2: "log2f",
	ast.IntrinsicSqrt: "sqrtf", ast.IntrinsicRsqrt: "rsqrtf", ast.IntrinsicTanh: "tanhf", ast.IntrinsicErf: "erff",
	ast.IntrinsicPow: "powf", ast.IntrinsicAbs: "fabsf", ast.IntrinsicFloor: "floorf", ast.IntrinsicCeil: "ceilf",
	ast.IntrinsicSin: "sinf", ast.IntrinsicCos: "cosf",
}

func (k *kernelWriter) call(e *ast.Call) string {
	t := e.Args[0].Type()
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = k.expr(a)
	}
	if t.IsInt() { // abs
		return "(" + args[0] + " < 0 ? -" + args[0] + " : " + args[0] + ")"
	}
	if e.Func == ast.IntrinsicSigmoid {
		name := "loom_sigmoid_" + suffix(t)
		k.use(name)
		return k.rounded(t, name+"("+args[0]+")")
	}
	name, ok := mathNames[e.Func]
	if !ok {
		k.fail(fmt.Errorf("intrinsic %s has no CUDA lowering", e.Func))
		return "0"
	}
	if t == ast.Float64 {
		name = strings.TrimSuffix(name, "f")
	}
	return k.rounded(t, name+"("+strings.Join(args, ", ")+")")
}
