package native

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// TestKeptTemporaries: a kernel whose temporary is on the heap (larger
// than the stack takes, of a symbolic size) keeps it between calls, and
// its answers stay right when the next call needs a larger block (the
// kept one is too small), a smaller one, and when goroutines call it at
// once (each call then finds the slot taken or not).
func TestKeptTemporaries(t *testing.T) {
	f, err := ast.Parse(`func twice[N: int32](A: float32[N], B: float32[N]) {
  ScheduleBlock(root) {
    alloc T: float32[N]
    serial for (i, 0, N) {
      ScheduleBlock(T) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, N))
        reads(A[vi])
        writes(T[vi])
        T[vi] = A[vi] * 2.0f
      }
    }
    serial for (i, 0, N) {
      ScheduleBlock(B) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, N))
        reads(T[N - 1 - vi])
        writes(B[vi])
        B[vi] = T[N - 1 - vi] + 1.0f
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
	if ir := m.String(); !strings.Contains(ir, "@loom.keep.0 = internal global i64 0") || !strings.Contains(ir, "@llvm.global_dtors = appending global") {
		t.Errorf("no slot for T, or no destructor:\n%s", ir)
	}
	k, err := Compile(f, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(n int, seed float32) error {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i] = seed + float32(i)
		}
		if err := k.Run(map[string]int64{"N": int64(n)}, map[string]any{"A": a, "B": b}); err != nil {
			return err
		}
		for i := range b {
			if want := 2*a[n-1-i] + 1; b[i] != want {
				return fmt.Errorf("N = %d: B[%d] = %g, want %g", n, i, b[i], want)
			}
		}
		return nil
	}
	for _, n := range []int{100_000, 20_000, 300_000, 300_000, 1, 0, 250_000} {
		if err := run(n, float32(n%7)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range 20 {
				if err := run(50_000+g*10_000+c*1000, float32(g)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
