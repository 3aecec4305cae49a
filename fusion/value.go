package fusion

import (
	"fmt"
	"math"
	"strconv"

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
			return fmt.Sprintf("%s is not a %s value", number(v), t)
		}
	case t == ast.Bool:
		if v != 0 && v != 1 {
			return fmt.Sprintf("%s is not a bool value (0 or 1)", number(v))
		}
	case t == ast.Int32:
		if v != math.Trunc(v) || v < math.MinInt32 || v > math.MaxInt32 {
			return fmt.Sprintf("%s is not an int32 value (a whole number from -2^31 to 2^31-1)", number(v))
		}
	case t == ast.Int64:
		if v != math.Trunc(v) || v < -(1<<53) || v > 1<<53 {
			return fmt.Sprintf("%s is not an int64 value a graph can hold (a whole number from -2^53 to 2^53)", number(v))
		}
	case t.IsFloat():
		if ast.Overflows(t, v) {
			return fmt.Sprintf("%s is out of the %s range (it would round to infinity)", number(v), t)
		}
	}
	return ""
}

// number prints v as a graph's JSON would hold it: a whole number in
// digits (2147483648, not 2.147483648e+09), others shortest (1e+300, 0.5).
func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e21 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// checkConstants checks that every element of every constant of g is a
// value of the constant's type.
func checkConstants(g *Graph) error {
	for _, t := range g.Constants {
		for k, v := range t.Data {
			if msg := valueError(t.DType, v); msg != "" {
				return &GraphError{Where: t.Name, Msg: fmt.Sprintf("constant %s: data[%d]: %s", t.Name, k, msg)}
			}
		}
	}
	return nil
}
