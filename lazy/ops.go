package lazy

import (
	"fmt"
	"math"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// The operators, one method each (package fusion's documentation gives
// their exact semantics). Element-wise binary operators broadcast by
// numpy's rules; axes may be negative (from the end) where fusion takes
// them so.

func (t *Tensor) unary(op string) *Tensor {
	return t.apply(op, fusion.Attrs{})
}

func (t *Tensor) binary(op string, u *Tensor) *Tensor {
	return t.apply(op, fusion.Attrs{}, u)
}

// apply records op on t and operands.
func (t *Tensor) apply(op string, a fusion.Attrs, operands ...*Tensor) *Tensor {
	if t == nil || t.dev == nil {
		return nilTensor(op)
	}
	return t.dev.record(op, a, append([]*Tensor{t}, operands...)...)
}

// usable reports whether t can take part in an operation (else the
// operation's result carries the reason, made by nilTensor or t itself).
func (t *Tensor) usable() bool { return t != nil && t.dev != nil && t.err == nil }

// nilTensor is the result of an operation on a nil tensor.
func nilTensor(op string) *Tensor {
	return &Tensor{dev: &Device{}, err: fmt.Errorf("lazy: %s of a nil tensor (%s)", op, caller())}
}

func (t *Tensor) Neg() *Tensor      { return t.unary("neg") }
func (t *Tensor) Abs() *Tensor      { return t.unary("abs") }
func (t *Tensor) Relu() *Tensor     { return t.unary("relu") }
func (t *Tensor) Exp() *Tensor      { return t.unary("exp") }
func (t *Tensor) Log() *Tensor      { return t.unary("log") }
func (t *Tensor) Sqrt() *Tensor     { return t.unary("sqrt") }
func (t *Tensor) Rsqrt() *Tensor    { return t.unary("rsqrt") }
func (t *Tensor) Tanh() *Tensor     { return t.unary("tanh") }
func (t *Tensor) Sigmoid() *Tensor  { return t.unary("sigmoid") }
func (t *Tensor) Erf() *Tensor      { return t.unary("erf") }
func (t *Tensor) Silu() *Tensor     { return t.unary("silu") }
func (t *Tensor) Softplus() *Tensor { return t.unary("softplus") }
func (t *Tensor) Floor() *Tensor    { return t.unary("floor") }
func (t *Tensor) Ceil() *Tensor     { return t.unary("ceil") }
func (t *Tensor) Sin() *Tensor      { return t.unary("sin") }
func (t *Tensor) Cos() *Tensor      { return t.unary("cos") }

// Round rounds to the nearest integer value, halves to the even one.
func (t *Tensor) Round() *Tensor { return t.unary("round") }

// Identity is a copy of t (a new tensor computed from it).
func (t *Tensor) Identity() *Tensor { return t.unary("identity") }

// Gelu is the exact GELU, x·Φ(x).
func (t *Tensor) Gelu() *Tensor { return t.unary("gelu") }

// GeluTanh is GELU's tanh approximation.
func (t *Tensor) GeluTanh() *Tensor {
	return t.apply("gelu", fusion.Attrs{Approximate: "tanh"})
}

func (t *Tensor) Add(u *Tensor) *Tensor { return t.binary("add", u) }
func (t *Tensor) Sub(u *Tensor) *Tensor { return t.binary("sub", u) }
func (t *Tensor) Mul(u *Tensor) *Tensor { return t.binary("mul", u) }
func (t *Tensor) Div(u *Tensor) *Tensor { return t.binary("div", u) }
func (t *Tensor) Max(u *Tensor) *Tensor { return t.binary("max", u) }
func (t *Tensor) Min(u *Tensor) *Tensor { return t.binary("min", u) }
func (t *Tensor) Pow(u *Tensor) *Tensor { return t.binary("pow", u) }

// Comparisons: bool tensors.
func (t *Tensor) Equal(u *Tensor) *Tensor        { return t.binary("equal", u) }
func (t *Tensor) NotEqual(u *Tensor) *Tensor     { return t.binary("not_equal", u) }
func (t *Tensor) Less(u *Tensor) *Tensor         { return t.binary("less", u) }
func (t *Tensor) LessEqual(u *Tensor) *Tensor    { return t.binary("less_equal", u) }
func (t *Tensor) Greater(u *Tensor) *Tensor      { return t.binary("greater", u) }
func (t *Tensor) GreaterEqual(u *Tensor) *Tensor { return t.binary("greater_equal", u) }

// AddScalar, SubScalar, MulScalar and DivScalar combine t with a scalar
// of t's dtype.
func (t *Tensor) AddScalar(v float64) *Tensor { return t.withScalar("add", v) }
func (t *Tensor) SubScalar(v float64) *Tensor { return t.withScalar("sub", v) }
func (t *Tensor) MulScalar(v float64) *Tensor { return t.withScalar("mul", v) }
func (t *Tensor) DivScalar(v float64) *Tensor { return t.withScalar("div", v) }

func (t *Tensor) withScalar(op string, v float64) *Tensor {
	if !t.usable() {
		return t.apply(op, fusion.Attrs{})
	}
	return t.binary(op, t.dev.ScalarOf(t.dtype, v))
}

// Where selects a where cond is true, b elsewhere (the three broadcast).
func Where(cond, a, b *Tensor) *Tensor {
	return cond.apply("where", fusion.Attrs{}, a, b)
}

// Cast converts the elements to dtype dt.
func (t *Tensor) Cast(dt ast.DType) *Tensor {
	return t.apply("cast", fusion.Attrs{DType: dt.String()})
}

// MatMul is the matrix product [..., M, K] × [..., K, N], batch
// dimensions broadcast.
func (t *Tensor) MatMul(u *Tensor) *Tensor { return t.binary("matmul", u) }

// ConvOptions are a convolution's attributes; a nil list takes fusion's
// default (strides and dilations 1, no padding), Groups 0 is 1.
type ConvOptions struct {
	Strides   []int
	Pads      []int // the begins of each spatial axis, then the ends
	Dilations []int
	Groups    int
	// ChannelsLast takes x as [N, spatial..., C] and w as
	// [kernel..., C/groups, F]; the result is [N, out..., F].
	ChannelsLast bool
}

// Conv convolves t ([N, C, spatial...], one to three spatial axes) with
// filters w ([F, C/groups, kernel...]).
func (t *Tensor) Conv(w *Tensor, o ConvOptions) *Tensor {
	op := "conv2d"
	switch t.Rank() {
	case 3:
		op = "conv1d"
	case 5:
		op = "conv3d"
	}
	a := fusion.Attrs{Strides: ints64(o.Strides), Pads: ints64(o.Pads), Dilations: ints64(o.Dilations)}
	if o.Groups != 0 {
		a.Groups = int64Ptr(int64(o.Groups))
	}
	if o.ChannelsLast {
		a.Layout = "NHWC"
		switch op {
		case "conv1d":
			a.Layout = "NWC"
		case "conv3d":
			a.Layout = "NDHWC"
		}
	}
	return t.apply(op, a, w)
}

// PoolOptions are a 2-d pooling's attributes: the window (required), its
// strides (default 1), padding (begins then ends; default none),
// dilations (max pooling only).
type PoolOptions struct {
	Kernel    []int
	Strides   []int
	Pads      []int
	Dilations []int
	// CountIncludePad makes an average divide by the whole window,
	// padding included.
	CountIncludePad bool
	// ChannelsLast takes t as [N, H, W, C].
	ChannelsLast bool
}

// MaxPool2d is a 2-d max pooling of t ([N, C, H, W]).
func (t *Tensor) MaxPool2d(o PoolOptions) *Tensor { return t.pool("max_pool2d", o) }

// AvgPool2d is a 2-d average pooling of t ([N, C, H, W]).
func (t *Tensor) AvgPool2d(o PoolOptions) *Tensor { return t.pool("avg_pool2d", o) }

func (t *Tensor) pool(op string, o PoolOptions) *Tensor {
	a := fusion.Attrs{KernelShape: ints64(o.Kernel), Strides: ints64(o.Strides), Pads: ints64(o.Pads), Dilations: ints64(o.Dilations), CountIncludePad: o.CountIncludePad}
	if o.ChannelsLast {
		a.Layout = "NHWC"
	}
	return t.apply(op, a)
}

// Sum, Mean, MaxOf and MinOf reduce over axes (all of them when none are
// given), dropping them.
func (t *Tensor) Sum(axes ...int) *Tensor   { return t.reduce("reduce_sum", axes, false) }
func (t *Tensor) Mean(axes ...int) *Tensor  { return t.reduce("reduce_mean", axes, false) }
func (t *Tensor) MaxOf(axes ...int) *Tensor { return t.reduce("reduce_max", axes, false) }
func (t *Tensor) MinOf(axes ...int) *Tensor { return t.reduce("reduce_min", axes, false) }

// SumKeep, MeanKeep, MaxKeep and MinKeep reduce over axes keeping them as
// dimensions of size 1.
func (t *Tensor) SumKeep(axes ...int) *Tensor  { return t.reduce("reduce_sum", axes, true) }
func (t *Tensor) MeanKeep(axes ...int) *Tensor { return t.reduce("reduce_mean", axes, true) }
func (t *Tensor) MaxKeep(axes ...int) *Tensor  { return t.reduce("reduce_max", axes, true) }
func (t *Tensor) MinKeep(axes ...int) *Tensor  { return t.reduce("reduce_min", axes, true) }

func (t *Tensor) reduce(op string, axes []int, keep bool) *Tensor {
	if t.usable() && t.Rank() == 0 && len(axes) == 0 {
		return t.Identity() // all of a scalar's no axes: itself
	}
	return t.apply(op, fusion.Attrs{Axes: axes, KeepDims: keep})
}

// finite refuses a number fusion's attributes cannot hold (they are
// JSON numbers).
func (t *Tensor) finite(op, what string, v float64) *Tensor {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		if !t.usable() {
			return t.apply(op, fusion.Attrs{})
		}
		return t.dev.errTensor(fmt.Errorf("lazy: %s: %s is %v: attributes are finite numbers (%s)", op, what, v, caller()))
	}
	return nil
}

