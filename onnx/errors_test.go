package onnx_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/loom-go/loom/onnx"
	"github.com/loom-go/loom/onnx/internal/onnxpb"
)

// model builds a ModelProto of opset 13 with one float input x [2, 3],
// the given initializers and nodes, and outputs.
func model(nodes []*onnxpb.NodeProto, inits []*onnxpb.TensorProto, outputs ...string) *onnxpb.ModelProto {
	f := int32(onnxpb.TensorProto_FLOAT)
	g := &onnxpb.GraphProto{
		Name:        proto.String("g"),
		Node:        nodes,
		Initializer: inits,
		Input: []*onnxpb.ValueInfoProto{{
			Name: proto.String("x"),
			Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
				ElemType: &f,
				Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
					{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 2}},
					{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "S"}},
				}},
			}}},
		}},
	}
	for _, o := range outputs {
		g.Output = append(g.Output, &onnxpb.ValueInfoProto{Name: proto.String(o)})
	}
	return &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(13)}},
		Graph:       g,
	}
}

func node(op, name string, ins, outs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: ins, Output: outs, Attribute: attrs}
}

func ints(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func int64Tensor(name string, v ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)),
		Dims: []int64{int64(len(v))}, Int64Data: v}
}

func importProto(m *onnxpb.ModelProto) error {
	data, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	_, err = onnx.Import(bytes.NewReader(data), onnx.Options{})
	return err
}

