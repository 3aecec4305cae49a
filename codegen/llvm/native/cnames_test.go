package native_test

import (
	"regexp"
	"testing"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
)

// TestRuntimeNamesReserved: every function loom's runtime defines or
// declares outside static is a name no kernel symbol may take
// (llvm.IsReservedC): a kernel of that name would not link beside it.
func TestRuntimeNamesReserved(t *testing.T) {
	decl := regexp.MustCompile(`(?m)^(?:typedef\s+[^(]*\(\s*\*\s*(\w+)\s*\)|(?:[A-Za-z_][\w\s\*]*?[\s\*])(\w+)\s*\()`)
	n := 0
	for _, m := range decl.FindAllSubmatch(native.RuntimeSource(), -1) {
		if string(m[0][:min(len(m[0]), 6)]) == "static" {
			continue
		}
		name := string(m[1]) + string(m[2])
		if name == "" {
			continue
		}
		n++
		if !llvm.IsReservedC(name) {
			t.Errorf("loomrt.c declares %s, which llvm.IsReservedC does not reserve", name)
		}
	}
	if n < 4 {
		t.Errorf("found only %d declarations in loomrt.c: the pattern no longer reads it", n)
	}
}