// Softmax normalizes exponentials along axis.
func (t *Tensor) Softmax(axis int) *Tensor {
	return t.apply("softmax", fusion.Attrs{Axis: intPtr(axis)})
}

// LayerNorm normalizes over the axes from axis to the last, then scales
// and shifts (either may be nil).
func (t *Tensor) LayerNorm(scale, shift *Tensor, axis int, epsilon float64) *Tensor {
	if bad := t.finite("layernorm", "epsilon", epsilon); bad != nil {
		return bad
	}
	var ins []*Tensor
	if scale != nil {
		ins = append(ins, scale)
		if shift != nil {
			ins = append(ins, shift)
		}
	} else if shift != nil && t.usable() {
		ins = append(ins, t.dev.Full(t.dtype, 1, t.Shape()[normAxis(axis, t.Rank()):]...), shift)
	}
	return t.apply("layernorm", fusion.Attrs{Axis: intPtr(axis), Epsilon: floatPtr(epsilon)}, ins...)
}

// normAxis resolves a negative axis; out of range it is left for the
// operator's check to refuse.
func normAxis(axis, rank int) int {
	if axis < 0 && axis+rank >= 0 {
		return axis + rank
	}
	return max(min(axis, rank), 0)
}

// RMSNorm divides by the root mean square over the last axis, then
// scales by weight (nil: none).
func (t *Tensor) RMSNorm(weight *Tensor, epsilon float64) *Tensor {
	if bad := t.finite("rms_norm", "epsilon", epsilon); bad != nil {
		return bad
	}
	var ins []*Tensor
	if weight != nil {
		ins = append(ins, weight)
	}
	return t.apply("rms_norm", fusion.Attrs{Epsilon: floatPtr(epsilon)}, ins...)
}

