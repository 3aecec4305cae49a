package onnx

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/onnx/internal/onnxpb"
)

// ErrModel is wrapped by every error about a model the importer cannot
// read or convert.
var ErrModel = errors.New("bad or unsupported ONNX model")

// Options control Import.
type Options struct {
	// Dims fixes named dimensions (an input's dim_param, such as
	// "batch_size") to sizes; the others become symbols of the graph,
	// given at run time.
	Dims map[string]int64
	// Dir is the directory external data files are relative to; ImportFile
	// sets it to the model's.
	Dir string
	// Name is the graph's name (default: from the model's graph name).
	Name string
}

// Model is an imported model: its graph and how the graph's names map to
// the model's.
type Model struct {
	Graph *fusion.Graph
	// ONNXNames maps each tensor name of Graph that came from the model
	// (inputs, outputs, node results) to the model's name for it.
	ONNXNames map[string]string
	// Symbols maps each symbol of Graph to the dim_param it came from.
	Symbols map[string]string
	// Opset is the version of the default (ai.onnx) operator set.
	Opset    int64
	Producer string
}

// maxModelBytes bounds a model file (protobuf's own limit: larger models
// keep their weights in external data files).
const maxModelBytes = 2 << 30

// ImportFile reads the model at path (and its external data files, which
// must be in the model's directory).
func ImportFile(path string, opts Options) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, modelErr("%s is not a regular file", path)
	}
	if fi.Size() > maxModelBytes {
		return nil, modelErr("the model is larger than 2 GiB (a larger model keeps its weights in external data files)")
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Dir(path)
	}
	if opts.Name == "" {
		opts.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return Import(f, opts)
}

