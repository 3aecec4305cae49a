package schedule

import (
	"errors"
	"os"
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

// TestWriteCacheOfSymbolicReduction: a matmul of symbolic sizes, its
// output written through a local cache and its loops tiled with tails:
// the reduction over K may not run at all (K = 0), so the cache starts as
// a copy of the output (a fill, a second writer of the cache). The
// write-back still moves under the tile loop (the tile is produced there
// wherever the sizes are at least 1, and at K = 0 it copies back what the
// fill copied), and so does the fill (each of its instances once, before
// the update). Its loops keep constant extents (the tile's width, 4,
// guarded: not min(4, N, ...)). The validator is on; the results match
// the interpreter's at sizes no tile divides, and at 0.
func TestWriteCacheOfSymbolicReduction(t *testing.T) {
	src, err := os.ReadFile("../testdata/schedgen/matmul_sym.loom")
	if err != nil {
		t.Fatal(err)
	}
	f := mustParseFunc(t, string(src))
	s, err := New(f, WithValidation(true))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.GetBlock("C")
	wb, err := s.CacheWrite(c, "C", "local")
	if err != nil {
		t.Fatal(err)
	}
	fill, err := s.GetBlock("C_local_fill")
	if err != nil {
		t.Fatalf("no fill of the cache of a reduction over a symbolic extent: %v", err)
	}
	ls, _ := s.GetLoops(c)
	is, err := s.Split(ls[0], -1, 4)
	if err != nil {
		t.Fatal(err)
	}
	js, err := s.Split(ls[1], -1, 16, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reorder(is[0], js[0], js[1], is[1], js[2]); err != nil {
		t.Fatal(err)
	}
	if err := s.ReverseComputeAt(wb, js[1]); err != nil {
		t.Fatalf("reverse_compute_at of the write-back: %s", Explain(err))
	}
	if err := s.ComputeAt(fill, js[1]); err != nil {
		t.Fatalf("compute_at of the fill: %s", Explain(err))
	}
	text := ast.Print(s.Func())
	for _, b := range []string{"C_local", "C_local_fill"} {
		loops, _ := s.GetLoops(func() Block { h, _ := s.GetBlock(b); return h }())
		for _, l := range loops {
			if _, ok := s.Extent(l); !ok && !strings.HasPrefix(l.Name(), "i_0") && !strings.HasPrefix(l.Name(), "j_0") {
				t.Errorf("block %s: loop %s has no constant extent:\n%s", b, l.Name(), text)
			}
		}
	}
	for _, sz := range []map[string]int64{
		{"M": 5, "N": 70, "K": 3}, {"M": 4, "N": 64, "K": 0}, {"M": 1, "N": 1, "K": 1}, {"M": 0, "N": 3, "K": 2}, {"M": 9, "N": 5, "K": 0},
	} {
		checkSameResults(t, f, s.Func(), sz)
	}
	// A block with another writer may not move where an instance would
	// run twice (a pure producer may: it recomputes the same values):
	// here each iteration of j needs B[j..j+2], and U, which doubles
	// what P wrote, would double some elements two or three times.
	g := mustParseFunc(t, `func overlap(X: float32[8], Y: float32[6]) {
  ScheduleBlock(root) {
    alloc B: float32[8]
    serial for (i, 0, 8) {
      ScheduleBlock(P) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 8))
        reads(X[vi])
        writes(B[vi])
        B[vi] = X[vi]
      }
    }
    serial for (i2, 0, 8) {
      ScheduleBlock(U) {
        vi = axis.bind(i2)
        axis.domain(vi = spatial(0, 8))
        reads(B[vi])
        writes(B[vi])
        B[vi] = B[vi] * 2.0f
      }
    }
    serial for (j, 0, 6) {
      serial for (r, 0, 3) {
        ScheduleBlock(R) {
          vj, vr = axis.bind(j, r)
          axis.domain(vj = spatial(0, 6), vr = reduce(0, 3))
          reads(Y[vj], B[vj + vr])
          writes(Y[vj])
          init {
            Y[vj] = 0.0f
          }
          Y[vj] = Y[vj] + B[vj + vr]
        }
      }
    }
  }
}`)
	s2, _ := New(g, WithValidation(true))
	u, _ := s2.GetBlock("U")
	j, _ := s2.GetLoop("j")
	if err := s2.ComputeAt(u, j); !errors.Is(err, ErrIllegal) {
		t.Errorf("compute_at of a second writer where its instances would run again: %v, want a refusal", err)
	}
}