// BatchNorm is inference batch normalization per channel (axis 1).
func (t *Tensor) BatchNorm(scale, shift, mean, variance *Tensor, epsilon float64) *Tensor {
	if bad := t.finite("batch_norm", "epsilon", epsilon); bad != nil {
		return bad
	}
	return t.apply("batch_norm", fusion.Attrs{Epsilon: floatPtr(epsilon)}, scale, shift, mean, variance)
}

// Reshape gives t a new shape of as many elements; one dimension may be
// -1 (inferred).
func (t *Tensor) Reshape(shape ...int) *Tensor {
	return t.apply("reshape", fusion.Attrs{Shape: jsonDims(shape)})
}

// BroadcastTo broadcasts t to shape by numpy's rules.
func (t *Tensor) BroadcastTo(shape ...int) *Tensor {
	for i, d := range shape {
		if d < 0 && t.usable() {
			return t.dev.errTensor(fmt.Errorf("lazy: broadcast_to: dimension %d of the shape is %d (%s)", i, d, caller()))
		}
	}
	return t.apply("broadcast_to", fusion.Attrs{Shape: jsonDims(shape)})
}

// Transpose permutes t's axes (no permutation: reversed).
func (t *Tensor) Transpose(perm ...int) *Tensor {
	return t.apply("transpose", fusion.Attrs{Perm: perm})
}

