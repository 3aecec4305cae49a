package llvm

import (
	"slices"
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

// TestPrefetchIgnoredRemarks: a prefetch annotation the code cannot
// follow prefetches nothing and says why in Module.Remarks: on a loop
// that does not run serially (vectorized, parallel), with a distance that
// is not an integer above 0, and inside a loop that prefetches already.
func TestPrefetchIgnoredRemarks(t *testing.T) {
	for _, c := range []struct {
		name     string
		annotate func(s *schedule.Schedule, tiles, k, j schedule.Loop) error
		remark   string
		want     int // prefetches in the code
	}{
		{"vectorized", func(s *schedule.Schedule, _, _, j schedule.Loop) error { return s.AnnotateLoop(j, PrefetchKey, 4) },
			"prefetch on loop j ignored: only a serial loop prefetches, and it runs as a vectorized loop", 0},
		{"parallel", func(s *schedule.Schedule, tiles, _, _ schedule.Loop) error {
			if err := s.Parallel(tiles); err != nil {
				return err
			}
			return s.AnnotateLoop(tiles, PrefetchKey, 1)
		}, "prefetch on loop i_0 ignored: only a serial loop prefetches, and it runs as a parallel loop", 0},
		{"negative", func(s *schedule.Schedule, _, k, _ schedule.Loop) error { return s.AnnotateLoop(k, PrefetchKey, -2) },
			"prefetch on loop k ignored: its distance -2 is not an integer above 0", 0},
		{"text", func(s *schedule.Schedule, _, k, _ schedule.Loop) error { return s.AnnotateLoop(k, PrefetchKey, "far") },
			"prefetch on loop k ignored: its distance far is not an integer above 0", 0},
		{"nested", func(s *schedule.Schedule, tiles, k, _ schedule.Loop) error {
			if err := s.AnnotateLoop(tiles, PrefetchKey, 1); err != nil {
				return err
			}
			return s.AnnotateLoop(k, PrefetchKey, 8)
		}, "prefetch on loop k ignored: loop i_0 around it prefetches", 16}, // C's 4 x 4 vectors, which move with i_0
	} {
		s, err := schedule.New(workload.Matmul(48, 64, 32).Func)
		if err != nil {
			t.Fatal(err)
		}
		tiles, k, err := hand.RowTile(s, 4, true)
		if err != nil {
			t.Fatal(schedule.Explain(err))
		}
		c2, _ := s.GetBlock("C")
		loops, _ := s.GetLoops(c2)
		if err := c.annotate(s, tiles, k, loops[len(loops)-1]); err != nil {
			t.Fatalf("%s: %v", c.name, schedule.Explain(err))
		}
		m, err := Lower(s.Func(), Options{Target: avx512Target})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Contains(m.Remarks, c.remark) {
			t.Errorf("%s: remarks %q, want %q", c.name, m.Remarks, c.remark)
		}
		if n := strings.Count(m.String(), "call void @llvm.prefetch"); n != c.want {
			t.Errorf("%s: %d prefetches, want %d", c.name, n, c.want)
		}
	}
}
