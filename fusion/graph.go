package fusion

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Graph is a dataflow graph of tensor operators: inputs and constants
// flow through Nodes, each computing one tensor, to the outputs. Nodes
// are kept in a topological order (every input defined before use).
type Graph struct {
	Name      string
	Inputs    []*Tensor // in the order of the kernel interface
	Constants []*Tensor // with Data
	Nodes     []*Node
	Outputs   []*Tensor
	// ModelNames maps tensor names to the names the model the graph came
	// from gives them (an ONNX model's are not identifiers), for errors
	// and for a C library's description of its inputs and outputs.
	ModelNames map[string]string
}

// Tensor is a value of the graph: a graph input, a constant, or the
// output of one node.
type Tensor struct {
	Name  string
	DType ast.DType
	Shape Shape
	// Data holds a constant's elements in row-major order (float64 holds
	// every value of the supported types exactly); nil otherwise. It is
	// read-only once the constant is made: copies of a graph share it.
	Data []float64
	// Producer is the node computing the tensor; nil for inputs and
	// constants.
	Producer *Node
}

// IsConst reports whether t is a constant.
func (t *Tensor) IsConst() bool { return t.Data != nil }

// Splat returns the value of every element of a constant whose elements
// are all equal.
func (t *Tensor) Splat() (float64, bool) {
	if len(t.Data) == 0 {
		return 0, false
	}
	for _, v := range t.Data[1:] {
		if v != t.Data[0] {
			return 0, false
		}
	}
	return t.Data[0], true
}

// Node is one operator application.
type Node struct {
	Op     string
	Inputs []*Tensor
	Output *Tensor
	Attrs  Attrs
}

// Name is the node's output tensor's name; nodes are known by it.
func (n *Node) Name() string { return n.Output.Name }

// Attrs are an operator's attributes; each operator reads the ones its
// documentation names (see ops.go) and ignores none: the JSON reader
// refuses an attribute the operator does not take.
type Attrs struct {
	Axes      []int     `json:"axes,omitempty"`      // reductions, slice
	KeepDims  bool      `json:"keepdims,omitempty"`  // reductions
	Axis      *int      `json:"axis,omitempty"`      // concat, softmax, layernorm
	Perm      []int     `json:"perm,omitempty"`      // transpose
	Shape     []JSONDim `json:"shape,omitempty"`     // reshape, broadcast_to
	Starts    []int64   `json:"starts,omitempty"`    // slice
	Ends      []int64   `json:"ends,omitempty"`      // slice
	Steps     []int64   `json:"steps,omitempty"`     // slice
	Strides   []int64   `json:"strides,omitempty"`   // convolutions, pooling
	Pads      []int64   `json:"pads,omitempty"`      // convolutions, pooling, pad: the begins of every axis, then the ends
	Dilations []int64   `json:"dilations,omitempty"` // convolutions, max_pool2d
	Groups    *int64    `json:"groups,omitempty"`    // convolutions
	// KernelShape is a pooling window's taps along each spatial axis.
	KernelShape     []int64  `json:"kernel_shape,omitempty"`
	CountIncludePad bool     `json:"count_include_pad,omitempty"` // avg_pool2d: divide by the whole window
	Value           *float64 `json:"value,omitempty"`             // pad: the border's value (0)
	DType           string   `json:"dtype,omitempty"`             // cast
	Epsilon         *float64 `json:"epsilon,omitempty"`           // layernorm, rms_norm, batch_norm
	Approximate     string   `json:"approximate,omitempty"`       // gelu: "tanh" for the tanh form
	// Layout is where a convolution's or a pooling's channels are:
	// first (NCHW, NCW, NCDHW: the default) or last (NHWC, NWC, NDHWC,
	// whose weights are [kernel..., C/groups, F]).
	Layout string `json:"layout,omitempty"`
	// Panel is the width of the panels a matrix product's second operand
	// comes in: [..., N/panel, K, panel] instead of [..., K, N] (0: as
	// it is); for a convolution with its channels last, the panels its
	// weights come in: [F/panel, C/groups, kernel..., panel] instead of
	// [kernel..., C/groups, F]. The pack pass sets it on constant
	// weights. On a transpose, it marks the pack pass's move of a
	// matrix given per call into panels of that width (a layout
	// conversion: IsLayoutConversion).
	Panel int64 `json:"panel,omitempty"`
	// Columns is, for a matrix product whose second operand comes in
	// panels, its number of columns N when the last panel is padded
	// (N not a multiple of the panel: [..., ceil(N/panel), K, panel],
	// the padding never read); 0: every panel is whole.
	Columns int64 `json:"columns,omitempty"`
}

