package fusion

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/safetensors"
)

// The JSON form of a graph (see doc.go for an example):
//
//	{
//	  "name": "rmsnorm",
//	  "inputs":    [{"name": "X", "dtype": "float32", "shape": ["S", 768]}],
//	  "constants": [{"name": "eps", "dtype": "float32", "shape": [], "data": [1e-6]}],
//	  "nodes":     [{"op": "mul", "inputs": ["X", "X"], "output": "X2"}, ...],
//	  "outputs":   ["Y"]
//	}
//
// A dimension is a non-negative integer or a string: a symbol (a dynamic
// size, "S") or a polynomial of symbols ("S1*S2", "2*S + 1", in attribute
// shapes). Nodes may come in any order; they are sorted topologically.
type jsonGraph struct {
	Name      string       `json:"name"`
	Inputs    []jsonTensor `json:"inputs"`
	Constants []jsonTensor `json:"constants,omitempty"`
	Nodes     []jsonNode   `json:"nodes"`
	Outputs   []string     `json:"outputs"`
	// Weights names a safetensors file, relative to the graph's file,
	// holding the elements of every constant without "data".
	Weights string `json:"weights,omitempty"`
	// ModelNames maps tensors to the names the model they came from gives
	// them.
	ModelNames map[string]string `json:"model_names,omitempty"`
}

type jsonTensor struct {
	Name  string    `json:"name"`
	DType string    `json:"dtype"`
	Shape []JSONDim `json:"shape"`
	Data  []float64 `json:"data,omitempty"`
}

type jsonNode struct {
	Op     string                     `json:"op"`
	Inputs []string                   `json:"inputs"`
	Output string                     `json:"output"`
	Attrs  map[string]json.RawMessage `json:"attrs,omitempty"`
}

// JSONDim is a dimension as JSON writes it: a number, a symbolic
// expression in a string, or -1 (Infer: a reshape's inferred dimension).
type JSONDim struct {
	Dim   Dim
	Sym   string // the text of a symbolic dimension
	Infer bool
}

// String prints the dimension as JSON would, without quotes.
func (d JSONDim) String() string {
	if d.Infer {
		return "-1"
	}
	return d.Dim.String()
}

// MarshalJSON writes a number or a string.
func (d JSONDim) MarshalJSON() ([]byte, error) {
	if d.Infer {
		return []byte("-1"), nil
	}
	if v, ok := d.Dim.IsConst(); ok {
		return []byte(strconv.FormatInt(v, 10)), nil
	}
	return json.Marshal(d.Dim.String())
}

// UnmarshalJSON reads a number or a string.
func (d *JSONDim) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := ParseDim(s)
		if err != nil {
			return err
		}
		*d = JSONDim{Dim: v, Sym: s}
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("a dimension is an integer or a symbol, not %s", b)
	}
	switch {
	case v == -1:
		*d = JSONDim{Infer: true}
	case v < 0 || v > math.MaxInt32:
		return fmt.Errorf("dimension %d is out of range [0, 2^31)", v)
	default:
		*d = JSONDim{Dim: Const(v)}
	}
	return nil
}

// ParseDim reads a dimension: an integer, a symbol, or a polynomial such
// as S1*S2 + 4.
func ParseDim(s string) (Dim, error) {
	src := s
	s = strings.ReplaceAll(s, " ", "")
	if s == "" {
		return Dim{}, fmt.Errorf("empty dimension")
	}
	if len(s) > 256 {
		return Dim{}, fmt.Errorf("dimension %.20q... is too long", src)
	}
	sum := Dim{}
	for s != "" {
		sign := int64(1)
		switch s[0] {
		case '+':
			s = s[1:]
		case '-':
			sign, s = -1, s[1:]
		}
		end := strings.IndexAny(s, "+-")
		if end < 0 {
			end = len(s)
		}
		p := Const(sign)
		for _, f := range strings.Split(s[:end], "*") {
			var v Dim
			if n, err := strconv.ParseInt(f, 10, 32); err == nil && n >= 0 {
				v = Const(n)
			} else if ast.IsName(f) {
				v = Sym(f)
			} else {
				return Dim{}, fmt.Errorf("bad dimension %q: %q is neither a non-negative integer nor a symbol", src, f)
			}
			var err error
			if p, err = p.Mul(v); err != nil {
				return Dim{}, err
			}
		}
		var err error
		if sum, err = sum.Add(p); err != nil {
			return Dim{}, err
		}
		s = s[end:]
	}
	return sum, nil
}

