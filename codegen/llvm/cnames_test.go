package llvm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// TestReservedSymbolRefused: a kernel symbol C already gives a meaning
// (a keyword, a type or function of its library, loom's runtime) is an
// error naming it: such a library did not compile or link. A function of
// such a name gets a safe symbol by default.
func TestReservedSymbolRefused(t *testing.T) {
	f, err := ast.Parse(`func main(A: float32[4]) {
  ScheduleBlock(root) {
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, sym := range []string{"main", "free", "int64_t", "_Bool", "int", "class", "sqrtf", "memcpy", "pthread_create", "loom_parallel_for", "LOOM_OK", "__x", "_Xy", "INT32_MAX", "uint_fast8_t"} {
		_, err := llvm.Lower(f, llvm.Options{Symbol: sym})
		if err == nil || !strings.Contains(err.Error(), `kernel symbol "`+sym+`" is a name C`) {
			t.Errorf("symbol %s: %v", sym, err)
		}
	}
	for _, sym := range []string{"embed", "gemm_0", "mainly", "int64", "free_", "loom"} {
		if _, err := llvm.Lower(f, llvm.Options{Symbol: sym}); err != nil {
			t.Errorf("symbol %s: %v", sym, err)
		}
	}
	m, err := llvm.Lower(f, llvm.Options{})
	if err != nil || m.Symbol != "main_" {
		t.Errorf("func main: symbol %q, %v; want main_", m.Symbol, err)
	}
}

// TestHeaderNames: sizes and buffers named like C's types, keywords and
// library functions, and two that meet once made safe, give a header that
// C and C++ compile, beside a program of their own that uses those names.
func TestHeaderNames(t *testing.T) {
	f, err := ast.Parse(`func hostile[int64_t: int32, free: int32](restrict: float32[int64_t], int64_t_: float32[free], class: float32[4], _X: float32[4], size_t: float32[4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      ScheduleBlock(C) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 4))
        reads(_X[vi])
        writes(class[vi])
        class[vi] = _X[vi] + 1.0f
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	m, err := llvm.Lower(f, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := m.Header()
	for _, want := range []string{"int64_t int64_t_", "int64_t free_", "float *LOOM_RESTRICT restrict_", "float *LOOM_RESTRICT int64_t__", "class_", "x__X", "size_t_"} {
		if !strings.Contains(h, want) {
			t.Errorf("the header has no %q:\n%s", want, h)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hostile.h"), []byte(h), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := "#include <stdlib.h>\n#include <stdio.h>\n#include <string.h>\n#include \"hostile.h\"\nint main(void) { void *p = malloc(4); free(p); return hostile(0, 0, 0, 0, 0, 0, 0); }\n"
	if err := os.WriteFile(filepath.Join(dir, "prog.c"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cc := range [][]string{{"cc", "-std=c11", "-fsyntax-only", "-Wall", "-Werror"}, {"c++", "-x", "c++", "-fsyntax-only"}} {
		if _, err := exec.LookPath(cc[0]); err != nil {
			t.Logf("no %s: the header is not compiled", cc[0])
			continue
		}
		cmd := exec.Command(cc[0], append(cc[1:], "prog.c")...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s\n%s", strings.Join(cc, " "), err, out, h)
		}
	}
}
