package onnx

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/onnx/internal/onnxpb"
)

// dtypeOf maps an ONNX element type to loom's; the second result is
// false for a type loom has no tensors of.
func dtypeOf(t int32) (ast.DType, bool) {
	switch onnxpb.TensorProto_DataType(t) {
	case onnxpb.TensorProto_FLOAT:
		return ast.Float32, true
	case onnxpb.TensorProto_DOUBLE:
		return ast.Float64, true
	case onnxpb.TensorProto_FLOAT16:
		return ast.Float16, true
	case onnxpb.TensorProto_BFLOAT16:
		return ast.BFloat16, true
	case onnxpb.TensorProto_INT32:
		return ast.Int32, true
	case onnxpb.TensorProto_INT64:
		return ast.Int64, true
	case onnxpb.TensorProto_BOOL:
		return ast.Bool, true
	}
	return ast.Invalid, false
}

// typeName names an ONNX element type for errors.
func typeName(t int32) string {
	if s, ok := onnxpb.TensorProto_DataType_name[t]; ok {
		return strings.ToLower(s)
	}
	return "type " + strconv.Itoa(int(t))
}

// maxKnownElems bounds the elements of one tensor the importer holds
// (2^31: 8 GiB of float32).
const maxKnownElems = 1 << 31

// tensorData decodes an initializer or a Constant's value. dir is the
// directory external data files are relative to ("" when the model was
// not read from a file).
func tensorData(t *onnxpb.TensorProto, dir string) (*known, error) {
	dt, ok := dtypeOf(t.GetDataType())
	if !ok {
		return nil, fmt.Errorf("tensor %q has element type %s, which loom does not support", t.GetName(), typeName(t.GetDataType()))
	}
	shape := t.GetDims()
	n := elems(shape)
	if n < 0 || n > maxKnownElems {
		return nil, fmt.Errorf("tensor %q has shape %v: too many elements", t.GetName(), shape)
	}
	if t.GetSegment() != nil {
		return nil, fmt.Errorf("tensor %q is segmented, which loom does not read", t.GetName())
	}
	raw := t.GetRawData()
	if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		var err error
		if raw, err = externalData(t, dir, n*int64(dt.Bytes())); err != nil {
			return nil, err
		}
	}
	if raw != nil || t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		return rawData(t.GetName(), dt, shape, n, raw)
	}
	count := func(got int) error {
		if int64(got) != n {
			return fmt.Errorf("tensor %q of shape %v has %d elements, needs %d", t.GetName(), shape, got, n)
		}
		return nil
	}
	switch dt {
	case ast.Float32:
		if err := count(len(t.GetFloatData())); err != nil {
			return nil, err
		}
		f := make([]float64, n)
		for j, v := range t.GetFloatData() {
			f[j] = float64(v)
		}
		return newFloats(dt, shape, f), nil
	case ast.Float64:
		if err := count(len(t.GetDoubleData())); err != nil {
			return nil, err
		}
		return newFloats(dt, shape, append([]float64(nil), t.GetDoubleData()...)), nil
	case ast.Int64:
		if err := count(len(t.GetInt64Data())); err != nil {
			return nil, err
		}
		return newInts(dt, shape, append([]int64(nil), t.GetInt64Data()...)), nil
	}
	// int32, bool, float16 and bfloat16 live in int32_data (the 16-bit
	// floats as their bit patterns).
	if err := count(len(t.GetInt32Data())); err != nil {
		return nil, err
	}
	if dt == ast.Int32 {
		i := make([]int64, n)
		for j, v := range t.GetInt32Data() {
			i[j] = int64(v)
		}
		return newInts(dt, shape, i), nil
	}
	f := make([]float64, n)
	for j, v := range t.GetInt32Data() {
		f[j] = float16At(dt, uint16(v))
		if dt == ast.Bool && v != 0 {
			f[j] = 1
		}
	}
	return newFloats(dt, shape, f), nil
}

func float16At(dt ast.DType, bits uint16) float64 {
	if dt == ast.BFloat16 {
		return ast.BFloat16Value(bits)
	}
	return ast.Float16Value(bits)
}

