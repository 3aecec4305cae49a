package lazy

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"weak"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// Recording an operation: its operands' errors are its own; its dtype
// and shape are inferred by package fusion's rules (a graph of the one
// operator, built once per operator, attributes and operand shapes and
// cached), so that a mistake is reported where the program made it.

// inferred is the result of shape inference for one operator at one set
// of operand shapes.
type inferred struct {
	dtype ast.DType
	shape []int64
	err   error
}

// maxShapes bounds the shape-inference cache of a device.
const maxShapes = 1 << 16

// Op records operator op of package fusion (its documentation lists
// them with their attributes) applied to inputs. The named methods of
// Tensor are the usual way; Op reaches every operator.
func Op(op string, attrs fusion.Attrs, inputs ...*Tensor) *Tensor {
	if len(inputs) == 0 {
		return &Tensor{dev: &Device{}, err: fmt.Errorf("lazy: %s: no input tensor (%s)", op, caller())}
	}
	return inputs[0].apply(op, attrs, inputs[1:]...)
}

// record appends op applied to inputs to the trace and returns its
// (pending) result.
func (d *Device) record(op string, attrs fusion.Attrs, inputs ...*Tensor) *Tensor {
	for i, in := range inputs {
		switch {
		case in == nil:
			return d.errTensor(fmt.Errorf("lazy: %s: operand %d is nil (%s)", op, i, caller()))
		case in.err != nil:
			return d.errTensor(in.err)
		case in.dev == nil:
			return d.errTensor(fmt.Errorf("lazy: %s: operand %d is no tensor of a device (a zero Tensor) (%s)", op, i, caller()))
		case in.dev != d:
			return d.errTensor(fmt.Errorf("lazy: %s: operand %d belongs to another device (%s)", op, i, caller()))
		}
	}
	if d.shapes == nil {
		return d.errTensor(fmt.Errorf("lazy: %s: the device was not made by NewDevice (%s)", op, caller()))
	}
	n := &node{op: op, attrs: attrs, inputs: inputs}
	if op == "reshape" || op == "broadcast_to" {
		n.shape = make([]int64, len(attrs.Shape))
		for i, s := range attrs.Shape {
			if s.Infer {
				n.shape[i] = -1
				continue
			}
			v, ok := s.Dim.IsConst()
			if !ok {
				return d.errTensor(fmt.Errorf("lazy: %s: dimension %d of the shape is %s, not a number (%s)", op, i, s, caller()))
			}
			n.shape[i] = v
		}
		attrs.Shape = nil
	}
	kb := make([]byte, 0, 128)
	kb = append(kb, op...)
	kb = append(kb, '{')
	kb = attrs.Append(kb) // fusion's canonical text, as its CSE keys nodes
	kb = append(kb, '}')
	n.key = string(kb)
	kb = appendShape(kb, "s", n.shape)
	for _, in := range inputs {
		kb = appendShape(kb, in.dtype.String(), in.shape)
	}
	key := string(kb)

	d.mu.Lock()
	r, ok := d.shapes[key]
	d.mu.Unlock()
	if !ok {
		r = inferOne(n)
		d.mu.Lock()
		if len(d.shapes) >= maxShapes {
			clear(d.shapes)
		}
		d.shapes[key] = r
		d.mu.Unlock()
	}
	if r.err == nil {
		r.err = sizeError(r.shape)
		if r.err != nil {
			r.err = fmt.Errorf("lazy: %s: %w", op, r.err)
		}
	}
	if r.err != nil {
		return d.errTensor(fmt.Errorf("%w (%s)", r.err, caller()))
	}
	t := &Tensor{dev: d, dtype: r.dtype, shape: r.shape, node: n}
	w := weak.Make(t)
	d.mu.Lock()
	d.stats.Ops++
	d.live = append(d.live, w)
	if len(d.live) >= 2*d.liveKept+1024 {
		d.pruneLive()
	}
	d.mu.Unlock()
	return t
}

// pruneLive drops from the device's list of pending tensors those the
// program dropped and those computed since. The device's lock is held.
func (d *Device) pruneLive() {
	kept := d.live[:0]
	for _, w := range d.live {
		if t := w.Value(); t != nil && t.node != nil {
			kept = append(kept, w)
		}
	}
	clear(d.live[len(kept):])
	d.live, d.liveKept = kept, len(kept)
}

