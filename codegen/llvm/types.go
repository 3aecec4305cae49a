package llvm

import (
	"fmt"

	"github.com/llir/llvm/ir/types"
	"github.com/loom-go/loom/ast"
)

// memType is how an element of type t is stored in a buffer: bool as one
// byte (like Go's and C's bool), float16 and bfloat16 as their 16-bit
// encodings.
func memType(t ast.DType) types.Type {
	switch t {
	case ast.Bool:
		return types.I8
	case ast.Int32:
		return types.I32
	case ast.Int64:
		return types.I64
	case ast.Float16, ast.BFloat16:
		return types.I16
	case ast.Float32:
		return types.Float
	case ast.Float64:
		return types.Double
	}
	panic(fmt.Sprintf("llvm: no memory type for %v", t))
}

// regType is how a value of type t is held in registers: bool as i1, and
// float16 and bfloat16 as float (every value of theirs is a float exactly;
// each operation on them rounds its float result back to their precision).
func regType(t ast.DType) types.Type {
	switch t {
	case ast.Bool:
		return types.I1
	case ast.Float16, ast.BFloat16:
		return types.Float
	}
	return memType(t)
}

// CType is the C type of an element of type t in loom's C ABI (float16
// and bfloat16 as their 16-bit encodings).
func CType(t ast.DType) string {
	switch t {
	case ast.Bool:
		return "bool"
	case ast.Int32:
		return "int32_t"
	case ast.Int64:
		return "int64_t"
	case ast.Float16, ast.BFloat16:
		return "uint16_t"
	case ast.Float32:
		return "float"
	case ast.Float64:
		return "double"
	}
	return "void"
}

// mangle returns the suffix LLVM's overloaded intrinsics use for type t
// ("f32", "v8f32", "p0f32", "v8p0f32").
func mangle(t types.Type) string {
	switch t := t.(type) {
	case *types.FloatType:
		switch t.Kind {
		case types.FloatKindHalf:
			return "f16"
		case types.FloatKindFloat:
			return "f32"
		case types.FloatKindDouble:
			return "f64"
		}
	case *types.IntType:
		return fmt.Sprintf("i%d", t.BitSize)
	case *types.PointerType:
		return "p0" + mangle(t.ElemType)
	case *types.VectorType:
		return fmt.Sprintf("v%d%s", t.Len, mangle(t.ElemType))
	}
	panic(fmt.Sprintf("llvm: cannot mangle %v", t))
}

// scalarOf returns the element type of a vector type, or t itself.
func scalarOf(t types.Type) types.Type {
	if v, ok := t.(*types.VectorType); ok {
		return v.ElemType
	}
	return t
}

// lanesOf returns the number of lanes of a vector type, 0 for a scalar.
func lanesOf(t types.Type) int {
	if v, ok := t.(*types.VectorType); ok {
		return int(v.Len)
	}
	return 0
}

// withLanes returns the vector of n elements of scalar type t, or t when n
// is 0.
func withLanes(t types.Type, n int) types.Type {
	if n == 0 {
		return t
	}
	return types.NewVector(uint64(n), t)
}

func isFloatType(t types.Type) bool {
	_, ok := scalarOf(t).(*types.FloatType)
	return ok
}
