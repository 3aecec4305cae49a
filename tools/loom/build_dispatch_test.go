package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

// rowScale is a function of a symbolic row count: each row of X scaled by
// its sum of squares, through a local (two blocks, a reduction).
const rowScale = `func rowscale[N: int32](X: float32[N, 24], Y: float32[N, 24]) {
  ScheduleBlock(root) {
    alloc S: float32[N]
    serial for (i, 0, N) {
      serial for (k, 0, 24) {
        ScheduleBlock(S) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, N), vk = reduce(0, 24))
          reads(S[vi], X[vi, vk])
          writes(S[vi])
          init {
            S[vi] = 0.0f
          }
          S[vi] = S[vi] + X[vi, vk] * X[vi, vk]
        }
      }
    }
    serial for (i, 0, N) {
      serial for (j, 0, 24) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, N), vj = spatial(0, 24))
          reads(X[vi, vj], S[vi])
          writes(Y[vi, vj])
          Y[vi, vj] = X[vi, vj] * S[vi]
        }
      }
    }
  }
}
`

// rowScaleInput is X[i] of the C program below.
func rowScaleInput(i int) float32 { return float32((i*37)%101)/50 - 1 }

// TestBuildDispatch: a kernel of symbolic sizes tuned for buckets of them
// builds into one object whose entry point picks each bucket's code; a C
// program calls it at each bucket's bounds, inside them and past the last
// (the fallback), and its results match the interpreter's.
func TestBuildDispatch(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	if _, err := exec.LookPath("ld"); err != nil {
		t.Skip("no linker")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "rowscale.loom")
	if err := os.WriteFile(src, []byte(rowScale), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "db.jsonl")
	code, out, errs := runLoom(t, "tune", "-func", src, "-size", "N=4", "-buckets", "N=1,8,32", "-specialize", "N=3", "-trials", "3", "-confirm", "0", "-threads", "1", "-db", db, "-q")
	if code != 0 {
		t.Fatalf("tune: exit %d: %s\n%s", code, errs, out)
	}
	lib := filepath.Join(dir, "lib")
	code, out, errs = runLoom(t, "build", "-func", src, "-db", db, "-threads", "1", "-out", lib)
	if code != 0 || !strings.Contains(out, "bucket(s) of its sizes") {
		t.Fatalf("build: exit %d: %s\n%s", code, errs, out)
	}
	t.Log(out)
	dispatch, err := os.ReadFile(filepath.Join(lib, "rowscale_dispatch.c"))
	if err != nil || !strings.Contains(string(dispatch), "sizes[0] >= 3 && sizes[0] <= 3") || !strings.Contains(string(dispatch), "rowscale_any_packed(buffers, sizes)") {
		t.Fatalf("the dispatcher does not test the buckets (%v):\n%s", err, dispatch)
	}
	prog := `#include <stdio.h>
#include <stdlib.h>
#include "rowscale.h"
int main(int argc, char **argv) {
	long n = atol(argv[1]);
	float *x = malloc(sizeof(float) * (n * 24 + 1)), *y = malloc(sizeof(float) * (n * 24 + 1));
	for (long i = 0; i < n * 24; i++) x[i] = (float)((i * 37) % 101) / 50 - 1;
	if (rowscale(n, x, y) != 0) return 1;
	for (long i = 0; i < n * 24; i++) printf("%a\n", y[i]);
	return 0;
}
`
	if err := os.WriteFile(filepath.Join(lib, "main.c"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(cc, "-O2", "-pthread", "-I.", "main.c", "rowscale.o", "loomrt.c", "-lm", "-o", "prog")
	build.Dir = lib
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("linking a C program: %v\n%s", err, msg)
	}
	f, err := ast.Parse(rowScale)
	if err != nil {
		t.Fatal(err)
	}
	// The buckets' bounds (1..2 and 4..7 around the specialization N=3,
	// 8..32), sizes inside them that no tile divides, and past the last.
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 13, 31, 32, 33, 97} {
		run := exec.Command(filepath.Join(lib, "prog"), strconv.Itoa(n))
		got, err := run.Output()
		if err != nil {
			t.Fatalf("N=%d: %v", n, err)
		}
		x := make([]float32, n*24)
		for i := range x {
			x[i] = rowScaleInput(i)
		}
		y := make([]float32, n*24)
		if err := ast.Interpret(f, map[string]int64{"N": int64(n)}, map[string]any{"X": x, "Y": y}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Fields(string(got))
		if len(lines) != len(y) {
			t.Fatalf("N=%d: %d values, want %d", n, len(lines), len(y))
		}
		for i, l := range lines {
			v, err := strconv.ParseFloat(l, 32)
			if err != nil || math.Abs(v-float64(y[i])) > 1e-5*(1+math.Abs(float64(y[i]))) {
				t.Fatalf("N=%d: Y[%d] = %s, the interpreter %v", n, i, l, y[i])
			}
		}
	}
}
