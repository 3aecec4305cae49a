package schedule

import (
	"errors"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

// TestRFactorEveryLoop: rfactor of any loop of any block of the corpus
// (unsplit, split, after a reorder) either succeeds or is refused with a
// user's error, never an internal one, with the validator on.
func TestRFactorEveryLoop(t *testing.T) {
	for _, c := range workload.All() {
		base, err := New(c.Func, WithValidation(true))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range base.Blocks() {
			loops, _ := base.GetLoops(b)
			for i := range loops {
				for _, split := range []bool{false, true} {
					s, _ := New(c.Func, WithValidation(true))
					blk, _ := s.GetBlock(b.Name())
					ls, _ := s.GetLoops(blk)
					l := ls[i]
					if split {
						parts, err := s.Split(l, -1, 2)
						if err != nil {
							continue
						}
						l = parts[1]
					}
					if _, err := s.RFactor(l); errors.Is(err, ErrInternal) {
						t.Errorf("%s: rfactor of loop %d of block %s (split %v): %v", c.Name, i, b.Name(), split, err)
					}
				}
			}
		}
	}
}

// TestRFactorTail: rfactor of either part of a reduction split by a factor
// that need not divide it (a symbolic extent, so the predicate is a tail),
// with the validator on, compared with the interpreter at extents that are
// 0, below, at and above a multiple of the factor. The partial results'
// init is a block of its own (slots the tail leaves without a term still
// start at the identity) and the write-back does not run where nothing
// was summed (the input's Y is left as it was at N = 0).
func TestRFactorTail(t *testing.T) {
	const rowsum = `func rowsum[M: int32, N: int32](X: float32[M, N], Y: float32[M]) {
  ScheduleBlock(root) {
    serial for (i, 0, M) {
      serial for (k, 0, N) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, M), vk = reduce(0, N))
          reads(Y[vi], X[vi, vk])
          writes(Y[vi])
          init {
            Y[vi] = 0.0f
          }
          Y[vi] = Y[vi] + X[vi, vk]
        }
      }
    }
  }
}`
	f := mustParseFunc(t, rowsum)
	for _, part := range []int{0, 1} {
		for _, factor := range []int{4, 16} {
			s, err := New(f, WithValidation(true))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := s.GetBlock("Y")
			ls, _ := s.GetLoops(b)
			parts, err := s.Split(ls[1], -1, factor)
			if err != nil {
				t.Fatal(err)
			}
			rf, err := s.RFactor(parts[part])
			if err != nil {
				t.Fatalf("rfactor of part %d of k split by %d: %s", part, factor, Explain(err))
			}
			if _, err := s.GetBlock(rf.Name() + "_init"); err != nil {
				t.Errorf("part %d, factor %d: no separate init block of the partial results:\n%s", part, factor, ast.Print(s.Func()))
			}
			for _, n := range []int{0, 1, factor - 1, factor, factor + 1, 3*factor + 2} {
				checkSameResults(t, f, s.Func(), map[string]int64{"M": 3, "N": int64(n)})
			}
		}
	}
	// Two reduce loops of symbolic extent, the inner one split: rfactor of
	// its inner part puts the partial results' init before the outer
	// reduce loop, and the write-back is skipped where either extent is 0.
	const sum2 = `func sum2[M: int32, R: int32, N: int32](X: float32[M, R, N], Y: float32[M]) {
  ScheduleBlock(root) {
    serial for (i, 0, M) {
      serial for (r, 0, R) {
        serial for (k, 0, N) {
          ScheduleBlock(Y) {
            vi, vr, vk = axis.bind(i, r, k)
            axis.domain(vi = spatial(0, M), vr = reduce(0, R), vk = reduce(0, N))
            reads(Y[vi], X[vi, vr, vk])
            writes(Y[vi])
            init {
              Y[vi] = 0.0f
            }
            Y[vi] = Y[vi] + X[vi, vr, vk]
          }
        }
      }
    }
  }
}`
	g := mustParseFunc(t, sum2)
	s, err := New(g, WithValidation(true))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := s.GetLoop("k")
	parts, err := s.Split(k, -1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RFactor(parts[1]); err != nil {
		t.Fatalf("rfactor of the inner part of a split inner reduce loop: %s", Explain(err))
	}
	for _, r := range []int64{0, 1, 3} {
		for _, n := range []int64{0, 1, 4, 6} {
			checkSameResults(t, g, s.Func(), map[string]int64{"M": 2, "R": r, "N": n})
		}
	}
	// The outer reduce loop split into more parts than it has iterations
	// (the long run found it: [8, -1, 1] of a 3-tap window): whole slots
	// get no term, and the init, under the rfactored loop, must still
	// fill them (it kept the tail's predicate, and they summed garbage).
	for _, rows := range []string{"R", "3"} {
		h := g
		if rows != "R" {
			h = mustParseFunc(t, strings.ReplaceAll(strings.ReplaceAll(sum2, "[M: int32, R: int32, N: int32]", "[M: int32, N: int32]"), "R", rows))
		}
		s, err = New(h, WithValidation(true))
		if err != nil {
			t.Fatal(err)
		}
		r, _ := s.GetLoop("r")
		parts, err = s.Split(r, 8, -1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.RFactor(parts[0]); err != nil {
			t.Fatalf("rfactor of the outer part of the outer reduce loop: %s", Explain(err))
		}
		for _, r := range []int64{0, 1, 3, 9, 17} {
			sizes := map[string]int64{"M": 2, "N": 3}
			if rows == "R" {
				sizes["R"] = r
			}
			checkSameResults(t, h, s.Func(), sizes)
		}
	}
}
