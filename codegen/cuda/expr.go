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

// ctype returns the C type of t.
func ctype(t ast.DType) (string, error) {
	switch t {
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
	return "", fmt.Errorf("type %s has no CUDA lowering yet (float32, float64, int32, int64 and bool do)", t)
}

// suffix is the helper name suffix of t: f32, f64, i32, i64.
func suffix(t ast.DType) string {
	switch t {
	case ast.Float32:
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
		return k.access(e.Buffer, e.Indices)
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
	case ast.Float32:
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
		return name + "(" + a + ", " + b + ")"
	}
	return "(" + a + " " + cOps[e.Op] + " " + b + ")"
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
		return name + "(" + args[0] + ")"
	}
	name, ok := mathNames[e.Func]
	if !ok {
		k.fail(fmt.Errorf("intrinsic %s has no CUDA lowering", e.Func))
		return "0"
	}
	if t == ast.Float64 {
		name = strings.TrimSuffix(name, "f")
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}