// clone returns a deep copy of a.
func (a Attrs) clone() Attrs {
	b := a
	b.Axes, b.Perm, b.Shape = slices.Clone(a.Axes), slices.Clone(a.Perm), slices.Clone(a.Shape)
	b.Starts, b.Ends, b.Steps = slices.Clone(a.Starts), slices.Clone(a.Ends), slices.Clone(a.Steps)
	b.Strides, b.Pads, b.Dilations = slices.Clone(a.Strides), slices.Clone(a.Pads), slices.Clone(a.Dilations)
	b.KernelShape = slices.Clone(a.KernelShape)
	if a.Groups != nil {
		v := *a.Groups
		b.Groups = &v
	}
	if a.Value != nil {
		v := *a.Value
		b.Value = &v
	}
	if a.Axis != nil {
		v := *a.Axis
		b.Axis = &v
	}
	if a.Epsilon != nil {
		v := *a.Epsilon
		b.Epsilon = &v
	}
	return b
}

// String is a canonical text of the attributes, for CSE and printing.
func (a Attrs) String() string { return string(a.Append(nil)) }

// Append appends String's text to b: a key of the attributes that
// allocates nothing but b's growth (package lazy keys every recorded
// operation by it).
func (a Attrs) Append(b []byte) []byte {
	start, first := len(b), true
	field := func(name string) {
		if first {
			b = append(b, '{')
			first = false
		} else {
			b = append(b, ", "...)
		}
		b = append(b, name...)
		b = append(b, ": "...)
	}
	if a.Axes != nil {
		field("axes")
		b = appendList(b, a.Axes)
	}
	if a.KeepDims {
		field("keepdims")
		b = append(b, "true"...)
	}
	if a.Axis != nil {
		field("axis")
		b = strconv.AppendInt(b, int64(*a.Axis), 10)
	}
	if a.Perm != nil {
		field("perm")
		b = appendList(b, a.Perm)
	}
	if a.Shape != nil {
		field("shape")
		b = append(b, '[')
		for i, d := range a.Shape {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, d.String()...)
		}
		b = append(b, ']')
	}
	for _, f := range []struct {
		name string
		v    []int64
	}{{"starts", a.Starts}, {"ends", a.Ends}, {"steps", a.Steps}, {"strides", a.Strides}, {"pads", a.Pads}, {"dilations", a.Dilations}, {"kernel_shape", a.KernelShape}} {
		if f.v != nil {
			field(f.name)
			b = appendList(b, f.v)
		}
	}
	if a.Groups != nil {
		field("groups")
		b = strconv.AppendInt(b, *a.Groups, 10)
	}
	if a.CountIncludePad {
		field("count_include_pad")
		b = append(b, "true"...)
	}
	if a.Value != nil {
		field("value")
		b = strconv.AppendFloat(b, *a.Value, 'g', -1, 64)
	}
	if a.DType != "" {
		field("dtype")
		b = append(b, a.DType...)
	}
	if a.Epsilon != nil {
		field("epsilon")
		b = strconv.AppendFloat(b, *a.Epsilon, 'g', -1, 64)
	}
	if a.Approximate != "" {
		field("approximate")
		b = strconv.AppendQuote(b, a.Approximate)
	}
	if a.Panel != 0 {
		field("panel")
		b = strconv.AppendInt(b, a.Panel, 10)
	}
	if a.Columns != 0 {
		field("columns")
		b = strconv.AppendInt(b, a.Columns, 10)
	}
	if a.Layout != "" {
		field("layout")
		b = strconv.AppendQuote(b, a.Layout)
	}
	if len(b) > start {
		b = append(b, '}')
	}
	return b
}

// appendList appends [x, y, ...].
func appendList[T int | int64](b []byte, xs []T) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return append(b, ']')
}

// Consumers returns, for every tensor, the nodes that read it, in node
// order (a node reading a tensor twice appears once).
func (g *Graph) Consumers() map[*Tensor][]*Node {
	out := map[*Tensor][]*Node{}
	for _, n := range g.Nodes {
		for i, in := range n.Inputs {
			if !slices.Contains(n.Inputs[:i], in) {
				out[in] = append(out[in], n)
			}
		}
	}
	return out
}

// IsOutput reports whether t is an output of the graph.
func (g *Graph) IsOutput(t *Tensor) bool { return slices.Contains(g.Outputs, t) }

// Tensor returns the tensor called name, or nil.
func (g *Graph) Tensor(name string) *Tensor {
	for _, t := range g.Inputs {
		if t.Name == name {
			return t
		}
	}
	for _, t := range g.Constants {
		if t.Name == name {
			return t
		}
	}
	for _, n := range g.Nodes {
		if n.Output.Name == name {
			return n.Output
		}
	}
	return nil
}

