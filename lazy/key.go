package lazy

import (
	"math"
	"strconv"

	"github.com/loom-go/loom/fusion"
)

// appendAttrs appends a key of the attributes a: every field of
// fusion.Attrs, in order, nil told from empty (TestAttrKeyCoversEveryField
// keeps it complete). It is what json.Marshal would say, without its
// reflection: recording an operation is on every call's path.
func appendAttrs(b []byte, a fusion.Attrs) []byte {
	b = appendInts(b, 'a', a.Axes)
	b = appendBool(b, 'k', a.KeepDims)
	b = appendIntPtr(b, 'x', a.Axis)
	b = appendInts(b, 'p', a.Perm)
	if a.Shape != nil {
		b = append(b, 's', '[')
		for _, d := range a.Shape {
			b = append(b, d.String()...)
			b = append(b, ',')
		}
		b = append(b, ']')
	}
	b = appendInts(b, 'b', a.Starts)
	b = appendInts(b, 'e', a.Ends)
	b = appendInts(b, 't', a.Steps)
	b = appendInts(b, 'r', a.Strides)
	b = appendInts(b, 'd', a.Pads)
	b = appendInts(b, 'l', a.Dilations)
	if a.Groups != nil {
		b = strconv.AppendInt(append(b, 'g'), *a.Groups, 10)
	}
	b = appendInts(b, 'w', a.KernelShape)
	b = appendBool(b, 'c', a.CountIncludePad)
	b = appendFloatPtr(b, 'v', a.Value)
	b = appendString(b, 'y', a.DType)
	b = appendFloatPtr(b, 'n', a.Epsilon)
	b = appendString(b, 'm', a.Approximate)
	b = appendString(b, 'o', a.Layout)
	if a.Panel != 0 {
		b = strconv.AppendInt(append(b, 'P'), a.Panel, 10)
	}
	if a.Columns != 0 {
		b = strconv.AppendInt(append(b, 'C'), a.Columns, 10)
	}
	return b
}

// appendInts appends a tagged list (nothing for nil, "tag[]" for empty).
func appendInts[T int | int64](b []byte, tag byte, v []T) []byte {
	if v == nil {
		return b
	}
	b = append(b, tag, '[')
	for _, x := range v {
		b = strconv.AppendInt(b, int64(x), 10)
		b = append(b, ',')
	}
	return append(b, ']')
}

func appendBool(b []byte, tag byte, v bool) []byte {
	if v {
		return append(b, tag)
	}
	return b
}

func appendIntPtr(b []byte, tag byte, v *int) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendInt(append(b, tag), int64(*v), 10)
}

func appendFloatPtr(b []byte, tag byte, v *float64) []byte {
	if v == nil {
		return b
	}
	// the bits: -0 is not 0, and every NaN is itself
	return strconv.AppendUint(append(b, tag), math.Float64bits(*v), 16)
}

func appendString(b []byte, tag byte, s string) []byte {
	if s == "" {
		return b
	}
	b = strconv.AppendInt(append(b, tag), int64(len(s)), 10)
	return append(append(b, ':'), s...)
}

// appendShape appends a dtype and a shape.
func appendShape(b []byte, dtype string, shape []int64) []byte {
	b = append(b, dtype...)
	b = append(b, '[')
	for _, x := range shape {
		b = strconv.AppendInt(b, x, 10)
		b = append(b, ',')
	}
	return append(b, ']')
}