// Slice takes [start, end) with step along each of axes (steps nil: 1).
// An end at or past the axis's size is "to the end" (x[a:] whatever the
// size), so that the same slice at other sizes is the same trace.
func (t *Tensor) Slice(axes, starts, ends, steps []int) *Tensor {
	e := ints64(ends)
	if t.usable() && len(axes) == len(ends) && (steps == nil || len(steps) == len(ends)) {
		for i, a := range axes {
			if a < 0 {
				a += t.Rank()
			}
			if a >= 0 && a < t.Rank() && e[i] >= t.shape[a] && (steps == nil || steps[i] > 0) {
				e[i] = toTheEnd
			}
		}
	}
	return t.apply("slice", fusion.Attrs{Axes: axes, Starts: ints64(starts), Ends: e, Steps: ints64(steps)})
}

// toTheEnd is the end of a slice that runs to the end of its axis
// (package fusion's form).
const toTheEnd = 1 << 40

// Pad pads t: pads lists the begins of every axis, then the ends; the
// border is value.
func (t *Tensor) Pad(pads []int, value float64) *Tensor {
	if bad := t.finite("pad", "the value", value); bad != nil {
		return bad
	}
	return t.apply("pad", fusion.Attrs{Pads: ints64(pads), Value: floatPtr(value)})
}

// Gather takes the entries of t along axis at the indices idx (int32 or
// int64; negative from the end); an index out of range is the barrier's
// error.
func (t *Tensor) Gather(idx *Tensor, axis int) *Tensor {
	return t.apply("gather", fusion.Attrs{Axis: intPtr(axis)}, idx)
}

// Iota is a tensor of t's shape whose elements are their index along
// axis, of type dt.
func (t *Tensor) Iota(axis int, dt ast.DType) *Tensor {
	return t.apply("iota", fusion.Attrs{Axis: intPtr(axis), DType: dt.String()})
}

// Concat joins tensors along axis.
func Concat(axis int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		return nilTensor("concat")
	}
	return ts[0].apply("concat", fusion.Attrs{Axis: intPtr(axis)}, ts[1:]...)
}