// ReadJSON reads a graph, checks its structure, infers its shapes and
// returns it; any problem is a *GraphError (wrapping ErrGraph) that names
// the node or field. It never panics, whatever the input.
func ReadJSON(r io.Reader) (*Graph, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxJSON+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxJSON {
		return nil, &GraphError{Msg: fmt.Sprintf("the graph is larger than %d MiB, the limit", maxJSON>>20)}
	}
	return ParseJSON(data)
}

// maxJSON bounds the size of a graph file ReadJSON reads.
const maxJSON = 64 << 20

// ParseJSON is ReadJSON on bytes.
func ParseJSON(data []byte) (*Graph, error) { return parseJSON(data, "") }

// parseJSON reads a graph whose weights file, if it names one, is
// relative to dir ("": the graph came from no file).
func parseJSON(data []byte, dir string) (*Graph, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &GraphError{Msg: "the input is empty; want a JSON graph (see the package documentation)"}
	}
	var jg jsonGraph
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jg); err != nil {
		return nil, jsonError(data, err)
	}
	if dec.More() {
		return nil, &GraphError{Msg: "trailing data after the graph"}
	}
	w, err := openWeights(jg.Weights, dir)
	if err != nil {
		return nil, err
	}
	if w != nil {
		defer w.Close()
	}
	return build(&jg, w)
}

// jsonError turns a decoding error into a GraphError with line:column.
func jsonError(data []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	msg := err.Error()
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
		msg = fmt.Sprintf("%s: expected %s, got JSON %s", typ.Field, typ.Type, typ.Value)
	}
	msg = strings.TrimPrefix(msg, "json: ")
	if off < 0 {
		return &GraphError{Msg: msg}
	}
	line, col := 1, 1
	for _, c := range data[:min(int(off), len(data))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &GraphError{Where: fmt.Sprintf("%d:%d", line, col), Msg: msg}
}