// TestBadModels: every malformed or unsupported model is an error naming
// the node, its operator and what is wrong; none panics.
func TestBadModels(t *testing.T) {
	relu := node("Relu", "r", []string{"x"}, []string{"y"})
	custom := node("FusedThing", "f", []string{"x"}, []string{"y"})
	custom.Domain = proto.String("com.microsoft")
	opset99 := model([]*onnxpb.NodeProto{relu}, nil, "y")
	opset99.OpsetImport[0].Version = proto.Int64(99)
	badType := int64Tensor("shape", 2, 3)
	badType.DataType = proto.Int32(int32(onnxpb.TensorProto_STRING))
	short := &onnxpb.TensorProto{Name: proto.String("w"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
		Dims: []int64{3, 2}, RawData: make([]byte, 20)}
	external := &onnxpb.TensorProto{Name: proto.String("w"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
		Dims: []int64{3}, DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
		ExternalData: []*onnxpb.StringStringEntryProto{{Key: proto.String("location"), Value: proto.String("../../etc/passwd")}}}
	w31 := &onnxpb.TensorProto{Name: proto.String("w"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
		Dims: []int64{3, 1}, FloatData: []float32{1, 2, 3}}
	for _, c := range []struct {
		name  string
		model *onnxpb.ModelProto
		want  []string
	}{
		{"unknown op", model([]*onnxpb.NodeProto{node("Frobnicate", "fb", []string{"x"}, []string{"y"})}, nil, "y"),
			[]string{`node 0 "fb" (Frobnicate, domain ai.onnx, opset 13)`, "does not support"}},
		{"other domain", model([]*onnxpb.NodeProto{custom}, nil, "y"), []string{"domain com.microsoft", "not supported"}},
		{"opset", opset99, []string{"version 99"}},
		{"missing input", model([]*onnxpb.NodeProto{node("Add", "a", []string{"x", "w"}, []string{"y"})}, nil, "y"),
			[]string{`"a" (Add`, `input 1 ("w") is not`}},
		{"cycle", model([]*onnxpb.NodeProto{node("Relu", "r1", []string{"z"}, []string{"y"}), node("Relu", "r2", []string{"y"}, []string{"z"})}, nil, "y"),
			[]string{`"r1"`, `("z") is not`}},
		{"defined twice", model([]*onnxpb.NodeProto{relu, node("Relu", "r2", []string{"x"}, []string{"y"})}, nil, "y"),
			[]string{`"r2"`, "defined twice"}},
		{"dangling output", model([]*onnxpb.NodeProto{relu}, nil, "nope"), []string{`"nope"`, "not computed"}},
		{"shape mismatch", model([]*onnxpb.NodeProto{node("Add", "ad", []string{"x", "w"}, []string{"y"})}, []*onnxpb.TensorProto{w31}, "y"),
			[]string{`"ad" (Add`, "[2, S]", "[3, 1]"}},
		{"run-time shape", model([]*onnxpb.NodeProto{node("Reshape", "rs", []string{"x", "x"}, []string{"y"})}, nil, "y"),
			[]string{`"rs" (Reshape`, "computed at run time"}},
		{"bad reshape", model([]*onnxpb.NodeProto{node("Reshape", "rs", []string{"x", "shape"}, []string{"y"})}, []*onnxpb.TensorProto{int64Tensor("shape", -1, -1)}, "y"),
			[]string{`"rs"`, "more than one -1"}},
		{"string initializer", model([]*onnxpb.NodeProto{node("Reshape", "rs", []string{"x", "shape"}, []string{"y"})}, []*onnxpb.TensorProto{badType}, "y"),
			[]string{"element type string"}},
		{"short raw data", model([]*onnxpb.NodeProto{node("MatMul", "mm", []string{"x", "w"}, []string{"y"})}, []*onnxpb.TensorProto{short}, "y"),
			[]string{`"w"`, "20 bytes", "needs 24"}},
		{"external data", model([]*onnxpb.NodeProto{node("Add", "a", []string{"x", "w"}, []string{"y"})}, []*onnxpb.TensorProto{external}, "y"),
			[]string{`"w"`, "outside the model"}},
		{"bad attribute type", model([]*onnxpb.NodeProto{node("Transpose", "tr", []string{"x"}, []string{"y"},
			&onnxpb.AttributeProto{Name: proto.String("perm"), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(1)})}, nil, "y"),
			[]string{`"tr" (Transpose`, "perm is FLOAT"}},
		{"bad perm", model([]*onnxpb.NodeProto{node("Transpose", "tr", []string{"x"}, []string{"y"}, ints("perm", 0, 0))}, nil, "y"),
			[]string{"not a permutation"}},
		{"run-time Mod", model([]*onnxpb.NodeProto{node("Mod", "md", []string{"x", "x"}, []string{"y"})}, nil, "y"),
			[]string{`"md" (Mod`, "computed at run time"}},
		{"run-time ScatterND", model([]*onnxpb.NodeProto{node("ScatterND", "sn", []string{"x", "i", "x"}, []string{"y"})}, []*onnxpb.TensorProto{int64Tensor("i", 0)}, "y"),
			[]string{`"sn" (ScatterND`, "input 0, data", "computed at run time"}},
		{"read mask", model([]*onnxpb.NodeProto{node("Dropout", "d", []string{"x"}, []string{"y", "mask"})}, nil, "y", "mask"),
			[]string{"mask output"}},
	} {
		err := importProto(c.model)
		if err == nil || !errors.Is(err, onnx.ErrModel) {
			t.Errorf("%s: got %v, want an ErrModel", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\ndoes not say %q", c.name, err, w)
			}
		}
	}
}

// TestTruncatedModels: every prefix of a real model is an error or a
// model, never a panic.
func TestTruncatedModels(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "onnx", "net_attention", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(data); n += 1 + n/16 {
		if _, err := onnx.Import(bytes.NewReader(data[:n]), onnx.Options{}); err == nil && n < len(data)/2 {
			t.Errorf("a model cut to %d of %d bytes was accepted", n, len(data))
		}
	}
}

// FuzzImport: no input makes the importer panic.
func FuzzImport(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "testdata", "onnx", "*", "model.onnx"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := onnx.Import(bytes.NewReader(data), onnx.Options{})
		switch {
		case err != nil && strings.Contains(err.Error(), "internal error"):
			t.Fatal(err) // a converter panicked
		case err == nil && m.Graph == nil:
			t.Fatal("no error and no graph")
		}
	})
}

// TestExternalData: a model whose weights live in a file beside it
// imports from its file; from a reader, it says where to look.
func TestExternalData(t *testing.T) {
	path := filepath.Join("..", "testdata", "onnx", "external_data", "model.onnx")
	if _, err := onnx.ImportFile(path, onnx.Options{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := onnx.Import(bytes.NewReader(data), onnx.Options{}); err == nil || !strings.Contains(err.Error(), "import the model from its file") {
		t.Errorf("external data from a reader: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model.onnx"), data, 0o644)
	os.WriteFile(filepath.Join(dir, "weights.bin"), []byte("short"), 0o644)
	if _, err := onnx.ImportFile(filepath.Join(dir, "model.onnx"), onnx.Options{}); err == nil || !strings.Contains(err.Error(), "shorter than") {
		t.Errorf("a short external file: %v", err)
	}
}

// TestExternalDataStaysInside: a link out of the model's directory, or a
// file that is not a regular one, is refused.
func TestExternalDataStaysInside(t *testing.T) {
	src := filepath.Join("..", "testdata", "onnx", "external_data")
	data, err := os.ReadFile(filepath.Join(src, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	weights, err := filepath.Abs(filepath.Join(src, "weights.bin"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model.onnx"), data, 0o644)
	if err := os.Symlink(weights, filepath.Join(dir, "weights.bin")); err != nil {
		t.Skip(err)
	}
	if _, err := onnx.ImportFile(filepath.Join(dir, "model.onnx"), onnx.Options{}); err == nil {
		t.Error("a link to a file outside the model's directory was followed")
	}
	os.Remove(filepath.Join(dir, "weights.bin"))
	os.Mkdir(filepath.Join(dir, "weights.bin"), 0o755)
	if _, err := onnx.ImportFile(filepath.Join(dir, "model.onnx"), onnx.Options{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory as external data: %v", err)
	}
}

// TestOutputsThatAreNotComputed: a graph output that is an input, an
// initializer, or another output gets a copy of its own.
func TestOutputsThatAreNotComputed(t *testing.T) {
	w := &onnxpb.TensorProto{Name: proto.String("w"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
		Dims: []int64{2}, FloatData: []float32{1, 2}}
	m := model([]*onnxpb.NodeProto{node("Relu", "r", []string{"x"}, []string{"y"})}, []*onnxpb.TensorProto{w}, "y", "x", "w", "y")
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := onnx.Import(bytes.NewReader(data), onnx.Options{})
	if err == nil {
		t.Fatalf("an output listed twice was accepted: %d outputs", len(got.Graph.Outputs))
	}
	m = model([]*onnxpb.NodeProto{node("Relu", "r", []string{"x"}, []string{"y"})}, []*onnxpb.TensorProto{w}, "y", "x", "w")
	if data, err = proto.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if got, err = onnx.Import(bytes.NewReader(data), onnx.Options{}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range got.Graph.Outputs {
		if o.Producer == nil {
			t.Errorf("output %s is not computed by a node", o.Name)
		}
		names = append(names, got.ONNXNames[o.Name])
	}
	if strings.Join(names, ",") != "y,x,w" {
		t.Errorf("the outputs are %v, want the model's y, x, w", names)
	}
}
