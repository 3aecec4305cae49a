package cacheflush

import (
	"testing"
	"unsafe"
)

// TestFlushKeepsData: a flush writes lines back before it drops them, so
// the data reads back unchanged: slices of several element types,
// unaligned starts and lengths, empty and nil ones, values that are not
// slices.
func TestFlushKeepsData(t *testing.T) {
	f := make([]float32, 1000)
	for i := range f {
		f[i] = float32(i) * 0.5
	}
	b := make([]byte, 333)
	for i := range b {
		b[i] = byte(i)
	}
	Slices(f, b[3:], []int64{}, nil, 7)
	Flush(unsafe.Pointer(&b[1]), 1)
	Flush(unsafe.Pointer(&b[0]), 0)
	for i := range f {
		if f[i] != float32(i)*0.5 {
			t.Fatalf("f[%d] = %v after a flush", i, f[i])
		}
	}
	for i := range b {
		if b[i] != byte(i) {
			t.Fatalf("b[%d] = %v after a flush", i, b[i])
		}
	}
}

// BenchmarkReadAfterFlush shows what a flush does: a sum over 8 MiB read
// right after a flush, against the same sum with the data in the caches.
func BenchmarkReadAfterFlush(b *testing.B) {
	data := make([]float32, 2<<20)
	sum := func() float32 {
		var s float32
		for _, x := range data {
			s += x
		}
		return s
	}
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			sum()
		}
	})
	b.Run("flushed", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			Slices(data)
			b.StartTimer()
			sum()
		}
	})
}
