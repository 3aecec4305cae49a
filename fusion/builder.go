package fusion

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/loom-go/loom/ast"
)

// Builder makes a Graph in Go. Inputs, constants and nodes are added in
// order, and each node's dtype and shape are inferred as it is added, so a
// mistake is reported by the call that makes it, with the node and both
// shapes. The constraints between symbols are solved as they are met
// (adding [S0, 768] to [S1, 768] makes S1 the same size as S0); Shape
// reports a tensor's shape with what is known so far.
//
//	b := fusion.NewBuilder("mlp")
//	x, _ := b.Input("X", ast.Float32, fusion.Sym("S"), fusion.Const(64))
//	w, _ := b.Constant("W", ast.Float32, []int64{64, 16}, weights)
//	y, _ := b.Node("Y", "matmul", fusion.Attrs{}, x, w)
//	g, err := b.Graph(y)
type Builder struct {
	g       *Graph
	u       *unifier
	names   map[string]bool
	symbols map[string]bool
	made    map[*Tensor]bool
	fresh   int
}

// NewBuilder starts an empty graph called name (an identifier).
func NewBuilder(name string) *Builder {
	return &Builder{
		g:       &Graph{Name: name},
		u:       &unifier{subst: map[string]Dim{}, order: map[string]int{}},
		names:   map[string]bool{},
		symbols: map[string]bool{},
		made:    map[*Tensor]bool{},
	}
}

// declare checks a new tensor name.
func (b *Builder) declare(name string) error {
	switch {
	case !ast.IsName(name):
		return &GraphError{Where: name, Msg: fmt.Sprintf("%q is not a valid tensor name (an identifier, not a reserved word)", name)}
	case b.names[name]:
		return &GraphError{Where: name, Msg: fmt.Sprintf("tensor %s is defined twice", name)}
	case name == b.g.Name:
		return &GraphError{Where: name, Msg: fmt.Sprintf("tensor %s has the graph's name", name)}
	case b.symbols[name]:
		return &GraphError{Where: name, Msg: fmt.Sprintf("%s names both a tensor and a symbol (a dimension of an input)", name)}
	}
	return nil
}

// Input adds a graph input; each dimension is a non-negative constant or
// one symbol (a size given at run time).
func (b *Builder) Input(name string, dt ast.DType, shape ...Dim) (*Tensor, error) {
	if err := b.declare(name); err != nil {
		return nil, err
	}
	if len(shape) > 16 {
		return nil, &GraphError{Where: name, Msg: fmt.Sprintf("rank %d is more than 16", len(shape))}
	}
	for k, d := range shape {
		if v, ok := d.IsConst(); ok {
			if v < 0 || v > 1<<31-1 {
				return nil, &GraphError{Where: name, Msg: fmt.Sprintf("dimension %d of %s is %d, out of range [0, 2^31)", k, name, v)}
			}
			continue
		}
		if len(d.terms) != 1 || len(d.terms[0].syms) != 1 || d.terms[0].coef != 1 {
			return nil, &GraphError{Where: name, Msg: fmt.Sprintf("dimension %d of %s is %s: an input dimension is an integer or one symbol", k, name, d)}
		}
		s := d.terms[0].syms[0]
		if b.names[s] {
			return nil, &GraphError{Where: name, Msg: fmt.Sprintf("%s is used both as a symbol and as a tensor name", s)}
		}
		if _, ok := b.u.order[s]; !ok {
			b.u.order[s] = len(b.u.order)
		}
		b.symbols[s] = true
	}
	t := &Tensor{Name: name, DType: dt, Shape: slices.Clone(shape)}
	b.names[name], b.made[t] = true, true
	b.g.Inputs = append(b.g.Inputs, t)
	return t, nil
}

// Constant adds a constant of a constant shape, its elements in row-major
// order, each a value of dt.
func (b *Builder) Constant(name string, dt ast.DType, shape []int64, data []float64) (*Tensor, error) {
	if err := b.declare(name); err != nil {
		return nil, err
	}
	if len(shape) > 16 {
		return nil, &GraphError{Where: name, Msg: fmt.Sprintf("rank %d is more than 16", len(shape))}
	}
	t := &Tensor{Name: name, DType: dt}
	n := int64(1)
	for k, d := range shape {
		if d < 0 || d > 1<<31-1 {
			return nil, &GraphError{Where: name, Msg: fmt.Sprintf("dimension %d of %s is %d, out of range [0, 2^31)", k, name, d)}
		}
		n *= d
		if n > 1<<40 {
			return nil, &GraphError{Where: name, Msg: fmt.Sprintf("constant %s of shape %v is too large", name, shape)}
		}
		t.Shape = append(t.Shape, Const(d))
	}
	if int64(len(data)) != n || n == 0 {
		return nil, &GraphError{Where: name, Msg: fmt.Sprintf("constant %s of shape %s needs %d values, has %d", name, t.Shape, n, len(data))}
	}
	for k, v := range data {
		if msg := valueError(dt, v); msg != "" {
			return nil, &GraphError{Where: fmt.Sprintf("%s[%d]", name, k), Msg: fmt.Sprintf("constant %s: %s", name, msg)}
		}
	}
	t.Data = data
	b.names[name], b.made[t] = true, true
	b.g.Constants = append(b.g.Constants, t)
	return t, nil
}

