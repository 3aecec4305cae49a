// Package safetensors reads and writes the safetensors format, where loom
// keeps a graph's weights: an 8-byte little-endian header length, a JSON
// header mapping each tensor's name to its dtype, shape and byte range
// (data_offsets, relative to the end of the header), then the tensors'
// bytes, little-endian and row-major. The format is Hugging Face's
// (https://huggingface.co/docs/safetensors); Python, Rust and C++ readers
// open these files as they are.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/rawdata"
)

// Tensor is one tensor of a file.
type Tensor struct {
	Name  string
	DType ast.DType
	Shape []int64
	// Data holds the elements in row-major order (float64 holds every
	// value of loom's types exactly, int64 within ±2^53).
	Data []float64
}

var dtypeNames = map[ast.DType]string{
	ast.Bool: "BOOL", ast.Int32: "I32", ast.Int64: "I64", ast.Float16: "F16",
	ast.BFloat16: "BF16", ast.Float32: "F32", ast.Float64: "F64",
}

func dtypeOf(name string) (ast.DType, bool) {
	for dt, n := range dtypeNames {
		if n == name {
			return dt, true
		}
	}
	return ast.Invalid, false
}

type entry struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// Write writes the tensors, in the order given, with metadata (may be nil).
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	off := int64(0)
	for _, t := range tensors {
		name, ok := dtypeNames[t.DType]
		if !ok {
			return fmt.Errorf("safetensors: tensor %s has dtype %s", t.Name, t.DType)
		}
		if _, dup := header[t.Name]; dup || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: tensor name %q is used twice or reserved", t.Name)
		}
		n := int64(1)
		for _, d := range t.Shape {
			n *= d
		}
		if n != int64(len(t.Data)) {
			return fmt.Errorf("safetensors: tensor %s of shape %v has %d elements", t.Name, t.Shape, len(t.Data))
		}
		size := n * int64(t.DType.Bytes())
		header[t.Name] = entry{DType: name, Shape: append([]int64{}, t.Shape...), DataOffsets: [2]int64{off, off + size}}
		off += size
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	// Pad the header with spaces so that the data starts 8-byte aligned.
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(h)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(h); err != nil {
		return err
	}
	for _, t := range tensors {
		b, err := rawdata.Append(nil, ast.DataOf(t.DType, t.Data))
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// maxHeader bounds a header (the format's own limit is 100 MB).
const maxHeader = 100 << 20

// File is an open safetensors file: its header, read, and its tensors,
// read on demand.
type File struct {
	r        io.ReaderAt
	start    int64 // where the data begins
	size     int64 // bytes of data
	entries  map[string]entry
	Metadata map[string]string
}

// Open reads the header of the file at path; Close closes it.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	sf, err := NewFile(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sf, nil
}

// Close closes the underlying file, when Open opened it.
func (f *File) Close() error {
	if c, ok := f.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// NewFile reads the header of size bytes of safetensors data in r.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("safetensors: no header: %v", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeader || int64(n) > size-8 {
		return nil, fmt.Errorf("safetensors: header of %d bytes in a file of %d", n, size)
	}
	h := make([]byte, n)
	if _, err := r.ReadAt(h, 8); err != nil {
		return nil, fmt.Errorf("safetensors: header: %v", err)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(h))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("safetensors: header: %v", err)
	}
	f := &File{r: r, start: 8 + int64(n), size: size - 8 - int64(n), entries: map[string]entry{}}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: __metadata__: %v", err)
			}
			continue
		}
		var e entry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %v", name, err)
		}
		dt, ok := dtypeOf(e.DType)
		if !ok {
			return nil, fmt.Errorf("safetensors: tensor %q has dtype %q, which loom does not read", name, e.DType)
		}
		count := int64(1)
		for _, d := range e.Shape {
			if d < 0 || (d > 0 && count > math.MaxInt64/8/d) {
				return nil, fmt.Errorf("safetensors: tensor %q has shape %v", name, e.Shape)
			}
			count *= d
		}
		b, end := e.DataOffsets[0], e.DataOffsets[1]
		if b < 0 || end < b || end > f.size || end-b != count*int64(dt.Bytes()) {
			return nil, fmt.Errorf("safetensors: tensor %q: bytes [%d, %d) do not hold %v %s in %d bytes of data", name, b, end, e.Shape, e.DType, f.size)
		}
		f.entries[name] = e
	}
	return f, nil
}

// Names lists the tensors, in the order of their data.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.entries))
	for n := range f.entries {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		return f.entries[names[i]].DataOffsets[0] < f.entries[names[j]].DataOffsets[0]
	})
	return names
}

// Info returns a tensor's dtype and shape; ok is false when there is none
// of that name.
func (f *File) Info(name string) (ast.DType, []int64, bool) {
	e, ok := f.entries[name]
	if !ok {
		return ast.Invalid, nil, false
	}
	dt, _ := dtypeOf(e.DType)
	return dt, slices.Clone(e.Shape), true
}

// Read returns a tensor's elements.
func (f *File) Read(name string) (Tensor, error) {
	e, ok := f.entries[name]
	if !ok {
		return Tensor{}, fmt.Errorf("safetensors: no tensor %q", name)
	}
	dt, _ := dtypeOf(e.DType)
	raw := make([]byte, e.DataOffsets[1]-e.DataOffsets[0])
	if _, err := f.r.ReadAt(raw, f.start+e.DataOffsets[0]); err != nil && len(raw) > 0 {
		return Tensor{}, fmt.Errorf("safetensors: tensor %q: %v", name, err)
	}
	size := int64(dt.Bytes())
	data := make([]float64, int64(len(raw))/size)
	for k := range data {
		b := raw[int64(k)*size:]
		switch dt {
		case ast.Bool:
			if b[0] != 0 {
				data[k] = 1
			}
		case ast.Int32:
			data[k] = float64(int32(binary.LittleEndian.Uint32(b)))
		case ast.Int64:
			v := int64(binary.LittleEndian.Uint64(b))
			if v > 1<<53 || v < -(1<<53) {
				return Tensor{}, fmt.Errorf("safetensors: tensor %q: element %d (%d) is beyond the ±2^53 loom holds", name, k, v)
			}
			data[k] = float64(v)
		case ast.Float16:
			data[k] = ast.Float16Value(binary.LittleEndian.Uint16(b))
		case ast.BFloat16:
			data[k] = ast.BFloat16Value(binary.LittleEndian.Uint16(b))
		case ast.Float32:
			data[k] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		default:
			data[k] = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
	}
	return Tensor{Name: name, DType: dt, Shape: slices.Clone(e.Shape), Data: data}, nil
}
