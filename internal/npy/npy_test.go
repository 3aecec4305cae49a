package npy

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

// TestNumpyFiles reads files numpy wrote (testdata, by numpy 1.24).
func TestNumpyFiles(t *testing.T) {
	for _, c := range []struct {
		file  string
		want  *Array
		error string
	}{
		{"f32.npy", &Array{ast.Float32, []int64{2, 3}, []float32{0, 0.25, 0.5, 0.75, 1, 1.25}}, ""},
		{"i64.npy", &Array{ast.Int64, []int64{4}, []int64{-1, 0, 1 << 40, 7}}, ""},
		{"b.npy", &Array{ast.Bool, []int64{}, []bool{true}}, ""},
		{"f16.npy", &Array{ast.Float16, []int64{2}, []uint16{0x3800, 0xc000}}, ""},
		{"fortran.npy", nil, "Fortran-order"},
	} {
		f, err := os.Open("testdata/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Read(f)
		f.Close()
		if c.error != "" {
			if err == nil || !strings.Contains(err.Error(), c.error) {
				t.Errorf("%s: %v, want an error saying %q", c.file, err, c.error)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v (%v), want %+v", c.file, got, err, c.want)
			continue
		}
		// Written back, it is the file numpy wrote.
		var buf bytes.Buffer
		if err := Write(&buf, got); err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile("testdata/" + c.file)
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s written back:\n%q\nnumpy wrote:\n%q", c.file, buf.Bytes(), want)
		}
	}
}

func TestBadFiles(t *testing.T) {
	good, _ := os.ReadFile("testdata/f32.npy")
	for _, c := range []struct {
		data []byte
		want string
	}{
		{nil, "magic"},
		{[]byte("\x93NUMPY\x09\x00"), "version"},
		{good[:len(good)-1], "needs 24 bytes"},
		{bytes.Replace(good, []byte("<f4"), []byte(">f4"), 1), "not one loom reads"},
		{bytes.Replace(good, []byte("(2, 3)"), []byte("(2,-3)"), 1), "shape"},
		{bytes.Replace(good, []byte("(2, 3)"), []byte("(99,9)"), 1), "needs 3564 bytes"},
	} {
		if _, err := Read(bytes.NewReader(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.data, err, c.want)
		}
	}
}

func FuzzRead(f *testing.F) {
	good, _ := os.ReadFile("testdata/f32.npy")
	f.Add(good)
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatal(err)
		}
	})
}
