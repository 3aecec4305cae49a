// Package rawdata writes a tensor's elements as the bytes of memory on a
// little-endian machine: what a kernel reads, a .npy or safetensors file
// holds, and ONNX Runtime takes.
package rawdata

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Append appends data's elements to b, each in its type's width:
// []float32, []float64, []int32, []int64, []uint16 (16-bit floats' bits)
// and []bool (one byte each).
func Append(b []byte, data any) ([]byte, error) {
	switch d := data.(type) {
	case []float32:
		b = grow(b, 4*len(d))
		for _, v := range d {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	case []float64:
		b = grow(b, 8*len(d))
		for _, v := range d {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	case []int32:
		b = grow(b, 4*len(d))
		for _, v := range d {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
	case []int64:
		b = grow(b, 8*len(d))
		for _, v := range d {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	case []uint16:
		b = grow(b, 2*len(d))
		for _, v := range d {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
	case []bool:
		b = grow(b, len(d))
		for _, v := range d {
			if v {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
	default:
		return b, fmt.Errorf("rawdata: no raw form for %T", data)
	}
	return b, nil
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		return nb
	}
	return b
}
