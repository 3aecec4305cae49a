package onnx

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/onnx/internal/onnxpb"
)

// ctx is what a converter sees of the node it converts.
type ctx struct {
	im   *importer
	n    *onnxpb.NodeProto
	outs []string // loom names given to the outputs, by index
}

// opset is the model's default operator set version.
func (c *ctx) opset() int64 { return c.im.opset }

// has reports whether input j is given (not absent, not "").
func (c *ctx) has(j int) bool { return j < len(c.n.GetInput()) && c.n.GetInput()[j] != "" }

// nin is the number of inputs, absent trailing ones not counted.
func (c *ctx) nin() int { return len(c.n.GetInput()) }

// value returns input j.
func (c *ctx) value(j int) (*value, error) {
	if !c.has(j) {
		return nil, fmt.Errorf("input %d is missing", j)
	}
	return c.im.vals[c.n.GetInput()[j]], nil
}

// tensor returns input j as a tensor of the graph.
func (c *ctx) tensor(j int) (*fusion.Tensor, error) {
	v, err := c.value(j)
	if err != nil {
		return nil, err
	}
	t, err := c.im.tensorOf(v, c.n.GetInput()[j])
	if err != nil {
		return nil, fmt.Errorf("input %d (%q): %v", j, c.n.GetInput()[j], err)
	}
	return t, nil
}

