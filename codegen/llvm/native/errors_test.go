package native

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/workload"
)

func TestMissingToolNamesPackage(t *testing.T) {
	_, err := lookPath("opt", "llvm-14 (apt-get install llvm-14)", "no-such-opt-14")
	if !errors.Is(err, ErrToolMissing) || !strings.Contains(err.Error(), "apt-get install llvm-14") {
		t.Errorf("got %v", err)
	}
}

func TestLLVMErrorShowsIRLine(t *testing.T) {
	tc, err := FindToolchain()
	if err != nil {
		t.Fatal(err)
	}
	ir := "define void @f() {\nentry:\n  ret i32 0\n}\n"
	err = tc.compile(context.Background(), ir, targetArgs{}, t.TempDir()+"/f.o")
	var be *BuildError
	if !errors.As(err, &be) || be.Tool != "opt" || be.Line != 3 || !strings.Contains(be.IRLine, "ret i32 0") {
		t.Fatalf("got %#v", err)
	}
	if !strings.Contains(err.Error(), "IR line 3: ret i32 0") {
		t.Errorf("message does not show the line:\n%v", err)
	}
}

// TestBadArgumentsRefused: a call with arguments that do not fit the
// function is refused before the kernel runs.
func TestBadArgumentsRefused(t *testing.T) {
	c := workload.Chain(2, 3, 8)
	k, err := Compile(c.Func, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	good := func() map[string]any { return c.Args(1) }
	x := make([]float32, 2*3*8)
	cases := []struct {
		name    string
		sizes   map[string]int64
		buffers map[string]any
		msg     string
	}{
		{"short buffer", c.Sizes, map[string]any{"X": make([]float32, 47), "F": good()["F"]}, "has 48 elements at these sizes, but its data has 47"},
		{"wrong type", c.Sizes, map[string]any{"X": make([]float64, 48), "F": good()["F"]}, "must be a []float32"},
		{"overlap", c.Sizes, map[string]any{"X": x, "F": x}, "overlap"},
		{"missing size", map[string]int64{"S1": 2}, good(), "no value given for size S2"},
		{"negative size", map[string]int64{"S1": -1, "S2": 3}, good(), "negative"},
		{"unknown buffer", c.Sizes, map[string]any{"X": x, "F": make([]float32, 48), "Q": x}, "Q is not a buffer parameter"},
		{"missing buffer", c.Sizes, map[string]any{"X": x}, "no data given for buffer F"},
	}
	for _, tc := range cases {
		err := k.Run(tc.sizes, tc.buffers)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.msg)
		}
	}
}

// TestDivisionByZeroReported: an integer division by a size that is 0 at
// run time is reported as the kernel's status, not a crash.
func TestDivisionByZeroReported(t *testing.T) {
	f, err := ast.Parse(`func div[D: int32](A: int32[8], B: int32[8]) {
  ScheduleBlock(root) {
    serial for (i, 0, 8) {
      ScheduleBlock(B) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 8))
        reads(A[vi])
        writes(B[vi])
        B[vi] = A[vi] / D + A[vi] % D
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	k, err := Compile(f, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := []int32{-9, -1, 0, 1, 7, 8, -2147483648, 2147483647}
	for _, d := range []int64{3, -1, -4} {
		got, want := make([]int32, 8), make([]int32, 8)
		if err := k.Run(map[string]int64{"D": d}, map[string]any{"A": a, "B": got}); err == nil && d < 0 {
			// Sizes are never negative: the call is refused.
			t.Fatalf("D = %d accepted", d)
		} else if d < 0 {
			continue
		}
		if err := ast.Interpret(f, map[string]int64{"D": d}, map[string]any{"A": a, "B": want}); err != nil {
			t.Fatal(err)
		}
		if check.MaxRelErr(got, want) != 0 {
			t.Errorf("D = %d: got %v, want %v", d, got, want)
		}
	}
	err = k.Run(map[string]int64{"D": 0}, map[string]any{"A": a, "B": make([]int32, 8)})
	if !errors.Is(err, ErrDivByZero) {
		t.Errorf("D = 0: got %v, want ErrDivByZero", err)
	}
}
