// Package cacheflush takes memory out of the CPU's caches, so that a
// kernel can be timed as it runs inside a model: its weights, read once
// per call of the model and hundreds of megabytes in all, come from
// memory, not from the caches the previous timed run left them in (TVM's
// runner has the same option, enable_cpu_cache_flush). On x86-64 each
// cache line is written back and invalidated (CLFLUSH); elsewhere
// Supported is false and Flush does nothing.
package cacheflush

import (
	"reflect"
	"unsafe"
)

// Flush takes the n bytes at p out of every level of the caches.
func Flush(p unsafe.Pointer, n uintptr) {
	if n == 0 || !Supported {
		return
	}
	flushLines(p, n)
}

// Slices flushes the backing arrays of the slices among values (the data
// of a kernel's buffers: []float32, []int64, ...); other values are left
// alone.
func Slices(values ...any) {
	for _, v := range values {
		r := reflect.ValueOf(v)
		if r.Kind() != reflect.Slice || r.Len() == 0 {
			continue
		}
		Flush(r.UnsafePointer(), uintptr(r.Len())*r.Type().Elem().Size())
	}
}
