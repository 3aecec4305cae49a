package ast

import "fmt"

// DType is the element type of an expression or a buffer.
type DType uint8

// The element types. Invalid is the zero value and never appears in a
// well-formed function.
const (
	Invalid DType = iota
	Bool
	Int32
	Int64
	Float16
	BFloat16
	Float32
	Float64
)

var dtypeNames = [...]string{
	Invalid:  "invalid",
	Bool:     "bool",
	Int32:    "int32",
	Int64:    "int64",
	Float16:  "float16",
	BFloat16: "bfloat16",
	Float32:  "float32",
	Float64:  "float64",
}

// String returns the type's name as the text form spells it ("float32").
func (t DType) String() string {
	if int(t) < len(dtypeNames) {
		return dtypeNames[t]
	}
	return fmt.Sprintf("dtype(%d)", uint8(t))
}

// ParseDType returns the type named s ("int32", "float32", ...) and whether
// s names one.
func ParseDType(s string) (DType, bool) {
	for t, name := range dtypeNames {
		if name == s && DType(t) != Invalid {
			return DType(t), true
		}
	}
	return Invalid, false
}

// IsInt reports whether t is a signed integer type.
func (t DType) IsInt() bool { return t == Int32 || t == Int64 }

// IsFloat reports whether t is a floating-point type.
func (t DType) IsFloat() bool {
	return t == Float16 || t == BFloat16 || t == Float32 || t == Float64
}

// IsNumeric reports whether t is an integer or floating-point type.
func (t DType) IsNumeric() bool { return t.IsInt() || t.IsFloat() }

// Valid reports whether t is one of the element types.
func (t DType) Valid() bool { return t > Invalid && t <= Float64 }

// Bits returns the width of t in bits (8 for Bool, as stored in memory).
func (t DType) Bits() int {
	switch t {
	case Bool:
		return 8
	case Float16, BFloat16:
		return 16
	case Int32, Float32:
		return 32
	case Int64, Float64:
		return 64
	}
	return 0
}

// Bytes returns the size of one element of type t in memory.
func (t DType) Bytes() int { return t.Bits() / 8 }
