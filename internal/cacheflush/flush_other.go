//go:build !amd64

package cacheflush

import "unsafe"

// Supported: only x86-64 flushes.
const Supported = false

func flushLines(p unsafe.Pointer, n uintptr) {}
