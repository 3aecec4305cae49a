package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

func TestRoundTrip(t *testing.T) {
	in := []Tensor{
		{Name: "f32", DType: ast.Float32, Shape: []int64{2, 2}, Data: []float64{1.5, -2, math.Inf(1), 0}},
		{Name: "f64", DType: ast.Float64, Shape: []int64{1}, Data: []float64{math.Pi}},
		{Name: "f16", DType: ast.Float16, Shape: []int64{2}, Data: []float64{0.5, -65504}},
		{Name: "bf16", DType: ast.BFloat16, Shape: []int64{1}, Data: []float64{3}},
		{Name: "i32", DType: ast.Int32, Shape: []int64{3}, Data: []float64{-1, 0, math.MaxInt32}},
		{Name: "i64", DType: ast.Int64, Shape: []int64{}, Data: []float64{1 << 53}},
		{Name: "b", DType: ast.Bool, Shape: []int64{2}, Data: []float64{1, 0}},
		{Name: "empty", DType: ast.Float32, Shape: []int64{0, 3}, Data: []float64{}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, in, map[string]string{"format": "test"}); err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint64(buf.Bytes()); (8+n)%8 != 0 {
		t.Errorf("the data starts at %d, not 8-byte aligned", 8+n)
	}
	f, err := NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "test" {
		t.Errorf("metadata %v", f.Metadata)
	}
	var names []string
	for _, w := range in {
		names = append(names, w.Name)
		got, err := f.Read(w.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got.DType != w.DType || !slices.Equal(got.Shape, w.Shape) || !slices.Equal(got.Data, w.Data) {
			t.Errorf("%s: got %v, want %v", w.Name, got, w)
		}
	}
	if got := f.Names(); !slices.Equal(got[:len(got)-1], names[:len(names)-1]) {
		t.Errorf("names %v, want %v", got, names)
	}
}

func TestBadFiles(t *testing.T) {
	header := func(h string) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		return append(append(b, h...), make([]byte, 8)...)
	}
	for _, c := range []struct {
		data []byte
		want string
	}{
		{nil, "no header"},
		{[]byte{255, 255, 255, 255, 255, 255, 255, 255}, "header of"},
		{header(`{`), "header"},
		{header(`{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}`), "does not read"},
		{header(`{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}`), "do not hold"},
		{header(`{"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}`), "do not hold"},
		{header(`{"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}`), "shape"},
		{header(`{"a": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 4]}}`), "shape"},
		{header(`{"a": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}`), ""},
	} {
		f, err := NewFile(bytes.NewReader(c.data), int64(len(c.data)))
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.data, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v (%v), want %q", c.data, err, f, c.want)
		}
	}
}

func FuzzFile(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, []Tensor{{Name: "w", DType: ast.Float32, Shape: []int64{2}, Data: []float64{1, 2}}}, nil)
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		sf, err := NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		for _, n := range sf.Names() {
			sf.Read(n)
		}
	})
}