// Import reads an ONNX model (ModelProto) and converts its graph to a
// fusion graph: initializers and Constants become constants, each
// dim_param a symbol, the exporter's shape computations are evaluated
// here, and every node becomes loom operators. An error names the node,
// its operator, domain and opset.
func Import(r io.Reader, opts Options) (*Model, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxModelBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxModelBytes {
		return nil, modelErr("the model is larger than 2 GiB (a larger model keeps its weights in external data files)")
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(data, &m); err != nil {
		return nil, modelErr("not an ONNX model (a ModelProto): %v", err)
	}
	return convert(&m, opts)
}

// Error is a problem with one node of a model (or, with Node empty, with
// the model as a whole).
type Error struct {
	Node   string // the node's name, or its first output's when unnamed
	Index  int    // the node's position in the graph
	OpType string
	Domain string
	Opset  int64
	Msg    string
}

func (e *Error) Error() string {
	if e.OpType == "" {
		return "onnx: " + e.Msg
	}
	domain := e.Domain
	if domain == "" {
		domain = "ai.onnx"
	}
	return fmt.Sprintf("onnx: node %d %q (%s, domain %s, opset %d): %s", e.Index, e.Node, e.OpType, domain, e.Opset, e.Msg)
}

func (e *Error) Unwrap() error { return ErrModel }

func modelErr(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// minOpset and maxOpset bound the default operator set versions the
// importer reads.
const minOpset, maxOpset = 7, 21

// importer is the state of one conversion.
type importer struct {
	opts    Options
	opset   int64
	b       *fusion.Builder
	vals    map[string]*value // by ONNX name
	names   *namer
	symbols map[string]string // loom symbol -> dim_param
	onnx    map[string]string // loom tensor -> ONNX name
	consts  map[*known]*fusion.Tensor
	read    map[string]bool // the ONNX names some node or the graph's outputs read
}

// value is what an ONNX name stands for: a tensor of the graph, a known
// tensor, or both.
type value struct {
	t *fusion.Tensor
	k *known
}

func convert(m *onnxpb.ModelProto, opts Options) (*Model, error) {
	g := m.GetGraph()
	if g == nil {
		return nil, modelErr("the model has no graph")
	}
	opset := int64(-1)
	for _, o := range m.GetOpsetImport() {
		if o.GetDomain() == "" || o.GetDomain() == "ai.onnx" {
			opset = o.GetVersion()
		}
	}
	if opset < 0 {
		if len(m.GetOpsetImport()) == 0 {
			opset = 1 // IR version 2 and older: the first operator set
		} else {
			return nil, modelErr("the model imports no version of the default operator set (ai.onnx)")
		}
	}
	if opset < minOpset || opset > maxOpset {
		return nil, modelErr("the model uses operator set version %d; loom reads versions %d to %d", opset, minOpset, maxOpset)
	}
	name := opts.Name
	if name == "" {
		name = g.GetName()
	}
	im := &importer{opts: opts, opset: opset, vals: map[string]*value{}, names: newNamer(),
		symbols: map[string]string{}, onnx: map[string]string{}, consts: map[*known]*fusion.Tensor{}, read: map[string]bool{}}
	for _, n := range g.GetNode() {
		for _, in := range n.GetInput() {
			im.read[in] = true
		}
	}
	for _, o := range g.GetOutput() {
		im.read[o.GetName()] = true
	}
	gname := im.names.ident(name, "model")
	im.b = fusion.NewBuilder(gname)
	if err := im.graph(g); err != nil {
		return nil, err
	}
	var outs []*fusion.Tensor
	for k, o := range g.GetOutput() {
		for _, p := range g.GetOutput()[:k] {
			if p.GetName() == o.GetName() {
				return nil, modelErr("graph output %d (%q) is listed twice", k, o.GetName())
			}
		}
		v := im.vals[o.GetName()]
		if v == nil {
			return nil, modelErr("graph output %d (%q) is not computed by any node", k, o.GetName())
		}
		t, err := im.tensorOf(v, o.GetName())
		if err != nil {
			return nil, modelErr("graph output %q: %v", o.GetName(), err)
		}
		if t.Producer == nil || slices.Contains(outs, t) {
			// An input, a constant or another output: copy it.
			id := im.names.ident(o.GetName()+"_out", "output")
			if t, err = im.b.Node(id, "identity", fusion.Attrs{}, t); err != nil {
				return nil, modelErr("graph output %q: %v", o.GetName(), err)
			}
		}
		im.onnx[t.Name] = o.GetName()
		outs = append(outs, t)
	}
	if len(outs) == 0 {
		return nil, modelErr("the graph has no outputs")
	}
	fg, err := im.b.Graph(outs...)
	if err != nil {
		return nil, modelErr("%v", err)
	}
	fg.ModelNames = map[string]string{}
	for _, t := range append(slices.Clone(fg.Inputs), fg.Outputs...) {
		if n, ok := im.onnx[t.Name]; ok && n != t.Name {
			fg.ModelNames[t.Name] = n
		}
	}
	return &Model{Graph: fg, ONNXNames: im.onnx, Symbols: im.symbols, Opset: opset,
		Producer: strings.TrimSpace(m.GetProducerName() + " " + m.GetProducerVersion())}, nil
}

// graph declares the inputs and initializers of g and converts its nodes.
func (im *importer) graph(g *onnxpb.GraphProto) error {
	for _, t := range g.GetInitializer() {
		if t.GetName() == "" {
			return modelErr("an initializer has no name")
		}
		k, err := tensorData(t, im.opts.Dir)
		if err != nil {
			return modelErr("initializer: %v", err)
		}
		t.RawData, t.FloatData = nil, nil // decoded: let the collector have the bytes
		im.vals[t.GetName()] = &value{k: k}
	}
	if len(g.GetSparseInitializer()) > 0 {
		return modelErr("the graph has sparse initializers, which loom does not read")
	}
	// Symbols first, so no tensor takes a symbol's name.
	type dimRef struct{ sym, param string }
	var inputs []*onnxpb.ValueInfoProto
	for _, in := range g.GetInput() {
		if im.vals[in.GetName()] != nil {
			continue // an initializer listed as an input (IR < 4): a constant
		}
		inputs = append(inputs, in)
	}
	params := map[string]string{}
	for _, in := range inputs {
		tt := in.GetType().GetTensorType()
		for _, d := range tt.GetShape().GetDim() {
			if p := d.GetDimParam(); p != "" && params[p] == "" {
				if _, fixed := im.opts.Dims[p]; !fixed {
					params[p] = im.names.ident(p, "S")
					im.symbols[params[p]] = p
				}
			}
		}
	}
	for _, in := range inputs {
		if in.GetName() == "" {
			return modelErr("a graph input has no name")
		}
		tt := in.GetType().GetTensorType()
		if tt == nil {
			return modelErr("graph input %q is not a tensor", in.GetName())
		}
		dt, ok := dtypeOf(tt.GetElemType())
		if !ok {
			return modelErr("graph input %q has element type %s, which loom does not support", in.GetName(), typeName(tt.GetElemType()))
		}
		if tt.GetShape() == nil {
			return modelErr("graph input %q has no shape (loom needs every input's rank)", in.GetName())
		}
		var shape []fusion.Dim
		for k, d := range tt.GetShape().GetDim() {
			switch {
			case d.GetDimParam() != "":
				if v, ok := im.opts.Dims[d.GetDimParam()]; ok {
					if v < 0 || v >= 1<<31 {
						return modelErr("dimension %s = %d is out of range", d.GetDimParam(), v)
					}
					shape = append(shape, fusion.Const(v))
				} else {
					shape = append(shape, fusion.Sym(params[d.GetDimParam()]))
				}
			case d.Value != nil:
				if d.GetDimValue() < 0 || d.GetDimValue() >= 1<<31 {
					return modelErr("graph input %q: dimension %d is %d", in.GetName(), k, d.GetDimValue())
				}
				shape = append(shape, fusion.Const(d.GetDimValue()))
			default: // a dynamic dimension without a name
				s := im.names.ident(fmt.Sprintf("%s_dim%d", in.GetName(), k), "S")
				im.symbols[s] = ""
				shape = append(shape, fusion.Sym(s))
			}
		}
		id := im.names.ident(in.GetName(), "input")
		t, err := im.b.Input(id, dt, shape...)
		if err != nil {
			return modelErr("graph input %q: %v", in.GetName(), err)
		}
		im.onnx[id] = in.GetName()
		im.vals[in.GetName()] = &value{t: t}
	}
	for i, n := range g.GetNode() {
		if err := im.node(i, n); err != nil {
			return err
		}
	}
	return nil
}

// node converts one node.
func (im *importer) node(i int, n *onnxpb.NodeProto) error {
	c := &ctx{im: im, n: n}
	fail := func(format string, args ...any) error {
		name := n.GetName()
		if name == "" && len(n.GetOutput()) > 0 {
			name = n.GetOutput()[0]
		}
		return &Error{Node: name, Index: i, OpType: n.GetOpType(), Domain: n.GetDomain(), Opset: im.opset, Msg: fmt.Sprintf(format, args...)}
	}
	if d := n.GetDomain(); d != "" && d != "ai.onnx" {
		return fail("operators of domain %s are not supported", d)
	}
	conv, ok := converters[n.GetOpType()]
	if !ok {
		return fail("loom does not support this operator")
	}
	ins, outs := n.GetInput(), n.GetOutput()
	for len(ins) > 0 && ins[len(ins)-1] == "" {
		ins = ins[:len(ins)-1] // absent trailing inputs
	}
	switch {
	case len(ins) < conv.minIn || (conv.maxIn >= 0 && len(ins) > conv.maxIn):
		return fail("%d inputs, where %s", len(ins), arity(conv.minIn, conv.maxIn))
	case conv.maxOut >= 0 && len(outs) > conv.maxOut:
		return fail("%d outputs, where it has at most %d", len(outs), conv.maxOut)
	case len(outs) == 0:
		return fail("the node has no outputs")
	}
	for j, in := range ins {
		if in == "" && (!conv.absentAllowed || j < conv.minIn) {
			return fail("input %d is missing", j)
		}
		if in != "" && im.vals[in] == nil {
			return fail("input %d (%q) is not a graph input, an initializer or an earlier node's output", j, in)
		}
	}
	for j, out := range outs {
		if out != "" && (im.vals[out] != nil || slices.Contains(outs[:j], out)) {
			return fail("output %d (%q) is defined twice", j, out)
		}
	}
	if err := im.run(conv, c); err != nil {
		return fail("%v", err)
	}
	for j, out := range outs {
		if out != "" && im.vals[out] == nil && im.read[out] {
			return fail("loom does not compute output %d (%q) of %s", j, out, n.GetOpType())
		}
	}
	return nil
}

// run converts a node. A panic is a bug of the converter: it becomes an
// error saying so, and the host process goes on.
func (im *importer) run(conv converter, c *ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: the importer failed on this node (%v); please report it with the model", r)
		}
	}()
	return conv.run(c)
}

