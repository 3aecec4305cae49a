package native

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// abiFunc has a symbolic size, a parallel loop and a vectorized one, so
// the C program exercises the runtime's thread pool too.
const abiFunc = `func saxpy[N: int32](X: float32[N, 64], Y: float32[N, 64], Z: float32[N, 64]) {
  ScheduleBlock(root) {
    parallel for (i, 0, N) {
      vectorized for (j, 0, 64) {
        ScheduleBlock(Z) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, N), vj = spatial(0, 64))
          reads(X[vi, vj], Y[vi, vj])
          writes(Z[vi, vj])
          Z[vi, vj] = X[vi, vj] * 2.0f + Y[vi, vj]
        }
      }
    }
  }
}`

const abiMain = `#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "saxpy.h"

int main(void) {
	enum { N = 37 };
	static float x[N][64], y[N][64], z[N][64];
	for (int i = 0; i < N; i++)
		for (int j = 0; j < 64; j++) {
			x[i][j] = (float)(i * 64 + j) / 1000.0f;
			y[i][j] = (float)(j - i);
		}
	loom_set_num_threads(2);
	int32_t status = saxpy(N, &x[0][0], &y[0][0], &z[0][0]);
	if (status != 0) {
		printf("status %d\n", status);
		return 1;
	}
	void *bufs[] = {x, y, z};
	int64_t sizes[] = {N};
	if (saxpy_packed(bufs, sizes) != 0)
		return 1;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < 64; j++)
			if (fabsf(z[i][j] - (x[i][j] * 2.0f + y[i][j])) > 1e-5f) {
				printf("z[%d][%d] = %g\n", i, j, z[i][j]);
				return 1;
			}
	printf("ok %d threads\n", loom_get_num_threads());
	return 0;
}
`

// loweredABIFunc returns abiFunc lowered with the default options.
func loweredABIFunc(t *testing.T) *llvm.Module {
	t.Helper()
	f, err := ast.Parse(abiFunc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := llvm.Lower(f, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCABI links a generated kernel ahead of time into a C program, with
// the generated header and the runtime's source, and runs it.
func TestCABI(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("no C compiler (cc) on PATH: the runtime needs one too; apt-get install gcc")
	}
	m := loweredABIFunc(t)
	dir := t.TempDir()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("saxpy.h", []byte(m.Header()))
	write("loomrt.c", RuntimeSource())
	write("main.c", []byte(abiMain))
	if err := WriteObject(m, filepath.Join(dir, "saxpy.o")); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(cc, "-std=c11", "-Wall", "-Werror", "-O2", "-pthread", "-o", "prog", "main.c", "saxpy.o", "loomrt.c", "-lm")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the C program: %v\n%s\nheader:\n%s", err, out, m.Header())
	}
	run := exec.Command(filepath.Join(dir, "prog"))
	out, err := run.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok 2 threads") {
		t.Fatalf("the C program: %v\n%s", err, out)
	}
}

// TestWriteObjectAs: the object of a lowered kernel under another name
// defines that name and its packed entry, and neither old one; a name C
// cannot take is refused.
func TestWriteObjectAs(t *testing.T) {
	nm, err := exec.LookPath("nm")
	if err != nil {
		t.Skip("no nm on PATH (binutils)")
	}
	m := loweredABIFunc(t)
	obj := filepath.Join(t.TempDir(), "k.o")
	// Another name, and the old packed one (renamed in one pass, not
	// twice).
	for _, sym := range []string{"graph_k0", m.PackedSymbol()} {
		if err := WriteObjectAs(m, sym, obj); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(nm, "--defined-only", obj).CombinedOutput()
		if err != nil {
			t.Fatalf("nm: %v\n%s", err, out)
		}
		defined := map[string]bool{}
		for _, line := range strings.Split(string(out), "\n") {
			if fields := strings.Fields(line); len(fields) == 3 && fields[1] == "T" {
				defined[fields[2]] = true
			}
		}
		if len(defined) != 2 || !defined[sym] || !defined[sym+"_packed"] {
			t.Errorf("global functions of the object: %v; want %s and %s_packed only", defined, sym, sym)
		}
	}
	for _, bad := range []string{"main", "9lives", "a-b", ""} {
		if err := WriteObjectAs(m, bad, obj); err == nil {
			t.Errorf("WriteObjectAs(%q) accepted", bad)
		}
	}
}