// rawData decodes little-endian raw bytes.
func rawData(name string, dt ast.DType, shape []int64, n int64, raw []byte) (*known, error) {
	size := int64(dt.Bytes())
	if int64(len(raw)) != n*size {
		return nil, fmt.Errorf("tensor %q of shape %v and type %s has %d bytes of data, needs %d", name, shape, dt, len(raw), n*size)
	}
	if dt.IsInt() {
		i := make([]int64, n)
		for j := range i {
			if dt == ast.Int32 {
				i[j] = int64(int32(binary.LittleEndian.Uint32(raw[4*j:])))
			} else {
				i[j] = int64(binary.LittleEndian.Uint64(raw[8*j:]))
			}
		}
		return newInts(dt, shape, i), nil
	}
	f := make([]float64, n)
	for j := range f {
		switch dt {
		case ast.Bool:
			if raw[j] != 0 {
				f[j] = 1
			}
		case ast.Float16, ast.BFloat16:
			f[j] = float16At(dt, binary.LittleEndian.Uint16(raw[2*j:]))
		case ast.Float32:
			f[j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])))
		default:
			f[j] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*j:]))
		}
	}
	return newFloats(dt, shape, f), nil
}

// externalData reads the bytes of a tensor stored outside the model
// (models over 2 GB): a file named by "location", relative to the model's
// directory and inside it, from "offset" for "length" bytes.
func externalData(t *onnxpb.TensorProto, dir string, want int64) ([]byte, error) {
	var location string
	offset, length := int64(0), int64(-1)
	for _, e := range t.GetExternalData() {
		var err error
		switch e.GetKey() {
		case "location":
			location = e.GetValue()
		case "offset":
			offset, err = strconv.ParseInt(e.GetValue(), 10, 64)
		case "length":
			length, err = strconv.ParseInt(e.GetValue(), 10, 64)
		}
		if err != nil || offset < 0 {
			return nil, fmt.Errorf("tensor %q: bad external data %s %q", t.GetName(), e.GetKey(), e.GetValue())
		}
	}
	switch {
	case location == "":
		return nil, fmt.Errorf("tensor %q is stored outside the model but names no file", t.GetName())
	case dir == "":
		return nil, fmt.Errorf("tensor %q is stored in %q, outside the model: import the model from its file (ImportFile) so that loom can find it", t.GetName(), location)
	case filepath.IsAbs(location) || !filepath.IsLocal(location):
		return nil, fmt.Errorf("tensor %q is stored in %q, which is not a file inside the model's directory", t.GetName(), location)
	}
	if length < 0 {
		length = want
	}
	if length != want {
		return nil, fmt.Errorf("tensor %q: its external data is %d bytes, its shape needs %d", t.GetName(), length, want)
	}
	// Opened inside the directory (no link may lead out of it), and only a
	// regular file (a FIFO would block the open).
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %v", t.GetName(), err)
	}
	defer root.Close()
	if fi, err := root.Stat(location); err != nil || !fi.Mode().IsRegular() {
		if err == nil {
			err = fmt.Errorf("%s is not a regular file", location)
		}
		return nil, fmt.Errorf("tensor %q: %v", t.GetName(), err)
	}
	f, err := root.Open(location)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %v", t.GetName(), err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() < offset || fi.Size()-offset < length {
		return nil, fmt.Errorf("tensor %q: %s is shorter than offset %d + %d bytes", t.GetName(), location, offset, length)
	}
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil {
		if err == io.EOF {
			err = fmt.Errorf("%s ends before offset %d + %d bytes", location, offset, length)
		}
		return nil, fmt.Errorf("tensor %q: %v", t.GetName(), err)
	}
	return buf, nil
}

// Tensor is a tensor of a model's test data: its name, element type,
// shape and elements in row-major order.
type Tensor struct {
	Name  string
	DType ast.DType
	Shape []int64
	Data  []float64
}

// ReadTensor reads a serialized TensorProto (an input_K.pb or
// output_K.pb of ONNX's test-data layout).
func ReadTensor(r io.Reader) (Tensor, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxModelBytes+1))
	if err != nil {
		return Tensor{}, err
	}
	var t onnxpb.TensorProto
	if err := proto.Unmarshal(data, &t); err != nil {
		return Tensor{}, modelErr("not an ONNX tensor (a TensorProto): %v", err)
	}
	k, err := tensorData(&t, "")
	if err != nil {
		return Tensor{}, modelErr("%v", err)
	}
	f := k.f
	if k.dtype.IsInt() {
		f = make([]float64, len(k.i))
		for j, v := range k.i {
			f[j] = float64(v)
		}
	}
	return Tensor{Name: t.GetName(), DType: k.dtype, Shape: k.shape, Data: f}, nil
}

// ReadTensorFile reads the TensorProto in a file.
func ReadTensorFile(path string) (Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return Tensor{}, err
	}
	defer f.Close()
	return ReadTensor(f)
}
