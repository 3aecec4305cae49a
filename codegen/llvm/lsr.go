package llvm

import "github.com/loom-go/loom/ast"

// NoLSRKey is the loop annotation (the integer 1) that compiles the
// kernel without llc's loop strength reduction (Module.DisableLSR): the
// pass works on a whole function, so one annotated loop decides for the
// kernel. It changes no result.
//
// It is for a register tile that broadcasts one input a row under a
// convolution's window taps, its rows ending in a partial vector. Loop
// strength reduction may give every row a pointer of its own, kept across
// the taps, where one pointer and constant displacements serve them all;
// past the 16 general registers the pointers are reloaded from the stack
// before every broadcast. An NHWC 3x3 convolution over 24 channels at
// 112x112 (EfficientNetV2-S's first blocks; 14 rows of a vector and a
// half, AVX-512, Zen 5) took 3.7-4.0 ms with it and 1.03-1.06 without
// (oneDNN 1.08-1.14). Elsewhere it is kept: over all kernels of the suite
// it is worth as much as it costs (depthwise windows and
// squeeze-excitation blocks 1.2-1.5 times slower without it, ResNet-50's
// 3x3 convolutions within the machine's noise).
const NoLSRKey = "no_lsr"

// disablesLSR reports whether a loop of f carries NoLSRKey = 1.
func disablesLSR(f *ast.Func) bool {
	found := false
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.For); ok {
			if v, ok := l.Annotations[NoLSRKey].(int64); ok && v == 1 {
				found = true
			}
		}
		return !found
	})
	return found
}
