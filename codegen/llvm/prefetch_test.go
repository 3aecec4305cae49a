package llvm

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/hand"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// prefetchedMatmul schedules a 48 x 64 x 32 matmul as a register tile
// would run (hand.RowTile: tiles of 4 rows, unrolled when unroll is set,
// k between, j vectorized), k annotated with PrefetchKey = ahead (none for
// 0). B[k, j] is the one contiguous load from a parameter that moves
// with k; A[i, k] is a scalar and C[i, j] stays put along k.
func prefetchedMatmul(t *testing.T, ahead int64, unroll bool) *ast.Func {
	t.Helper()
	s, err := schedule.New(workload.Matmul(48, 64, 32).Func)
	if err != nil {
		t.Fatal(err)
	}
	_, k, err := hand.RowTile(s, 4, unroll)
	if err != nil {
		t.Fatal(schedule.Explain(err))
	}
	if ahead > 0 {
		if err := s.AnnotateLoop(k, PrefetchKey, ahead); err != nil {
			t.Fatal(schedule.Explain(err))
		}
	}
	return s.Func()
}

// TestPrefetchAnnotation: a serial loop annotated with PrefetchKey
// prefetches, per iteration, each distinct contiguous vector load from a
// parameter that moves with it, into the L2 (locality 2), ahead by the
// annotation's iterations; unrolled copies of the same load prefetch
// once; without the annotation nothing is prefetched.
func TestPrefetchAnnotation(t *testing.T) {
	count := func(f *ast.Func) (int, string) {
		t.Helper()
		m, err := Lower(f, Options{Target: avx512Target})
		if err != nil {
			t.Fatal(err)
		}
		ir := m.String()
		return strings.Count(ir, "call void @llvm.prefetch"), ir
	}
	if n, ir := count(prefetchedMatmul(t, 0, true)); n != 0 {
		t.Errorf("no annotation: %d prefetches\n%s", n, ir)
	}
	rolled, ir := count(prefetchedMatmul(t, 8, false))
	// 64 columns in 16-lane vectors: four loads of B a step.
	if rolled != 4 {
		t.Errorf("rolled: %d prefetches, want 4 (one per vector of B's row)\n%s", rolled, ir)
	}
	if !strings.Contains(ir, "i32 0, i32 2, i32 1)") {
		t.Errorf("rolled: want reads into the L2 (rw 0, locality 2, data)\n%s", ir)
	}
	if unrolled, ir := count(prefetchedMatmul(t, 8, true)); unrolled != rolled {
		t.Errorf("the rows unrolled by 4: %d prefetches, want %d (the same loads of B)\n%s", unrolled, rolled, ir)
	}
}