// build checks a decoded graph and links it, reading the constants
// without data from w.
func build(jg *jsonGraph, w *safetensors.File) (*Graph, error) {
	if !ast.IsName(jg.Name) {
		return nil, &GraphError{Where: "name", Msg: fmt.Sprintf("the graph's name %q is not a valid name", jg.Name)}
	}
	g := &Graph{Name: jg.Name, ModelNames: jg.ModelNames}
	tensors := map[string]*Tensor{}
	symbols := map[string]bool{}
	declare := func(where, name string) error {
		switch {
		case !ast.IsName(name):
			return &GraphError{Where: where, Msg: fmt.Sprintf("%q is not a valid tensor name (an identifier, not a reserved word)", name)}
		case tensors[name] != nil:
			return &GraphError{Where: where, Msg: fmt.Sprintf("tensor %s is defined twice", name)}
		case name == g.Name:
			return &GraphError{Where: where, Msg: fmt.Sprintf("tensor %s has the graph's name", name)}
		}
		return nil
	}
	tensor := func(where string, jt jsonTensor, isConst bool) (*Tensor, error) {
		if err := declare(where+".name", jt.Name); err != nil {
			return nil, err
		}
		t := &Tensor{Name: jt.Name}
		var ok bool
		if t.DType, ok = ast.ParseDType(jt.DType); !ok {
			return nil, &GraphError{Where: where + ".dtype", Msg: fmt.Sprintf("unknown dtype %q", jt.DType)}
		}
		if jt.Shape == nil && !isConst {
			return nil, &GraphError{Where: where + ".shape", Msg: "missing shape"}
		}
		if len(jt.Shape) > 16 {
			return nil, &GraphError{Where: where + ".shape", Msg: fmt.Sprintf("rank %d is more than 16", len(jt.Shape))}
		}
		for k, d := range jt.Shape {
			if d.Infer {
				return nil, &GraphError{Where: fmt.Sprintf("%s.shape[%d]", where, k), Msg: "-1 is only allowed in a reshape"}
			}
			if d.Sym != "" && (isConst || len(d.Dim.terms) != 1 || len(d.Dim.terms[0].syms) != 1 || d.Dim.terms[0].coef != 1) {
				if isConst {
					return nil, &GraphError{Where: fmt.Sprintf("%s.shape[%d]", where, k), Msg: "a constant has a constant shape"}
				}
				return nil, &GraphError{Where: fmt.Sprintf("%s.shape[%d]", where, k), Msg: fmt.Sprintf("an input dimension is an integer or one symbol, not %q", d.Sym)}
			}
			for _, s := range d.Dim.Symbols() {
				symbols[s] = true
			}
			t.Shape = append(t.Shape, d.Dim)
		}
		if isConst && jt.Data == nil {
			if err := weightData(w, where, t, jg.Weights); err != nil {
				return nil, err
			}
			jt.Data = t.Data
		}
		if isConst {
			n, err := t.Shape.Elems()
			if err != nil {
				return nil, &GraphError{Where: where + ".shape", Msg: err.Error()}
			}
			if v, _ := n.IsConst(); int64(len(jt.Data)) != v || v == 0 {
				return nil, &GraphError{Where: where + ".data", Msg: fmt.Sprintf("constant %s of shape %s needs %d values, has %d", t.Name, t.Shape, v, len(jt.Data))}
			}
			for k, v := range jt.Data {
				if msg := valueError(t.DType, v); msg != "" {
					return nil, &GraphError{Where: fmt.Sprintf("%s.data[%d]", where, k), Msg: fmt.Sprintf("constant %s: %s", t.Name, msg)}
				}
			}
			t.Data = slices.Clone(jt.Data)
		}
		tensors[t.Name] = t
		return t, nil
	}
	for i, jt := range jg.Inputs {
		t, err := tensor(fmt.Sprintf("inputs[%d]", i), jt, false)
		if err != nil {
			return nil, err
		}
		g.Inputs = append(g.Inputs, t)
	}
	for i, jt := range jg.Constants {
		t, err := tensor(fmt.Sprintf("constants[%d]", i), jt, true)
		if err != nil {
			return nil, err
		}
		g.Constants = append(g.Constants, t)
	}
	for s := range symbols {
		if tensors[s] != nil {
			return nil, &GraphError{Where: s, Msg: fmt.Sprintf("%s is used both as a symbol and as a tensor name", s)}
		}
	}
	// Nodes: declare outputs, then link inputs.
	nodes := make([]*Node, len(jg.Nodes))
	for i, jn := range jg.Nodes {
		n := &Node{Op: jn.Op}
		nodes[i] = n
		info, ok := ops[jn.Op]
		if !ok {
			return nil, nodeErr(i, n, "op", "unknown operator %q", jn.Op)
		}
		if err := declare(fmt.Sprintf("nodes[%d].output", i), jn.Output); err != nil {
			return nil, err
		}
		if symbols[jn.Output] {
			return nil, nodeErr(i, n, "output", "%s names both a tensor and a symbol (a dimension of an input)", jn.Output)
		}
		n.Output = &Tensor{Name: jn.Output, Producer: n}
		tensors[jn.Output] = n.Output
		if err := decodeAttrs(i, n, info, jn.Attrs, symbols); err != nil {
			return nil, err
		}
	}
	for i, jn := range jg.Nodes {
		n := nodes[i]
		for j, name := range jn.Inputs {
			t := tensors[name]
			if t == nil {
				return nil, nodeErr(i, n, fmt.Sprintf("inputs[%d]", j), "dangling tensor: %q is not an input, a constant or a node's output", name)
			}
			n.Inputs = append(n.Inputs, t)
		}
	}
	order, err := topoSort(nodes)
	if err != nil {
		return nil, err
	}
	g.Nodes = order
	if len(jg.Outputs) == 0 {
		return nil, &GraphError{Where: "outputs", Msg: "the graph has no outputs"}
	}
	for k, name := range jg.Outputs {
		t := tensors[name]
		switch {
		case t == nil:
			return nil, &GraphError{Where: fmt.Sprintf("outputs[%d]", k), Msg: fmt.Sprintf("dangling tensor: %q is not defined", name)}
		case t.Producer == nil:
			return nil, &GraphError{Where: fmt.Sprintf("outputs[%d]", k), Msg: fmt.Sprintf("%s is a graph input or constant, not computed by a node", name)}
		case slices.Contains(g.Outputs, t):
			return nil, &GraphError{Where: fmt.Sprintf("outputs[%d]", k), Msg: fmt.Sprintf("%s is listed twice", name)}
		}
		g.Outputs = append(g.Outputs, t)
	}
	if err := infer(g); err != nil { // the constants are checked above
		// Report node positions as in the input.
		var ge *GraphError
		if errors.As(err, &ge) && strings.HasPrefix(ge.Where, "nodes[") {
			if idx, ok := nodeIndex(ge.Where); ok && idx < len(order) {
				ge.Where = strings.Replace(ge.Where, fmt.Sprintf("nodes[%d]", idx), fmt.Sprintf("nodes[%d]", slices.Index(nodes, order[idx])), 1)
			}
		}
		return nil, err
	}
	return g, nil
}

