package onnx_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
	"github.com/loom-go/loom/onnx"
)

// testCase is one directory of testdata/onnx: a model, its inputs and
// ONNX Runtime's outputs.
type testCase struct {
	name    string
	model   *onnx.Model
	inputs  map[string]any // by the graph's input names
	shapes  map[string][]int64
	sizes   map[string]int64
	outputs []onnx.Tensor // in the model's output order
}

func loadCase(t *testing.T, dir string) *testCase {
	t.Helper()
	m, err := onnx.ImportFile(filepath.Join(dir, "model.onnx"), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &testCase{name: filepath.Base(dir), model: m, inputs: map[string]any{}, shapes: map[string][]int64{}, sizes: map[string]int64{}}
	data := filepath.Join(dir, "test_data_set_0")
	for k := 0; ; k++ {
		in, err := onnx.ReadTensorFile(filepath.Join(data, fmt.Sprintf("input_%d.pb", k)))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		g := graphInput(m, in.Name)
		if g == nil {
			t.Fatalf("input %q is no input of the imported graph", in.Name)
		}
		for a, d := range g.Shape {
			if syms := d.Symbols(); len(syms) == 1 {
				c.sizes[syms[0]] = in.Shape[a]
			}
		}
		c.inputs[g.Name] = ast.DataOf(in.DType, in.Data)
		c.shapes[g.Name] = in.Shape
	}
	for k := 0; ; k++ {
		out, err := onnx.ReadTensorFile(filepath.Join(data, fmt.Sprintf("output_%d.pb", k)))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c.outputs = append(c.outputs, out)
	}
	if len(c.outputs) != len(m.Graph.Outputs) {
		t.Fatalf("%d reference outputs for %d graph outputs", len(c.outputs), len(m.Graph.Outputs))
	}
	return c
}

func graphInput(m *onnx.Model, onnxName string) *fusion.Tensor {
	for _, in := range m.Graph.Inputs {
		if m.ONNXNames[in.Name] == onnxName {
			return in
		}
	}
	return nil
}

// close reports whether got matches want within 1e-4 relative (1e-5
// absolute near 0); NaN matches only NaN.
func closeTo(got, want float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	return math.Abs(got-want) <= 1e-5+1e-4*math.Abs(want)
}

func (c *testCase) check(t *testing.T, outs map[string]any) {
	t.Helper()
	for k, o := range c.model.Graph.Outputs {
		want := c.outputs[k]
		got := ast.Float64s(o.DType, outs[o.Name])
		if len(got) != len(want.Data) {
			t.Errorf("%s: output %s has %d elements, ONNX Runtime's %d", c.name, want.Name, len(got), len(want.Data))
			continue
		}
		shape, err := evalShape(o.Shape, c.sizes)
		if err != nil || !slices.Equal(shape, want.Shape) {
			t.Errorf("%s: output %s has shape %v (%s), ONNX Runtime's %v", c.name, want.Name, shape, o.Shape, want.Shape)
		}
		bad := 0
		for e := range got {
			if !closeTo(got[e], want.Data[e]) {
				if bad < 3 {
					t.Errorf("%s: output %s[%d] = %v, ONNX Runtime %v", c.name, want.Name, e, got[e], want.Data[e])
				}
				bad++
			}
		}
		if bad > 3 {
			t.Errorf("%s: output %s: %d elements differ", c.name, want.Name, bad)
		}
	}
}

func evalShape(s fusion.Shape, sizes map[string]int64) ([]int64, error) {
	out := make([]int64, len(s))
	for a, d := range s {
		v, err := d.Eval(sizes)
		if err != nil {
			return nil, err
		}
		out[a] = v
	}
	return out, nil
}

func cases(t *testing.T) []string {
	dirs, err := filepath.Glob("../testdata/onnx/*/model.onnx")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases under testdata/onnx (%v)", err)
	}
	for k := range dirs {
		dirs[k] = filepath.Dir(dirs[k])
	}
	return dirs
}

