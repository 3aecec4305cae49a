package cacheflush

import "unsafe"

// Supported: x86-64 has CLFLUSH.
const Supported = true

// flushLines flushes the 64-byte lines that hold the n bytes at p, then
// fences.
//
//go:noescape
func flushLines(p unsafe.Pointer, n uintptr)