func nodeIndex(where string) (int, bool) {
	rest := strings.TrimPrefix(where, "nodes[")
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(rest[:end])
	return n, err == nil
}

// attrTaken refuses attribute k when n's operator does not take it.
func attrTaken(i int, n *Node, info opInfo, k string) error {
	if slices.Contains(info.attrs, k) {
		return nil
	}
	takes := "no attributes"
	if len(info.attrs) > 0 {
		takes = strings.Join(info.attrs, ", ")
	}
	return nodeErr(i, n, "attrs."+k, "%s takes no attribute %q (it takes %s)", n.Op, k, takes)
}

// decodeAttrs reads the attributes n's operator takes.
func decodeAttrs(i int, n *Node, info opInfo, raw map[string]json.RawMessage, symbols map[string]bool) error {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := attrTaken(i, n, info, k); err != nil {
			return err
		}
		var one map[string]json.RawMessage = map[string]json.RawMessage{k: raw[k]}
		b, _ := json.Marshal(one)
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&n.Attrs); err != nil {
			return nodeErr(i, n, "attrs."+k, "%v", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	if len(n.Attrs.Shape) > 16 {
		return nodeErr(i, n, "attrs.shape", "rank %d is more than 16", len(n.Attrs.Shape))
	}
	for k, d := range n.Attrs.Shape {
		for _, s := range d.Dim.Symbols() {
			if !symbols[s] {
				return nodeErr(i, n, fmt.Sprintf("attrs.shape[%d]", k), "symbol %s is not defined by any input's shape", s)
			}
		}
	}
	return nil
}

// topoSort orders nodes so that every input is defined before use, keeping
// the given order where it already is; a cycle is an error naming it.
func topoSort(nodes []*Node) ([]*Node, error) {
	state := map[*Node]int{} // 0 new, 1 on the stack, 2 done
	var order []*Node
	var stack []*Node
	var visit func(n *Node) error
	visit = func(n *Node) error {
		switch state[n] {
		case 1:
			start := slices.Index(stack, n)
			var names []string
			for _, m := range stack[start:] {
				names = append(names, m.Output.Name)
			}
			names = append(names, n.Output.Name)
			return nodeErr(slices.Index(nodes, n), n, "inputs", "cycle: %s", strings.Join(names, " -> "))
		case 2:
			return nil
		}
		state[n] = 1
		stack = append(stack, n)
		for _, in := range n.Inputs {
			if in.Producer != nil {
				if err := visit(in.Producer); err != nil {
					return err
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = 2
		order = append(order, n)
		return nil
	}
	for _, n := range nodes {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// WriteJSON writes g in the JSON form ReadJSON reads.
func WriteJSON(w io.Writer, g *Graph) error {
	jg, err := toJSON(g)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jg)
}

// toJSON is g in its JSON form.
func toJSON(g *Graph) (*jsonGraph, error) {
	jg := &jsonGraph{Name: g.Name, Inputs: []jsonTensor{}, Nodes: []jsonNode{}, Outputs: []string{}, ModelNames: g.ModelNames}
	jt := func(t *Tensor) jsonTensor {
		out := jsonTensor{Name: t.Name, DType: t.DType.String(), Shape: []JSONDim{}, Data: t.Data}
		for _, d := range t.Shape {
			out.Shape = append(out.Shape, JSONDim{Dim: d, Sym: d.String()})
		}
		return out
	}
	for _, t := range g.Inputs {
		jg.Inputs = append(jg.Inputs, jt(t))
	}
	for _, t := range g.Constants {
		jg.Constants = append(jg.Constants, jt(t))
	}
	for _, n := range g.Nodes {
		jn := jsonNode{Op: n.Op, Output: n.Output.Name, Inputs: []string{}}
		for _, in := range n.Inputs {
			jn.Inputs = append(jn.Inputs, in.Name)
		}
		b, err := json.Marshal(n.Attrs)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &jn.Attrs); err != nil {
			return nil, err
		}
		if len(jn.Attrs) == 0 {
			jn.Attrs = nil
		}
		jg.Nodes = append(jg.Nodes, jn)
	}
	for _, t := range g.Outputs {
		jg.Outputs = append(jg.Outputs, t.Name)
	}
	return jg, nil
}