// TestImportMatchesOnnxRuntime imports each model of testdata/onnx, runs
// it with loom's interpreter and compares with ONNX Runtime's outputs; a
// model with 2-d convolutions or poolings again in layout NHWC.
func TestImportMatchesOnnxRuntime(t *testing.T) {
	for _, dir := range cases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := loadCase(t, dir)
			p, err := fusion.Compile(c.model.Graph, fusion.Options{})
			if err != nil {
				t.Fatal(err)
			}
			outs, err := p.Interpret(c.sizes, c.inputs)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, outs)
			// The same with every 2-d convolution and pooling in NHWC.
			if !slices.ContainsFunc(c.model.Graph.Nodes, func(n *fusion.Node) bool {
				return n.Op == "conv2d" || n.Op == "max_pool2d" || n.Op == "avg_pool2d"
			}) {
				return
			}
			p, err = fusion.Compile(c.model.Graph, fusion.Options{Layout: fusion.LayoutChannelsLast})
			if err != nil {
				t.Fatal(err)
			}
			if outs, err = p.Interpret(c.sizes, c.inputs); err != nil {
				t.Fatal(err)
			}
			c.check(t, outs)
		})
	}
}

// TestCompiledMatchesOnnxRuntime compiles each model of testdata/onnx
// with loom's default schedules and runs it natively, on outputs poisoned
// (NaN) first, so that an element no kernel writes shows; the outputs must
// be ONNX Runtime's.
func TestCompiledMatchesOnnxRuntime(t *testing.T) {
	cache := sharedCache(t)
	for _, dir := range cases(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := loadCase(t, dir)
			m, err := module.Compile(c.model.Graph, module.Options{Cache: cache})
			if err != nil {
				t.Fatal(err)
			}
			ins := map[string]module.Tensor{}
			for name, data := range c.inputs {
				ins[name] = module.Tensor{Shape: c.shapes[name], Data: data}
			}
			outs, err := m.NewOutputs(ins)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range c.model.Graph.Outputs {
				ast.Poison(o.DType, outs[o.Name].Data)
			}
			if err := m.Run(ins, outs); err != nil {
				t.Fatal(err)
			}
			got := map[string]any{}
			for name, o := range outs {
				got[name] = o.Data
			}
			c.check(t, got)
		})
	}
}

// TestImportErrors: each bad model is an error that names what is wrong.
func TestImportErrors(t *testing.T) {
	for _, c := range []struct {
		name, data, want string
	}{
		{"empty", "", "no graph"},
		{"garbage", "\xff\xff\xff\xff", "not an ONNX model"},
	} {
		_, err := onnx.Import(strings.NewReader(c.data), onnx.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, onnx.ErrModel) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestPositionsPastTheTable: GPT-2's position embedding is a table of 32
// rows indexed by iota(seq); at seq = 33 the compiled model reports the
// index out of range (the gather's run-time check, which inlining the
// positions must not remove) instead of reading past the table.
func TestPositionsPastTheTable(t *testing.T) {
	c := loadCase(t, filepath.Join("..", "testdata", "onnx", "net_gpt_dynamic_seq"))
	// the module TestCompiledMatchesOnnxRuntime compiled (sharedCache)
	cache := sharedCache(t)
	m, err := module.Compile(c.model.Graph, module.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []int64{32, 33} {
		ids := make([]int64, 2*seq)
		ins := map[string]module.Tensor{c.model.Graph.Inputs[0].Name: {Shape: []int64{2, seq}, Data: ids}}
		outs, err := m.NewOutputs(ins)
		if err != nil {
			t.Fatal(err)
		}
		err = m.Run(ins, outs)
		if seq <= 32 && err != nil || seq > 32 && !errors.Is(err, native.ErrIndexOutOfRange) {
			t.Errorf("seq %d: %v", seq, err)
		}
	}
}
