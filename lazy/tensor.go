package lazy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// Tensor is a value of a device: either computed (its elements are held
// in a Go slice) or pending (the operation that will compute it and its
// operands, recorded and not yet run). Its dtype and shape are known at
// once, whatever its state: they are inferred when the operation is
// recorded, and a mistake (shapes that do not broadcast, an axis out of
// range) is the tensor's error, reported by Err and by every barrier of a
// tensor computed from it.
//
// A Tensor is immutable: operations return new tensors. Its zero value
// is not usable; tensors come from a Device (From, Weight, Scalar, Zeros)
// or from operations.
type Tensor struct {
	dev   *Device
	dtype ast.DType
	shape []int64
	err   error

	// Guarded by dev.mu: a pending tensor has a node; a barrier replaces
	// it with data.
	node *node
	data any // a slice of the dtype's Go type, row-major
	// kind says how a computed tensor enters a compiled trace.
	kind leafKind
	id   uint64 // a weight's identity
	// seen and at are a capture's scratch (the capture's epoch, and the
	// tensor's place in its trace), guarded by dev.mu.
	seen uint64
	at   ref
	// dynamic marks the axes of an input whose size varies from call
	// to call (Dynamic), bit k for axis k.
	dynamic uint32
}

type leafKind uint8

const (
	// an input of the compiled module, bound per call
	leafInput leafKind = iota
	// a weight: a constant of the module, found again by its identity
	// and folded (packed) when the module is built
	leafWeight
	// a small constant (at most smallConstant elements), keyed by value
	leafSmall
)

// smallConstant is the most elements a constant keyed by its value may
// have (a scalar, a short vector).
const smallConstant = 16

// node is a recorded operation.
type node struct {
	op     string
	attrs  fusion.Attrs
	key    string  // op and attributes without the shape attribute
	shape  []int64 // a reshape's or broadcast_to's shape attribute (-1: inferred)
	inputs []*Tensor
}

// DType is the tensor's element type.
func (t *Tensor) DType() ast.DType {
	if t == nil {
		return ast.Float32
	}
	return t.dtype
}

// Shape is the tensor's shape (a copy).
func (t *Tensor) Shape() []int {
	if t == nil {
		return nil
	}
	out := make([]int, len(t.shape))
	for i, d := range t.shape {
		out[i] = int(d)
	}
	return out
}

// Rank is the number of the tensor's dimensions.
func (t *Tensor) Rank() int {
	if t == nil {
		return 0
	}
	return len(t.shape)
}

// Len is the number of the tensor's elements.
func (t *Tensor) Len() int {
	if t == nil {
		return 0
	}
	return int(elements(t.shape))
}

// Err is the error of the operation that made the tensor or of one of its
// operands, if any. It runs nothing.
func (t *Tensor) Err() error {
	if t == nil {
		return errors.New("lazy: a nil tensor")
	}
	return t.err
}

// Device is the device the tensor belongs to.
func (t *Tensor) Device() *Device {
	if t == nil {
		return nil
	}
	return t.dev
}

// Pending reports whether the tensor is still to be computed.
func (t *Tensor) Pending() bool {
	if t == nil || t.dev == nil {
		return false
	}
	t.dev.mu.Lock()
	defer t.dev.mu.Unlock()
	return t.node != nil
}

// Data is a barrier: it computes the tensor (if pending) and returns a
// copy of its elements, a slice of its dtype's Go type ([]float32 for
// float32, []int64, []bool, ...; []uint16 holding the encodings for
// float16 and bfloat16) in row-major order.
func (t *Tensor) Data() (any, error) {
	if t == nil {
		return nil, errors.New("lazy: Data of a nil tensor")
	}
	if t.dev == nil {
		return nil, errors.New("lazy: Data of a zero Tensor (tensors come from a Device)")
	}
	if err := t.dev.Sync(t); err != nil {
		return nil, err
	}
	t.dev.mu.Lock()
	defer t.dev.mu.Unlock()
	switch v := t.data.(type) {
	case []float32:
		return slices.Clone(v), nil
	case []float64:
		return slices.Clone(v), nil
	case []int32:
		return slices.Clone(v), nil
	case []int64:
		return slices.Clone(v), nil
	case []bool:
		return slices.Clone(v), nil
	case []uint16:
		return slices.Clone(v), nil
	}
	return nil, fmt.Errorf("lazy: tensor of %s holds %T", t.dtype, t.data)
}

// Float32s is Data for a float32 tensor.
func (t *Tensor) Float32s() ([]float32, error) {
	if t != nil && t.err == nil && t.dtype != ast.Float32 {
		return nil, fmt.Errorf("lazy: Float32s of a %s tensor (Data returns any dtype's elements)", t.dtype)
	}
	v, err := t.Data()
	if err != nil {
		return nil, err
	}
	return v.([]float32), nil
}

