package fusion

import (
	"fmt"
	"math"

	"github.com/loom-go/loom/ast"
)

// valueError says why v is not a value of type t, or returns "" when it
// is: an integer type holds whole numbers in its range (int64 within
// ±2^53, which a float64 holds exactly), bool 0 and 1, a float type any
// value but a finite one that rounds to infinity in it (1e300 in
// float32; an infinity given as such is a value).
func valueError(t ast.DType, v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		if !t.IsFloat() {
			return fmt.Sprintf("%v is not a %s value", v, t)
		}
	case t == ast.Bool:
		if v != 0 && v != 1 {
			return fmt.Sprintf("%v is not a bool value (0 or 1)", v)
		}
	case t == ast.Int32:
		if v != math.Trunc(v) || v < math.MinInt32 || v > math.MaxInt32 {
			return fmt.Sprintf("%v is not an int32 value (a whole number from -2^31 to 2^31-1)", v)
		}
	case t == ast.Int64:
		if v != math.Trunc(v) || v < -(1<<53) || v > 1<<53 {
			return fmt.Sprintf("%v is not an int64 value a graph can hold (a whole number from -2^53 to 2^53)", v)
		}
	case t.IsFloat():
		if ast.Overflows(t, v) {
			return fmt.Sprintf("%v is out of the %s range (it would round to infinity)", v, t)
		}
	}
	return ""
}

// checkConstants checks that every element of every constant of g is a
// value of the constant's type.
func checkConstants(g *Graph) error {
	for _, t := range g.Constants {
		for k, v := range t.Data {
			if msg := valueError(t.DType, v); msg != "" {
				return &GraphError{Where: t.Name, Msg: fmt.Sprintf("constant %s: data[%d] = %s", t.Name, k, msg)}
			}
		}
	}
	return nil
}
