package onnx

import (
	"fmt"
	"math"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// known is a tensor whose elements the importer knows: an initializer, a
// Constant, or what it computed from them. Shape arithmetic keeps sizes
// that are symbols (the Shape of an input with a dim_param), so an
// exporter's Shape -> Gather -> Concat -> Reshape chain becomes a reshape
// to [S, 12, 64] rather than an error.
type known struct {
	dtype ast.DType
	shape []int64
	f     []float64    // the elements of a float or bool tensor
	i     []int64      // the elements of an integer tensor
	sym   []fusion.Dim // an integer tensor's elements as sizes, where some are symbolic; nil when all are in i
}

func (k *known) len() int {
	if k.dtype.IsInt() {
		return len(k.i)
	}
	return len(k.f)
}

// dim returns element j as a size.
func (k *known) dim(j int) fusion.Dim {
	if k.sym != nil {
		return k.sym[j]
	}
	if k.dtype.IsInt() {
		return fusion.Const(k.i[j])
	}
	return fusion.Const(int64(k.f[j]))
}

// symbolic reports whether some element is a symbolic size.
func (k *known) symbolic() bool { return k.sym != nil }

// value returns element j as a float64 (an integer's value may round).
func (k *known) value(j int) float64 {
	if k.dtype.IsInt() {
		return float64(k.i[j])
	}
	return k.f[j]
}

// elems is the number of elements of a shape (-1 when it overflows).
func elems(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		if d < 0 || (d > 0 && n > math.MaxInt64/d) {
			return -1
		}
		n *= d
	}
	return n
}

// newFloats returns a known float (or bool) tensor.
func newFloats(dt ast.DType, shape []int64, f []float64) *known {
	return &known{dtype: dt, shape: shape, f: f}
}

// newInts returns a known integer tensor.
func newInts(dt ast.DType, shape []int64, i []int64) *known {
	return &known{dtype: dt, shape: shape, i: i}
}

// newDims returns a known integer tensor of sizes, symbolic or not.
func newDims(dt ast.DType, shape []int64, d []fusion.Dim) *known {
	k := &known{dtype: dt, shape: shape, i: make([]int64, len(d))}
	for j, x := range d {
		v, ok := x.IsConst()
		if !ok {
			k.sym = d
			continue
		}
		k.i[j] = v
	}
	return k
}

// gatherElems returns the tensor of the given shape whose element j is
// element at(j) of k.
func (k *known) gatherElems(shape []int64, n int, at func(j int) int) *known {
	out := &known{dtype: k.dtype, shape: shape}
	switch {
	case k.sym != nil:
		d := make([]fusion.Dim, n)
		for j := range d {
			d[j] = k.sym[at(j)]
		}
		return newDims(k.dtype, shape, d)
	case k.dtype.IsInt():
		out.i = make([]int64, n)
		for j := range out.i {
			out.i[j] = k.i[at(j)]
		}
	default:
		out.f = make([]float64, n)
		for j := range out.f {
			out.f[j] = k.f[at(j)]
		}
	}
	return out
}

// reshaped returns k with another shape of as many elements.
func (k *known) reshaped(shape []int64) *known {
	c := *k
	c.shape = shape
	return &c
}

// strides returns row-major strides of shape.
func strides(shape []int64) []int64 {
	s := make([]int64, len(shape))
	n := int64(1)
	for j := len(shape) - 1; j >= 0; j-- {
		s[j] = n
		n *= shape[j]
	}
	return s
}

// transposed returns k with its axes permuted: axis j of the result is
// axis perm[j] of k.
func (k *known) transposed(perm []int) *known {
	shape := make([]int64, len(perm))
	for j, p := range perm {
		shape[j] = k.shape[p]
	}
	in, out := strides(k.shape), strides(shape)
	n := k.len()
	return k.gatherElems(shape, n, func(j int) int {
		src, rest := int64(0), int64(j)
		for a := range shape {
			idx := rest / out[a]
			rest %= out[a]
			src += idx * in[perm[a]]
		}
		return int(src)
	})
}

// toDType converts k's elements to dt as ONNX's Cast does (floats to
// integers truncate toward zero).
func (k *known) toDType(dt ast.DType) (*known, error) {
	if dt == k.dtype {
		return k, nil
	}
	n := k.len()
	if dt.IsInt() {
		if k.dtype.IsInt() {
			c := *k
			c.dtype = dt
			if dt == ast.Int32 {
				c.i = make([]int64, n)
				for j, v := range k.i {
					c.i[j] = int64(int32(v))
				}
				if k.sym != nil {
					return nil, fmt.Errorf("cannot cast symbolic sizes to int32")
				}
			}
			return &c, nil
		}
		out := make([]int64, n)
		for j, v := range k.f {
			if math.IsNaN(v) || math.Abs(v) >= 1<<63 {
				return nil, fmt.Errorf("cannot cast %v to %s", v, dt)
			}
			out[j] = int64(v)
			if dt == ast.Int32 {
				out[j] = int64(int32(out[j]))
			}
		}
		return newInts(dt, k.shape, out), nil
	}
	if k.sym != nil {
		return nil, fmt.Errorf("cannot cast symbolic sizes to %s", dt)
	}
	out := make([]float64, n)
	for j := range out {
		v := k.value(j)
		switch dt {
		case ast.Bool:
			if v != 0 {
				v = 1
			}
		case ast.Float32:
			v = float64(float32(v))
		case ast.Float16:
			v = ast.Float16Value(ast.Float16Bits(v))
		case ast.BFloat16:
			v = ast.BFloat16Value(ast.BFloat16Bits(v))
		}
		out[j] = v
	}
	return newFloats(dt, k.shape, out), nil
}

// graphData returns k's elements as a fusion constant holds them.
func (k *known) graphData() ([]float64, error) {
	if k.sym != nil {
		return nil, fmt.Errorf("its elements are sizes that are only known at run time (%s)", fmtDims(k.sym))
	}
	if !k.dtype.IsInt() {
		return k.f, nil
	}
	out := make([]float64, len(k.i))
	for j, v := range k.i {
		if v > 1<<53 || v < -(1<<53) {
			return nil, fmt.Errorf("element %d (%d) is beyond the ±2^53 a graph's int64 constant holds", j, v)
		}
		out[j] = float64(v)
	}
	return out, nil
}

func fmtDims(ds []fusion.Dim) string {
	s := "["
	for j, d := range ds {
		if j > 0 {
			s += ", "
		}
		s += d.String()
	}
	return s + "]"
}