// Node adds op applied to inputs and returns its output, called name (a
// fresh name when empty), with its dtype and shape inferred. The
// attributes set must be ones op takes (see the package documentation).
func (b *Builder) Node(name, op string, attrs Attrs, inputs ...*Tensor) (*Tensor, error) {
	fresh := b.fresh
	if name == "" {
		for name == "" || b.names[name] || b.symbols[name] || name == b.g.Name {
			fresh++
			name = fmt.Sprintf("t%d", fresh)
		}
	}
	if err := b.declare(name); err != nil {
		return nil, err
	}
	i := len(b.g.Nodes)
	n := &Node{Op: op, Inputs: slices.Clone(inputs), Attrs: attrs.clone()}
	n.Output = &Tensor{Name: name, Producer: n}
	info, ok := ops[op]
	if !ok {
		return nil, nodeErr(i, n, "op", "unknown operator %q", op)
	}
	for j, in := range inputs {
		if in == nil || !b.owns(in) {
			return nil, nodeErr(i, n, fmt.Sprintf("inputs[%d]", j), "input %d is not a tensor of this graph", j)
		}
	}
	if err := checkAttrNames(i, n, info); err != nil {
		return nil, err
	}
	for k, d := range n.Attrs.Shape {
		for _, s := range d.Dim.Symbols() {
			if !b.symbols[s] {
				return nil, nodeErr(i, n, fmt.Sprintf("attrs.shape[%d]", k), "symbol %s is not defined by any input's shape", s)
			}
		}
		if d.Sym == "" && !d.Infer {
			if _, ok := d.Dim.IsConst(); !ok {
				n.Attrs.Shape[k].Sym = d.Dim.String()
			}
		}
	}
	if len(b.g.Nodes) >= MaxNodes {
		return nil, nodeErr(i, n, "", "the graph would have more than the %d nodes loom compiles", MaxNodes)
	}
	saved := maps.Clone(b.u.subst)
	if err := b.u.node(i, n); err != nil {
		b.u.subst = saved // a refused node leaves no equalities behind
		return nil, err
	}
	for k, d := range n.Output.Shape {
		if v, ok := d.IsConst(); ok && v < 0 {
			return nil, nodeErr(i, n, "", "output dimension %d is negative (%d)", k, v)
		}
	}
	b.names[name], b.made[n.Output] = true, true
	b.fresh = fresh
	b.g.Nodes = append(b.g.Nodes, n)
	return n.Output, nil
}

// owns reports whether t was made by this builder.
func (b *Builder) owns(t *Tensor) bool { return b.made[t] }

// checkAttrNames refuses an attribute op does not take.
func checkAttrNames(i int, n *Node, info opInfo) error {
	raw, err := json.Marshal(n.Attrs)
	if err != nil {
		return nodeErr(i, n, "attrs", "%v", err)
	}
	var set map[string]json.RawMessage
	if err := json.Unmarshal(raw, &set); err != nil {
		return nodeErr(i, n, "attrs", "%v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if err := attrTaken(i, n, info, k); err != nil {
			return err
		}
	}
	if len(n.Attrs.Shape) > 16 {
		return nodeErr(i, n, "attrs.shape", "rank %d is more than 16", len(n.Attrs.Shape))
	}
	return nil
}

// Shape returns t's shape with the symbol equalities found so far applied.
func (b *Builder) Shape(t *Tensor) Shape {
	s, err := b.u.canonShape(t.Shape)
	if err != nil {
		return t.Shape
	}
	return s
}

// Graph finishes the graph with the given outputs (each computed by a
// node, none twice) and checks it as ReadJSON would. The builder must not
// be used after.
func (b *Builder) Graph(outputs ...*Tensor) (*Graph, error) {
	if len(outputs) == 0 {
		return nil, &GraphError{Where: "outputs", Msg: "the graph has no outputs"}
	}
	if !ast.IsName(b.g.Name) {
		return nil, &GraphError{Where: "name", Msg: fmt.Sprintf("the graph's name %q is not a valid name", b.g.Name)}
	}
	for k, t := range outputs {
		switch {
		case t == nil || !b.owns(t):
			return nil, &GraphError{Where: fmt.Sprintf("outputs[%d]", k), Msg: "not a tensor of this graph"}
		case t.Producer == nil:
			return nil, &GraphError{Where: fmt.Sprintf("outputs[%d]", k), Msg: fmt.Sprintf("%s is a graph input or constant, not computed by a node", t.Name)}
		case slices.Contains(outputs[:k], t):
			return nil, &GraphError{Where: fmt.Sprintf("outputs[%d]", k), Msg: fmt.Sprintf("%s is listed twice", t.Name)}
		}
	}
	b.g.Outputs = slices.Clone(outputs)
	if err := b.u.apply(b.g); err != nil {
		return nil, err
	}
	for _, t := range allTensors(b.g) {
		for k, d := range t.Shape {
			if v, ok := d.IsConst(); ok && v < 0 {
				return nil, &GraphError{Where: t.Name, Msg: fmt.Sprintf("dimension %d of %s would be %d: the shape constraints have no solution with non-negative sizes", k, t.Name, v)}
			}
		}
	}
	return b.g, nil
}