// Clone returns a copy of g: its own tensors and nodes, sharing the
// constants' data, which no one writes (see Tensor.Data).
func (g *Graph) Clone() *Graph {
	m := map[*Tensor]*Tensor{}
	cp := func(t *Tensor) *Tensor {
		if c, ok := m[t]; ok {
			return c
		}
		// A constant's data is never written after it is made (passes
		// make new constants): the copy shares it, which matters for a
		// model's hundreds of megabytes of weights.
		c := &Tensor{Name: t.Name, DType: t.DType, Shape: slices.Clone(t.Shape), Data: t.Data}
		m[t] = c
		return c
	}
	h := &Graph{Name: g.Name, ModelNames: maps.Clone(g.ModelNames)}
	for _, t := range g.Inputs {
		h.Inputs = append(h.Inputs, cp(t))
	}
	for _, t := range g.Constants {
		h.Constants = append(h.Constants, cp(t))
	}
	for _, n := range g.Nodes {
		c := &Node{Op: n.Op, Attrs: n.Attrs.clone(), Output: cp(n.Output)}
		for _, in := range n.Inputs {
			c.Inputs = append(c.Inputs, cp(in))
		}
		c.Output.Producer = c
		h.Nodes = append(h.Nodes, c)
	}
	for _, t := range g.Outputs {
		h.Outputs = append(h.Outputs, cp(t))
	}
	return h
}

// String prints the graph in loom's text form, one node per line:
//
//	graph rmsnorm(X: float32[S1, 768], W: float32[768]) -> (Y) {
//	  const eps: float32[] = 1e-06
//	  X2: float32[S1, 768] = mul(X, X)
//	  ...
//	}
func (g *Graph) String() string {
	var b strings.Builder
	decl := func(t *Tensor) string { return fmt.Sprintf("%s: %s%s", t.Name, t.DType, t.Shape) }
	var ins, outs []string
	for _, t := range g.Inputs {
		ins = append(ins, decl(t))
	}
	for _, t := range g.Outputs {
		outs = append(outs, t.Name)
	}
	fmt.Fprintf(&b, "graph %s(%s) -> (%s) {\n", g.Name, strings.Join(ins, ", "), strings.Join(outs, ", "))
	for _, t := range g.Constants {
		fmt.Fprintf(&b, "  const %s = %s\n", decl(t), constText(t.Data))
	}
	for _, n := range g.Nodes {
		var args []string
		for _, in := range n.Inputs {
			args = append(args, in.Name)
		}
		fmt.Fprintf(&b, "  %s = %s(%s)", decl(n.Output), n.Op, strings.Join(args, ", "))
		if a := n.Attrs.String(); a != "" {
			b.WriteString(" " + a)
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func constText(data []float64) string {
	if v, ok := (&Tensor{Data: data}).Splat(); ok {
		if len(data) == 1 {
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
		return fmt.Sprintf("splat(%s)", strconv.FormatFloat(v, 'g', -1, 64))
	}
	var parts []string
	for i, v := range data {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("... (%d values)", len(data)))
			break
		}
		parts = append(parts, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// allTensors returns the inputs, constants and node outputs of g.
func allTensors(g *Graph) []*Tensor {
	out := slices.Clone(g.Inputs)
	out = append(out, g.Constants...)
	for _, n := range g.Nodes {
		out = append(out, n.Output)
	}
	return out
}

// Symbols returns the symbols of g's shapes, in order of first appearance
// (inputs first).
func (g *Graph) Symbols() []string {
	var order []string
	seen := map[string]bool{}
	for _, t := range allTensors(g) {
		for _, d := range t.Shape {
			for _, s := range d.Symbols() {
				if !seen[s] {
					seen[s] = true
					order = append(order, s)
				}
			}
		}
	}
	return order
}

// usedSymbols returns the symbols of order (a graph's, see Symbols) that
// the shapes of ts use, in that order.
func usedSymbols(order []string, ts []*Tensor) []string {
	used := map[string]bool{}
	for _, t := range ts {
		for _, d := range t.Shape {
			for _, s := range d.Symbols() {
				used[s] = true
			}
		}
	}
	var out []string
	for _, s := range order {
		if used[s] {
			out = append(out, s)
		}
	}
	return out
}

// scalarConst returns the value of a constant with one element.
func scalarConst(t *Tensor) (float64, bool) {
	if len(t.Data) != 1 {
		return 0, false
	}
	return t.Data[0], true
}