// tensors returns every input as a tensor of the graph.
func (c *ctx) tensors() ([]*fusion.Tensor, error) {
	var ts []*fusion.Tensor
	for j := range c.n.GetInput() {
		if !c.has(j) {
			return nil, fmt.Errorf("input %d is missing", j)
		}
		t, err := c.tensor(j)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// known returns input j's elements, or nil when they are only known at
// run time.
func (c *ctx) known(j int) *known {
	if !c.has(j) {
		return nil
	}
	return c.im.vals[c.n.GetInput()[j]].k
}

// mustKnow returns input j's elements, which the conversion needs at
// import time (a shape, axes, pads).
func (c *ctx) mustKnow(j int, what string) (*known, error) {
	if !c.has(j) {
		return nil, fmt.Errorf("input %d (%s) is missing", j, what)
	}
	k := c.known(j)
	if k == nil {
		return nil, fmt.Errorf("input %d (%s, %q) is computed at run time; loom needs it when the model is imported", j, what, c.n.GetInput()[j])
	}
	return k, nil
}

// ints returns input j's elements as integers (all known, none symbolic).
func (c *ctx) ints(j int, what string) ([]int64, error) {
	k, err := c.mustKnow(j, what)
	if err != nil {
		return nil, err
	}
	if !k.dtype.IsInt() {
		return nil, fmt.Errorf("input %d (%s) is %s, not integers", j, what, k.dtype)
	}
	if k.symbolic() {
		return nil, fmt.Errorf("input %d (%s) is %s, which depends on sizes known only at run time", j, what, fmtDims(k.sym))
	}
	return k.i, nil
}

// shapeOf returns t's shape as inferred so far.
func (c *ctx) shapeOf(t *fusion.Tensor) fusion.Shape { return c.im.b.Shape(t) }

// rankOf returns input j's rank.
func (c *ctx) rank(j int) (int, error) {
	v, err := c.value(j)
	if err != nil {
		return 0, err
	}
	if v.t != nil {
		return len(c.shapeOf(v.t)), nil
	}
	return len(v.k.shape), nil
}

// dims returns input j's shape, from the graph or the known value.
func (c *ctx) dims(j int) ([]fusion.Dim, error) {
	v, err := c.value(j)
	if err != nil {
		return nil, err
	}
	if v.t != nil {
		return c.shapeOf(v.t), nil
	}
	out := make([]fusion.Dim, len(v.k.shape))
	for a, d := range v.k.shape {
		out[a] = fusion.Const(d)
	}
	return out, nil
}

// outName returns the graph name of output j.
func (c *ctx) outName(j int) string {
	for len(c.outs) <= j {
		c.outs = append(c.outs, "")
	}
	if c.outs[j] == "" {
		base := "out"
		if j < len(c.n.GetOutput()) && c.n.GetOutput()[j] != "" {
			base = c.n.GetOutput()[j]
		}
		c.outs[j] = c.im.names.ident(base, "t")
	}
	return c.outs[j]
}

// tmp returns a fresh name for an intermediate tensor of the node.
func (c *ctx) tmp(suffix string) string {
	base := "t"
	if len(c.n.GetOutput()) > 0 {
		base = c.n.GetOutput()[0]
	}
	return c.im.names.ident(base+"_"+suffix, "t")
}

// op adds a node named name (tmp names for intermediates, outName for a
// result).
func (c *ctx) op(name, op string, attrs fusion.Attrs, ins ...*fusion.Tensor) (*fusion.Tensor, error) {
	return c.im.b.Node(name, op, attrs, ins...)
}

// result adds op as the node of output 0.
func (c *ctx) result(op string, attrs fusion.Attrs, ins ...*fusion.Tensor) error {
	y, err := c.op(c.outName(0), op, attrs, ins...)
	if err != nil {
		return err
	}
	c.set(0, y)
	return nil
}

// set makes t output j.
func (c *ctx) set(j int, t *fusion.Tensor) {
	if j >= len(c.n.GetOutput()) || c.n.GetOutput()[j] == "" {
		return
	}
	c.im.vals[c.n.GetOutput()[j]] = &value{t: t}
	if t.Producer != nil {
		c.im.onnx[t.Name] = c.n.GetOutput()[j]
	}
}

// setKnown makes a known value output j.
func (c *ctx) setKnown(j int, k *known) {
	if j < len(c.n.GetOutput()) && c.n.GetOutput()[j] != "" {
		c.im.vals[c.n.GetOutput()[j]] = &value{k: k}
	}
}

// alias makes output j the same value as input i.
func (c *ctx) alias(j, i int) {
	if j < len(c.n.GetOutput()) && c.n.GetOutput()[j] != "" {
		c.im.vals[c.n.GetOutput()[j]] = c.im.vals[c.n.GetInput()[i]]
	}
}

// scalar returns a rank-0 constant.
func (c *ctx) scalar(dt ast.DType, v float64) (*fusion.Tensor, error) { return c.im.scalar(dt, v) }

// attr returns the attribute called name, or nil.
func (c *ctx) attr(name string) *onnxpb.AttributeProto {
	for _, a := range c.n.GetAttribute() {
		if a.GetName() == name {
			return a
		}
	}
	return nil
}

func (c *ctx) attrInt(name string, def int64) (int64, error) {
	a := c.attr(name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_INT {
		return 0, fmt.Errorf("attribute %s is %s, not an int", name, a.GetType())
	}
	return a.GetI(), nil
}

func (c *ctx) attrInts(name string) ([]int64, bool, error) {
	a := c.attr(name)
	if a == nil {
		return nil, false, nil
	}
	if a.GetType() != onnxpb.AttributeProto_INTS {
		return nil, false, fmt.Errorf("attribute %s is %s, not a list of ints", name, a.GetType())
	}
	return a.GetInts(), true, nil
}

// attrIntsOr returns a list of n ints, def each when the attribute is
// absent.
func (c *ctx) attrIntsOr(name string, def int64, n int) ([]int64, error) {
	v, given, err := c.attrInts(name)
	if err != nil || !given {
		out := make([]int64, n)
		for k := range out {
			out[k] = def
		}
		return out, err
	}
	if len(v) != n {
		return nil, fmt.Errorf("%s %v needs %d entries", name, v, n)
	}
	return v, nil
}

func (c *ctx) attrFloat(name string, def float64) (float64, error) {
	a := c.attr(name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_FLOAT {
		return 0, fmt.Errorf("attribute %s is %s, not a float", name, a.GetType())
	}
	return float64(a.GetF()), nil
}

func (c *ctx) attrString(name, def string) (string, error) {
	a := c.attr(name)
	if a == nil {
		return def, nil
	}
	if a.GetType() != onnxpb.AttributeProto_STRING {
		return "", fmt.Errorf("attribute %s is %s, not a string", name, a.GetType())
	}
	return string(a.GetS()), nil
}

// axisOf normalizes a possibly negative axis of a rank-r tensor.
func axisOf(a int64, r int, what string) (int, error) {
	if a < -int64(r) || a >= int64(r) {
		return 0, fmt.Errorf("%s %d is out of range for rank %d", what, a, r)
	}
	if a < 0 {
		a += int64(r)
	}
	return int(a), nil
}

// namer maps ONNX names to identifiers, each given once.
type namer struct{ used map[string]bool }

func newNamer() *namer { return &namer{used: map[string]bool{}} }

// ident returns a fresh identifier like s (its letters, digits and
// underscores; prefix when s starts with none of them).
func (nm *namer) ident(s, prefix string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
		}
	}
	base := strings.TrimRight(b.String(), "_")
	if len(base) > 64 {
		base = base[len(base)-64:]
		base = strings.TrimLeft(base, "_0123456789")
	}
	if base == "" || base[0] >= '0' && base[0] <= '9' {
		base = prefix + "_" + base
		base = strings.TrimRight(base, "_")
	}
	if !ast.IsName(base) {
		base += "_"
	}
	name := base
	for k := 2; nm.used[name] || !ast.IsName(name); k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	nm.used[name] = true
	return name
}