func arity(lo, hi int) string {
	switch {
	case hi < 0:
		return fmt.Sprintf("it takes %d or more", lo)
	case lo == hi:
		return fmt.Sprintf("it takes %d", lo)
	}
	return fmt.Sprintf("it takes %d to %d", lo, hi)
}

// tensorOf returns v as a tensor of the graph, making a known value a
// constant on first use.
func (im *importer) tensorOf(v *value, onnxName string) (*fusion.Tensor, error) {
	if v.t != nil {
		return v.t, nil
	}
	if t := im.consts[v.k]; t != nil {
		v.t = t
		return t, nil
	}
	data, err := v.k.graphData()
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("it has no elements (shape %v), which a constant of the graph cannot have", v.k.shape)
	}
	id := im.names.ident(onnxName, "const")
	t, err := im.b.Constant(id, v.k.dtype, v.k.shape, data)
	if err != nil {
		return nil, err
	}
	im.consts[v.k], v.t = t, t
	return t, nil
}

// scalar returns a rank-0 constant of dt.
func (im *importer) scalar(dt ast.DType, v float64) (*fusion.Tensor, error) {
	var k *known
	if dt.IsInt() {
		k = newInts(dt, []int64{}, []int64{int64(v)})
	} else {
		k = newFloats(dt, []int64{}, []float64{v})
	}
	return im.tensorOf(&value{k: k}, "c")
}
