package module

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
)

// Tensor is the data of one input or output: a Go slice of the tensor's
// element type ([]float32 for float32, as ast.Interpret takes it) holding
// its elements in row-major order, and its shape.
type Tensor struct {
	Shape []int64
	Data  any
}

// Sizes is the shape function: it binds every symbol of the graph from
// the inputs' shapes and checks each input against the graph (its rank,
// every constant dimension, every dimension that is a product or sum of
// symbols bound elsewhere), naming the input, the dimension and both
// values when one is wrong.
func (m *Module) Sizes(inputs map[string]Tensor) (map[string]int64, error) {
	for name := range inputs {
		if !slices.ContainsFunc(m.inputs, func(t *fusion.Tensor) bool { return t.Name == name }) {
			return nil, fmt.Errorf("module: %s is no input of graph %s (inputs: %s)", name, m.plan.Graph.Name, names(m.inputs))
		}
	}
	shapes := make([][]int64, len(m.inputs))
	for i, t := range m.inputs {
		in, ok := inputs[t.Name]
		if !ok {
			return nil, fmt.Errorf("module: no input %s (graph %s takes %s)", t.Name, m.plan.Graph.Name, names(m.inputs))
		}
		shapes[i] = in.Shape
	}
	sizes, err := m.bind(shapes)
	if err != nil {
		return nil, err
	}
	for _, t := range m.inputs {
		if err := checkData(t, inputs[t.Name], "input"); err != nil {
			return nil, err
		}
	}
	return sizes, nil
}

// bind binds the symbols from the inputs' shapes (in the order of
// m.inputs) and checks every dimension.
func (m *Module) bind(shapes [][]int64) (map[string]int64, error) {
	sizes := make(map[string]int64, len(m.symbols))
	boundBy := map[string]string{}
	// Symbols first from the dimensions that are one symbol alone, then
	// every dimension checked.
	for i, t := range m.inputs {
		shape := shapes[i]
		if len(shape) != len(t.Shape) {
			return nil, fmt.Errorf("module: input %s has %d dimensions %v; the graph's has %d: %s", t.Name, len(shape), shape, len(t.Shape), t.Shape)
		}
		for k, d := range t.Shape {
			syms := d.Symbols()
			if len(syms) != 1 || !d.Equal(fusion.Sym(syms[0])) {
				continue
			}
			v := shape[k]
			if v < 0 {
				return nil, fmt.Errorf("module: input %s: dimension %d is %d", t.Name, k, v)
			}
			if old, ok := sizes[syms[0]]; ok && old != v {
				return nil, fmt.Errorf("module: input %s: dimension %d (%s) is %d, but %s is %d by %s", t.Name, k, d, v, syms[0], old, boundBy[syms[0]])
			}
			if _, ok := sizes[syms[0]]; !ok {
				sizes[syms[0]] = v
				boundBy[syms[0]] = "input " + t.Name
			}
		}
	}
	for _, s := range m.symbols {
		if _, ok := sizes[s]; !ok {
			return nil, fmt.Errorf("module: no input dimension is the size %s alone: it cannot be bound from the inputs' shapes", s)
		}
	}
	for i, t := range m.inputs {
		for k, d := range t.Shape {
			want, err := d.Eval(sizes)
			if err != nil {
				return nil, fmt.Errorf("module: input %s: dimension %d (%s): %v", t.Name, k, d, err)
			}
			if shapes[i][k] != want {
				if _, isConst := d.IsConst(); isConst {
					return nil, fmt.Errorf("module: input %s: dimension %d is %d; the graph's is %d", t.Name, k, shapes[i][k], want)
				}
				return nil, fmt.Errorf("module: input %s: dimension %d is %d; the graph's is %s = %d at %s", t.Name, k, shapes[i][k], d, want, strings.TrimSpace(sizesKey(sizes)))
			}
		}
	}
	return sizes, nil
}

// OutputShapes returns the shape of every output at the inputs' shapes.
func (m *Module) OutputShapes(inputs map[string]Tensor) (map[string][]int64, error) {
	sizes, err := m.Sizes(inputs)
	if err != nil {
		return nil, err
	}
	return m.outputShapes(sizes)
}

func (m *Module) outputShapes(sizes map[string]int64) (map[string][]int64, error) {
	out := map[string][]int64{}
	for _, t := range m.outputs {
		shape, err := shapeAt(t, sizes)
		if err != nil {
			return nil, err
		}
		out[t.Name] = shape
	}
	return out, nil
}

// NewOutputs returns zeroed outputs for the inputs' shapes, to pass to Run.
func (m *Module) NewOutputs(inputs map[string]Tensor) (map[string]Tensor, error) {
	shapes, err := m.OutputShapes(inputs)
	if err != nil {
		return nil, err
	}
	out := map[string]Tensor{}
	for _, t := range m.outputs {
		n := int64(1)
		for _, d := range shapes[t.Name] {
			n *= d
		}
		data, err := ast.NewData(ast.NewBuffer(t.Name, t.DType, ast.I64(n)), nil)
		if err != nil {
			return nil, err
		}
		out[t.Name] = Tensor{Shape: shapes[t.Name], Data: data}
	}
	return out, nil
}

// shapeAt evaluates t's shape at sizes.
func shapeAt(t *fusion.Tensor, sizes map[string]int64) ([]int64, error) {
	shape := make([]int64, len(t.Shape))
	for k, d := range t.Shape {
		v, err := d.Eval(sizes)
		if err != nil {
			return nil, err
		}
		if v < 0 {
			return nil, fmt.Errorf("module: %s: dimension %d (%s) is %d at these sizes", t.Name, k, d, v)
		}
		shape[k] = v
	}
	return shape, nil
}

// checkData checks that x holds a slice of t's element type with as many
// elements as its shape.
func checkData(t *fusion.Tensor, x Tensor, what string) error {
	if x.Data == nil {
		return fmt.Errorf("module: %s %s has no data (nil)", what, t.Name)
	}
	v := reflect.ValueOf(x.Data)
	if v.Type() != sliceType(t.DType) {
		return fmt.Errorf("module: %s %s is %s: its data must be a %s, got %T", what, t.Name, t.DType, ast.GoType(t.DType), x.Data)
	}
	n := int64(1)
	for _, d := range x.Shape {
		n *= d
	}
	if int64(v.Len()) != n {
		return fmt.Errorf("module: %s %s has shape %v (%d elements) but %d elements of data", what, t.Name, x.Shape, n, v.Len())
	}
	if v.IsNil() && n > 0 {
		return fmt.Errorf("module: %s %s has no data (nil)", what, t.Name)
	}
	return nil
}

// sliceType returns the Go type of the data of a tensor of type dt.
func sliceType(dt ast.DType) reflect.Type {
	switch dt {
	case ast.Float32:
		return reflect.TypeFor[[]float32]()
	case ast.Float64:
		return reflect.TypeFor[[]float64]()
	case ast.Int32:
		return reflect.TypeFor[[]int32]()
	case ast.Int64:
		return reflect.TypeFor[[]int64]()
	case ast.Bool:
		return reflect.TypeFor[[]bool]()
	}
	return reflect.TypeFor[[]uint16]() // float16, bfloat16: their encodings
}

// names lists the tensors' names.
func names(ts []*fusion.Tensor) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return strings.Join(out, ", ")
}
