// Package npy reads and writes NumPy's .npy files (format versions 1.0 to
// 3.0): a magic string, a header (a Python dict literal giving the dtype,
// the order and the shape), then the elements. loom reads and writes
// little-endian, C-order arrays of its dtypes: float16, float32, float64,
// int32, int64 and bool.
package npy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/rawdata"
)

var descrs = map[string]ast.DType{
	"<f2": ast.Float16, "<f4": ast.Float32, "<f8": ast.Float64,
	"<i4": ast.Int32, "<i8": ast.Int64, "|b1": ast.Bool,
}

func descrOf(dt ast.DType) (string, bool) {
	switch dt {
	case ast.Float16:
		return "<f2", true
	case ast.Float32:
		return "<f4", true
	case ast.Float64:
		return "<f8", true
	case ast.Int32:
		return "<i4", true
	case ast.Int64:
		return "<i8", true
	case ast.Bool:
		return "|b1", true
	}
	return "", false
}

// Array is an array of a .npy file. Data is a slice of the dtype's Go
// type ([]float32, []int64, []bool, ...; []uint16 holds float16 bits), as
// loom's modules take it.
type Array struct {
	DType ast.DType
	Shape []int64
	Data  any
}

const magic = "\x93NUMPY"

// maxElems bounds an array (2^31 elements).
const maxElems = 1 << 31

var (
	descrRE   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	fortranRE = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	shapeRE   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// Read reads one array.
func Read(r io.Reader) (*Array, error) {
	br := bufio.NewReader(r)
	head := make([]byte, 8)
	if _, err := io.ReadFull(br, head); err != nil || string(head[:6]) != magic {
		return nil, fmt.Errorf("npy: not a .npy file (no \\x93NUMPY magic)")
	}
	var n int
	switch head[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return nil, fmt.Errorf("npy: header: %v", err)
		}
		n = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return nil, fmt.Errorf("npy: header: %v", err)
		}
		n = int(binary.LittleEndian.Uint32(b[:]))
	default:
		return nil, fmt.Errorf("npy: format version %d.%d is not one loom reads", head[6], head[7])
	}
	if n > 1<<20 {
		return nil, fmt.Errorf("npy: a header of %d bytes", n)
	}
	h := make([]byte, n)
	if _, err := io.ReadFull(br, h); err != nil {
		return nil, fmt.Errorf("npy: header: %v", err)
	}
	header := string(h)
	d := descrRE.FindStringSubmatch(header)
	f := fortranRE.FindStringSubmatch(header)
	s := shapeRE.FindStringSubmatch(header)
	if d == nil || f == nil || s == nil {
		return nil, fmt.Errorf("npy: header %q lacks descr, fortran_order or shape", strings.TrimSpace(header))
	}
	dt, ok := descrs[d[1]]
	if !ok {
		return nil, fmt.Errorf("npy: dtype %q is not one loom reads (little-endian float16/32/64, int32/64, bool)", d[1])
	}
	if f[1] == "True" {
		return nil, fmt.Errorf("npy: a Fortran-order array; save it in C order (numpy.ascontiguousarray)")
	}
	a := &Array{DType: dt, Shape: []int64{}}
	count := int64(1)
	for _, part := range strings.Split(s[1], ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v, err := strconv.ParseInt(part, 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("npy: shape (%s)", s[1])
		}
		if v > 0 && count > maxElems/v {
			return nil, fmt.Errorf("npy: shape (%s) has more than 2^31 elements", s[1])
		}
		count *= v
		a.Shape = append(a.Shape, v)
	}
	size := int64(dt.Bytes())
	// Read as much as the file has, at most what the shape needs, so a
	// short file is an error before a large allocation.
	raw, err := io.ReadAll(io.LimitReader(br, count*size))
	if err != nil {
		return nil, fmt.Errorf("npy: data: %v", err)
	}
	if int64(len(raw)) != count*size {
		return nil, fmt.Errorf("npy: shape (%s) of %s needs %d bytes of data, the file has %d", s[1], dt, count*size, len(raw))
	}
	switch dt {
	case ast.Float32:
		v := make([]float32, count)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		a.Data = v
	case ast.Float64:
		v := make([]float64, count)
		for i := range v {
			v[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
		a.Data = v
	case ast.Float16:
		v := make([]uint16, count)
		for i := range v {
			v[i] = binary.LittleEndian.Uint16(raw[2*i:])
		}
		a.Data = v
	case ast.Int32:
		v := make([]int32, count)
		for i := range v {
			v[i] = int32(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		a.Data = v
	case ast.Int64:
		v := make([]int64, count)
		for i := range v {
			v[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
		a.Data = v
	case ast.Bool:
		v := make([]bool, count)
		for i := range v {
			v[i] = raw[i] != 0
		}
		a.Data = v
	}
	return a, nil
}

// Write writes an array in format 1.0 (2.0 when its header needs it).
func Write(w io.Writer, a *Array) error {
	descr, ok := descrOf(a.DType)
	if !ok {
		return fmt.Errorf("npy: dtype %s has no .npy form loom writes", a.DType)
	}
	dims := make([]string, len(a.Shape))
	for i, d := range a.Shape {
		dims[i] = strconv.FormatInt(d, 10)
	}
	shape := strings.Join(dims, ", ")
	if len(dims) == 1 {
		shape += ","
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape)
	// Pad with spaces and a newline so that the data starts 64-byte aligned.
	version, lenBytes := byte(1), 2
	if len(header)+12 > 65535 {
		version, lenBytes = 2, 4
	}
	total := len(magic) + 2 + lenBytes + len(header) + 1
	header += strings.Repeat(" ", (64-total%64)%64) + "\n"
	var buf []byte
	buf = append(buf, magic...)
	buf = append(buf, version, 0)
	if lenBytes == 2 {
		buf = binary.LittleEndian.AppendUint16(buf, uint16(len(header)))
	} else {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(header)))
	}
	buf = append(buf, header...)
	buf, err := rawdata.Append(buf, a.Data)
	if err != nil {
		return fmt.Errorf("npy: %v", err)
	}
	_, err = w.Write(buf)
	return err
}
