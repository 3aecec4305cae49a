package schedule

import (
	"errors"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

// TestReverseComputeAtUnderFusedLoop is the long run's finding: after
// fuse(i, j) the part of C one iteration of k_0 produces is one element
// (floordiv and floormod of the fused loop), which loom bounds by the
// whole row; placed there, the epilogue D would run each instance six
// times, the first five before their input is produced. The primitive
// must refuse that (the validator did; the result happened to come out
// right only because the last run overwrites the others).
func TestReverseComputeAtUnderFusedLoop(t *testing.T) {
	s, err := New(workload.MatmulBiasReLU(4, 6, 5).Func, WithValidation(false))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := s.GetBlock("D")
	j, _ := s.GetLoop("j")
	if err := s.ReverseComputeAt(d, j); err != nil {
		t.Fatal(Explain(err))
	}
	i, _ := s.GetLoop("i")
	j, _ = s.GetLoop("j")
	if _, err := s.Fuse(i, j); err != nil {
		t.Fatal(Explain(err))
	}
	k, _ := s.GetLoop("k")
	if _, err := s.Tile([]Loop{k}, []int{5}); err != nil {
		t.Fatal(Explain(err))
	}
	k0, _ := s.GetLoop("k_0")
	err = s.ReverseComputeAt(d, k0)
	if !errors.Is(err, ErrIllegal) || !strings.Contains(err.Error(), "more than once") {
		t.Fatalf("reverse_compute_at(D, k_0): %v, want a refusal", err)
	}
	// With the validator on, the refusal is the primitive's (a user's
	// error), not the validator's internal one.
	s2, _ := New(workload.MatmulBiasReLU(4, 6, 5).Func, WithValidation(true))
	d2, _ := s2.GetBlock("D")
	j2, _ := s2.GetLoop("j")
	if err := s2.ReverseComputeAt(d2, j2); err != nil {
		t.Fatal(err)
	}
	i2, _ := s2.GetLoop("i")
	j2, _ = s2.GetLoop("j")
	s2.Fuse(i2, j2)
	k2, _ := s2.GetLoop("k")
	s2.Tile([]Loop{k2}, []int{5})
	k20, _ := s2.GetLoop("k_0")
	if err := s2.ReverseComputeAt(d2, k20); errors.Is(err, ErrInternal) || err == nil {
		t.Errorf("with the validator on: %v, want the primitive's refusal", err)
	}
}

// TestReverseComputeInlinePredicated is the long run's finding in
// predicate_tri: T writes only the triangle i + j < N; inlined into the
// cache block that reads X, its store ran over the whole square and
// overwrote the rest of T. A predicated block is not inlined.
func TestReverseComputeInlinePredicated(t *testing.T) {
	f, err := ast.Parse(`func predicate_tri[N: int32](X: float32[N, N], T: float32[N, N], Out: float32[N, N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (j, 0, N) {
        ScheduleBlock(T) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, N), vj = spatial(0, N))
          predicate(i + j < N)
          reads(X[vi, vj])
          writes(T[vi, vj])
          T[vi, vj] = X[vi, vj] * 3.0f
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(f, WithValidation(false))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := s.GetBlock("T")
	if _, err := s.CacheRead(blk, "X", "local"); err != nil {
		t.Fatal(Explain(err))
	}
	blk, _ = s.GetBlock("T")
	err = s.ReverseComputeInline(blk)
	if !errors.Is(err, ErrIllegal) || !strings.Contains(err.Error(), "has a predicate") {
		t.Fatalf("reverse_compute_inline of the predicated block: %v, want a refusal", err)
	}
}