// pending returns the device's pending tensors the program still holds
// (as far as the garbage collector has found out: a tensor dropped but
// not yet collected is among them). The device's lock is held.
func (d *Device) pending() []*Tensor {
	d.pruneLive()
	out := make([]*Tensor, 0, len(d.live))
	for _, w := range d.live {
		if t := w.Value(); t != nil {
			out = append(out, t)
		}
	}
	return out
}

// inferOne infers the dtype and shape of n's result by building a graph
// of n alone.
func inferOne(n *node) inferred {
	b := fusion.NewBuilder("infer")
	ins := make([]*fusion.Tensor, len(n.inputs))
	var operands []string
	for i, in := range n.inputs {
		var err error
		if ins[i], err = b.Input("x"+strconv.Itoa(i), in.dtype, constDims(in.shape)...); err != nil {
			return inferred{err: fmt.Errorf("lazy: %s: operand %d: %v", n.op, i, err)}
		}
		operands = append(operands, fmt.Sprintf("%s%v", in.dtype, in.shape))
	}
	attrs := n.attrs
	y, err := b.Node("y", n.op, attrs, ins...)
	if err != nil {
		var ge *fusion.GraphError
		msg := err.Error()
		if errors.As(err, &ge) {
			msg = ge.Msg
		}
		return inferred{err: fmt.Errorf("lazy: %s of %s: %s", n.op, strings.Join(operands, ", "), msg)}
	}
	r := inferred{dtype: y.DType}
	for k, d := range b.Shape(y) {
		v, ok := d.IsConst()
		if !ok {
			return inferred{err: fmt.Errorf("lazy: %s of %s: dimension %d of the result is %s, not a number", n.op, strings.Join(operands, ", "), k, d)}
		}
		r.shape = append(r.shape, v)
	}
	return r
}

// appendShape appends a dtype and a shape to a key.
func appendShape(b []byte, dtype string, shape []int64) []byte {
	b = append(b, dtype...)
	b = append(b, '[')
	for _, x := range shape {
		b = strconv.AppendInt(b, x, 10)
		b = append(b, ',')
	}
	return append(b, ']')
}

// maxElements is the most elements a tensor may have.
const maxElements = 1 << 40

// sizeError says why a shape is too large for a tensor, if it is: a
// dimension of 2^31 or more, or more than maxElements elements (in any
// order of the dimensions: a zero anywhere makes none).
func sizeError(shape []int64) error {
	n := int64(1)
	for i, d := range shape {
		if d < 0 || d > math.MaxInt32 {
			return fmt.Errorf("dimension %d is %d, out of range [0, 2^31)", i, d)
		}
	}
	if slices.Contains(shape, 0) {
		return nil
	}
	for _, d := range shape {
		if n > maxElements/d {
			return fmt.Errorf("shape %v has more than 2^40 elements", shape)
		}
		n *= d
	}
	return nil
}

// constDims returns a shape as fusion's constant dimensions.
func constDims(shape []int64) []fusion.Dim {
	out := make([]fusion.Dim, len(shape))
	for i, d := range shape {
		out[i] = fusion.Const(d)
	}
	return out
}

// jsonDims returns a shape attribute: -1 is inferred.
func jsonDims(shape []int) []fusion.JSONDim {
	out := make([]fusion.JSONDim, len(shape))
	for i, d := range shape {
		if d == -1 {
			out[i] = fusion.JSONDim{Infer: true}
			continue
		}
		out[i] = fusion.JSONDim{Dim: fusion.Const(int64(d))}
	}
	return out
}

// caller names the first place outside this package on the stack: where
// the program recorded the operation.
func caller() string {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "github.com/loom-go/loom/lazy.") || strings.HasSuffix(f.File, "_test.go") {
			return fmt.Sprintf("%s:%d", shortFile(f.File), f.Line)
		}
		if !more {
			return "?"
		}
	}
}

// shortFile keeps a path's last two elements.
func shortFile(path string) string {
	parts := strings.Split(path, "/")
	return strings.Join(parts[max(len(parts)-2, 0):], "/")
}

// ints64 converts a Go int list.
func ints64(v []int) []int64 {
	if v == nil {
		return nil
	}
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// intPtr, floatPtr and int64Ptr make optional attributes.
func intPtr(v int) *int           { return &v }
func int64Ptr(v int64) *int64     { return &v }
func floatPtr(v float64) *float64 { return &v }
