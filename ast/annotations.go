package ast

import (
	"fmt"
	"math"
	"sort"
)

// Annotations are free key/value hints on a loop or block that the code
// generators and the autotuner read, such as an unroll limit. A value is an
// int64, a float64 (finite), a string or a bool; keys are printed in sorted
// order, so two equal maps always print alike.
//
// Text form: attrs(pragma_unroll = 4, "tag" = "gemm")
type Annotations map[string]any

// Keys returns the keys of a in sorted order.
func (a Annotations) Keys() []string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Clone returns a copy of a (nil when a is empty).
func (a Annotations) Clone() Annotations {
	if len(a) == 0 {
		return nil
	}
	c := make(Annotations, len(a))
	for k, v := range a {
		c[k] = v
	}
	return c
}

// checkAnnotationValue reports an error for a value of an unsupported type.
func checkAnnotationValue(key string, v any) error {
	switch v := v.(type) {
	case int64, string, bool:
		return nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Errorf("annotation %q: %v is not a finite number", key, v)
		}
		return nil
	}
	return fmt.Errorf("annotation %q: value of type %T (want int64, float64, string or bool)", key, v)
}