// Item is a barrier: the value of a tensor of one element, as a float64
// (true is 1).
func (t *Tensor) Item() (float64, error) {
	if t != nil && t.err == nil && elements(t.shape) != 1 {
		return 0, fmt.Errorf("lazy: Item of a tensor of shape %v (%d elements, not 1)", t.shape, elements(t.shape))
	}
	v, err := t.Data()
	if err != nil {
		return 0, err
	}
	switch t.dtype {
	case ast.Float16:
		return ast.Float16Value(v.([]uint16)[0]), nil
	case ast.BFloat16:
		return ast.BFloat16Value(v.([]uint16)[0]), nil
	}
	return element(v, 0), nil
}

// String is a barrier: the tensor's dtype, shape and (up to 64 of) its
// elements, or its error.
func (t *Tensor) String() string {
	if t == nil {
		return "lazy.Tensor(nil)"
	}
	v, err := t.Data()
	if err != nil {
		return fmt.Sprintf("lazy.Tensor(%s %v, error: %v)", t.dtype, t.shape, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lazy.Tensor(%s %v: [", t.dtype, t.shape)
	n := int(elements(t.shape))
	for i := range min(n, 64) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, formatElement(v, i))
	}
	if n > 64 {
		fmt.Fprintf(&b, " ... (%d more)", n-64)
	}
	b.WriteString("])")
	return b.String()
}

// element returns the i-th element of a data slice as a float64.
func element(v any, i int) float64 {
	switch v := v.(type) {
	case []float32:
		return float64(v[i])
	case []float64:
		return v[i]
	case []int32:
		return float64(v[i])
	case []int64:
		return float64(v[i])
	case []bool:
		if v[i] {
			return 1
		}
		return 0
	}
	return math.NaN()
}

// formatElement prints the i-th element of a data slice.
func formatElement(v any, i int) any {
	switch v := v.(type) {
	case []float32:
		return v[i]
	case []float64:
		return v[i]
	case []int32:
		return v[i]
	case []int64:
		return v[i]
	case []bool:
		return v[i]
	case []uint16:
		return fmt.Sprintf("0x%04x", v[i])
	}
	return "?"
}

// elements is the number of elements of a shape.
func elements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// errTensor is a tensor that carries only an error.
func (d *Device) errTensor(err error) *Tensor {
	if d == nil {
		d = &Device{}
	}
	return &Tensor{dev: d, err: err}
}

// From returns a computed tensor holding a copy of data, a slice of
// float32, float64, int32, int64 or bool with as many elements as shape
// says. It enters each compiled trace as an input, so the same trace runs
// on other data of its shape without compiling again.
func (d *Device) From(data any, shape ...int) *Tensor {
	t, err := d.leaf(data, shape)
	if err != nil {
		return d.errTensor(fmt.Errorf("lazy: From: %w", err))
	}
	return t
}

// FromFloat32s is From for float32 data.
func (d *Device) FromFloat32s(data []float32, shape ...int) *Tensor { return d.From(data, shape...) }

// Weight is From for a value that stays the same across calls (a model's
// parameter): it enters each compiled trace as a constant of the module,
// known by its identity, so that it is packed once when the module is
// built (module.Options.PlainWeights is not set) instead of per call. The
// data is copied; the tensor stays the same weight as long as it lives.
// Make a weight once, outside the loop that uses it: each Weight is a
// new constant, so a Weight made per call compiles each call's trace
// anew. Data that changes from call to call is From's.
func (d *Device) Weight(data any, shape ...int) *Tensor {
	t, err := d.leaf(data, shape)
	if err != nil {
		return d.errTensor(fmt.Errorf("lazy: Weight: %w", err))
	}
	if t.dtype == ast.Float16 || t.dtype == ast.BFloat16 {
		return d.errTensor(errors.New("lazy: Weight: float16 and bfloat16 weights are not supported; give them as From inputs"))
	}
	if t.Len() == 0 {
		return t // nothing to pack: an input like any other
	}
	d.mu.Lock()
	d.weights++
	t.kind, t.id = leafWeight, d.weights
	d.mu.Unlock()
	return t
}

// Scalar returns a float32 tensor of shape [] holding v; it enters a
// trace as a constant keyed by its value, so a scalar that changes every
// call (1/length) makes a trace per value: give such a value with From.
func (d *Device) Scalar(v float64) *Tensor { return d.ScalarOf(ast.Float32, v) }

// ScalarOf returns a tensor of shape [] and element type dt holding v.
func (d *Device) ScalarOf(dt ast.DType, v float64) *Tensor {
	var data any
	switch dt {
	case ast.Float32:
		data = []float32{float32(v)}
	case ast.Float64:
		data = []float64{v}
	case ast.Int32:
		data = []int32{int32(v)}
	case ast.Int64:
		data = []int64{int64(v)}
	case ast.Bool:
		data = []bool{v != 0}
	default:
		return d.errTensor(fmt.Errorf("lazy: ScalarOf: no scalars of %s", dt))
	}
	if msg := scalarError(dt, v); msg != "" {
		return d.errTensor(fmt.Errorf("lazy: ScalarOf: %v is no %s: %s (%s)", v, dt, msg, caller()))
	}
	t, err := d.leaf(data, nil)
	if err != nil {
		return d.errTensor(err)
	}
	t.kind = leafSmall
	return t
}

// scalarError says why v is no value of dt, if it is not.
func scalarError(dt ast.DType, v float64) string {
	switch dt {
	case ast.Float32:
		if math.Abs(v) > math.MaxFloat32 && !math.IsInf(v, 0) {
			return "out of float32's range"
		}
	case ast.Int32, ast.Int64:
		if v != math.Trunc(v) || math.IsInf(v, 0) {
			return "not a whole number"
		}
		lo, hi := float64(math.MinInt32), float64(math.MaxInt32)
		if dt == ast.Int64 {
			lo, hi = -(1 << 63), 1<<63-1024 // the float64s below 2^63
		}
		if v < lo || v > hi {
			return "out of range"
		}
	}
	return ""
}

// Zeros returns a pending tensor of zeros of the given type and shape.
func (d *Device) Zeros(dt ast.DType, shape ...int) *Tensor {
	return d.Full(dt, 0, shape...)
}

// Full returns a pending tensor of the given type and shape, every
// element v.
func (d *Device) Full(dt ast.DType, v float64, shape ...int) *Tensor {
	return d.ScalarOf(dt, v).BroadcastTo(shape...)
}

// leaf makes a computed tensor of a copy of data.
func (d *Device) leaf(data any, shape []int) (*Tensor, error) {
	if d == nil {
		return nil, errors.New("a nil Device")
	}
	t := &Tensor{dev: d, shape: ints64(shape)}
	if t.shape == nil {
		t.shape = []int64{}
	}
	if len(shape) > 16 {
		return nil, fmt.Errorf("rank %d is more than 16", len(shape))
	}
	if err := sizeError(t.shape); err != nil {
		return nil, err
	}
	n := elements(t.shape)
	var have int
	switch v := data.(type) {
	case []float32:
		t.dtype, t.data, have = ast.Float32, slices.Clone(v), len(v)
	case []float64:
		t.dtype, t.data, have = ast.Float64, slices.Clone(v), len(v)
	case []int32:
		t.dtype, t.data, have = ast.Int32, slices.Clone(v), len(v)
	case []int64:
		t.dtype, t.data, have = ast.Int64, slices.Clone(v), len(v)
	case []bool:
		t.dtype, t.data, have = ast.Bool, slices.Clone(v), len(v)
	default:
		return nil, fmt.Errorf("data of type %T: want a slice of float32, float64, int32, int64 or bool", data)
	}
	if int64(have) != n {
		return nil, fmt.Errorf("shape %v needs %d elements, the data has %d", shape, n, have)
	}
	return t, nil
}

// Dynamic returns t (a tensor made by From, or a computed result) with
// axes marked as sizes that vary from call to call (a sequence length, a
// batch): the first trace that reads it is compiled with those sizes
// symbolic, for the bucket of sizes they fall in, so that a later call
// at another size of the bucket compiles nothing. Without marks a device
// finds the varying sizes itself, when a trace comes back at other
// sizes, at the cost of one compilation more.
func (t *Tensor) Dynamic(axes ...int) *Tensor {
	if !t.usable() {
		return t.apply("dynamic", fusion.Attrs{})
	}
	t.dev.mu.Lock()
	defer t.dev.mu.Unlock()
	if t.node != nil || t.kind != leafInput {
		return t.dev.errTensor(fmt.Errorf("lazy: Dynamic: only an input's sizes vary (a tensor made by From or computed), not a pending tensor's, a weight's or a scalar's (%s)", caller()))
	}
	u := *t
	for _, a := range axes {
		if a < 0 {
			a += len(t.shape)
		}
		if a < 0 || a >= len(t.shape) {
			return t.dev.errTensor(fmt.Errorf("lazy: Dynamic: axis %d is out of range for rank %d (%s)", a, len(t.shape), caller()))
		}
		u.dynamic |= 1 << a
	}
	return &u
}

// Package-level forms on the Default device.

// From is Device.From on the Default device.
func From(data any, shape ...int) *Tensor {
	return onDefault(func(d *Device) *Tensor { return d.From(data, shape...) })
}

// FromFloat32s is Device.FromFloat32s on the Default device.
func FromFloat32s(data []float32, shape ...int) *Tensor { return From(data, shape...) }

// Weight is Device.Weight on the Default device.
func Weight(data any, shape ...int) *Tensor {
	return onDefault(func(d *Device) *Tensor { return d.Weight(data, shape...) })
}

// Scalar is Device.Scalar on the Default device.
func Scalar(v float64) *Tensor { return onDefault(func(d *Device) *Tensor { return d.Scalar(v) }) }

// Zeros is Device.Zeros on the Default device.
func Zeros(dt ast.DType, shape ...int) *Tensor {
	return onDefault(func(d *Device) *Tensor { return d.Zeros(dt, shape...) })
}

// onDefault runs make on the Default device, or returns its error as a
// tensor's.
func onDefault(make func(*Device) *Tensor) *Tensor {
	d, err := Default()
	if err != nil {
		return &Tensor{dev: &Device{}, err: err}
	}
	return make(d)
}
