package module_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/module"
)

const embedGraph = `{"name": "embed", "inputs": [{"name": "E", "dtype": "float32", "shape": ["N", 3]}, {"name": "I", "dtype": "int32", "shape": ["T"]}],
  "constants": [{"name": "Last", "dtype": "int32", "shape": [], "data": [3]}],
  "nodes": [{"op": "gather", "inputs": ["E", "I"], "output": "Y"}, {"op": "gather", "inputs": ["E", "Last"], "output": "R"}],
  "outputs": ["Y", "R"]}`

// TestGatherIndexOutOfRange: an input index outside [-n, n) (ONNX's
// range: negative ones count from the end) is an error from Run naming
// the kernel and its gathers, not a clamped row; so is a constant index
// beyond a symbolic dimension at the sizes of the call. The C library
// returns LOOM_INDEX_OUT_OF_RANGE with the same message, the code a
// kernel's header declares too.
func TestGatherIndexOutOfRange(t *testing.T) {
	_, m := compiled(t, embedGraph)
	table := func(n int) []float32 {
		e := make([]float32, 3*n)
		for i := range e {
			e[i] = float32(i + 1)
		}
		return e
	}
	run := func(n int, ids []int32) ([]float32, []float32, error) {
		in := map[string]module.Tensor{
			"E": {Shape: []int64{int64(n), 3}, Data: table(n)},
			"I": {Shape: []int64{int64(len(ids))}, Data: ids},
		}
		out, err := m.NewOutputs(in)
		if err != nil {
			t.Fatal(err)
		}
		err = m.Run(in, out)
		return out["Y"].Data.([]float32), out["R"].Data.([]float32), err
	}
	y, r, err := run(5, []int32{0, -1, 4, -5})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{1, 2, 3, 13, 14, 15, 13, 14, 15, 1, 2, 3}; fmt.Sprint(y) != fmt.Sprint(want) || fmt.Sprint(r) != "[10 11 12]" {
		t.Errorf("Y = %v, R = %v; want %v and [10 11 12]", y, r, want)
	}
	for _, ids := range [][]int32{{0, 5}, {-6}, {1 << 30}, {100}, {-100}} {
		if _, _, err := run(5, ids); !errors.Is(err, native.ErrIndexOutOfRange) || !strings.Contains(err.Error(), "(gather Y") {
			t.Errorf("ids %v: %v, want ErrIndexOutOfRange naming gather Y", ids, err)
		}
	}
	// The constant index 3 of R is out of range where N is 3.
	if _, _, err := run(3, []int32{0}); !errors.Is(err, native.ErrIndexOutOfRange) || !strings.Contains(err.Error(), "gather R") {
		t.Errorf("N = 3: %v, want ErrIndexOutOfRange naming gather R", err)
	}

	needCC(t)
	dir := t.TempDir()
	if _, err := m.Build(dir, "embed"); err != nil {
		t.Fatal(err)
	}
	_, _, goErr := run(5, []int32{0, 7})
	// A kernel's header declares the same status codes; a program may
	// include it beside the graph's.
	f, err := ast.Parse(`func scale[N: int32](X: float32[N], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, N))
        reads(X[vi])
        writes(Y[vi])
        Y[vi] = X[vi] * 2.0f
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := llvm.Lower(f, llvm.Options{Symbol: "scale"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scale.h"), []byte(kernel.Header()), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `#include "scale.h"
#include "embed.h"
#include <stdio.h>

int main(void) {
	loom_status st;
	float E[15] = {0}, Y[6], R[3];
	int32_t good[] = {0, -1}, bad[] = {0, 7};
	int64_t es[] = {5, 3}, is[] = {2}, ys[] = {2, 3}, rs[] = {3};
	int32_t rc = embed(E, es, good, is, Y, ys, R, rs, 1, &st);
	printf("%d|%s\n", rc, st.message);
	rc = embed(E, es, bad, is, Y, ys, R, rs, 1, &st);
	printf("%d|%s\n", rc, st.message);
	printf("%d\n", LOOM_INDEX_OUT_OF_RANGE);
	printf("%d %d %d %d\n", LOOM_DIVISION_BY_ZERO, LOOM_NO_MEMORY, LOOM_BAD_ARGUMENT, LOOM_OK);
	printf("%s|%s|%s|%s\n", loom_status_string(LOOM_INDEX_OUT_OF_RANGE | LOOM_DIVISION_BY_ZERO), loom_status_string(LOOM_DIVISION_BY_ZERO),
		loom_status_string(LOOM_BAD_ARGUMENT), loom_status_string(99));
	return 0;
}
`
	out := runC(t, dir, "embed", src)
	want := fmt.Sprintf("0|\n4|%s\n4\n1 2 8 0\nindex out of range|integer division by zero|bad argument|unknown status\n", goErr)
	if out != want {
		t.Errorf("C library:\n%s\nwant\n%s", out, want)
	}
}
