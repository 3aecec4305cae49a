package native

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// TestVectorDivModOfRamps: a vectorized loop whose index is split by
// floordiv and floormod of a constant (a reshape after a transpose:
// X[floordiv(j, 64), i, floormod(j, 64)]), against the interpreter. The
// lanes of a vector share one quotient where the divisor and the
// vector's first index are multiples of the vector's span, and the loads
// are then contiguous; elsewhere (an odd start, a divisor the span does
// not divide, a stride of 2, rows ending in partial vectors) each lane
// is computed alone. Both the identity A[floordiv(e, D)*D + floormod(e,
// D)] and the transposing A[floormod(e, D)*Q + floordiv(e, D)] must read
// what the interpreter reads. Every case at every vector width, or under
// rerunSubset at one.
func TestVectorDivModOfRamps(t *testing.T) {
	for ci, c := range []struct {
		cols, lo, stride, add, div int64
	}{
		{768, 0, 1, 0, 64}, {768, 0, 1, 0, 48}, {100, 0, 1, 0, 64}, {100, 3, 1, 0, 64},
		{96, 0, 1, 5, 32}, {96, 0, 1, 16, 32}, {80, 0, 1, 0, 40}, {64, 0, 2, 0, 64},
		{50, 0, 1, 0, 7}, {37, 0, 1, 0, 8},
	} {
		e := fmt.Sprintf("vj * %d + %d", c.stride, c.add)
		q := ((c.cols-1)*c.stride+c.add)/c.div + 1
		n := q * c.div
		src := fmt.Sprintf(`func divmod(A: float32[%[1]d], Y: float32[3, %[2]d], Z: float32[3, %[2]d]) {
  ScheduleBlock(root) {
    serial for (i, 0, 3) {
      vectorized for (j, %[3]d, %[4]d) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 3), vj = spatial(0, %[2]d))
          reads(A[0:+%[1]d])
          writes(Y[vi, vj], Z[vi, vj])
          Y[vi, vj] = A[floordiv(%[5]s, %[6]d) * %[6]d + floormod(%[5]s, %[6]d)]
          Z[vi, vj] = A[floormod(%[5]s, %[6]d) * %[7]d + floordiv(%[5]s, %[6]d)]
        }
      }
    }
  }
}`, n, c.cols, c.lo, c.cols-c.lo, e, c.div, q)
		f, err := ast.Parse(src)
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		for _, bits := range pick(ci, []int{128, 256, 512}) {
			t.Run(fmt.Sprintf("cols=%d,lo=%d,e=%s,div=%d/%d", c.cols, c.lo, e, c.div, bits), func(t *testing.T) {
				agree(t, f, nil, llvm.Options{VectorBits: bits}, 7)
			})
		}
	}
}

// TestMergeHeadsLoadsRows: the reshape of a transpose (BERT's merge of
// heads) reads each vector as one contiguous load, not a gather.
func TestMergeHeadsLoadsRows(t *testing.T) {
	f, err := ast.Parse(`func merge(X: float32[12, 128, 64], Y: float32[128, 768]) {
  ScheduleBlock(root) {
    serial for (i, 0, 128) {
      vectorized for (j, 0, 768) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 128), vj = spatial(0, 768))
          reads(X[floordiv(vj, 64), vi, floormod(vj, 64)])
          writes(Y[vi, vj])
          Y[vi, vj] = X[floordiv(vj, 64), vi, floormod(vj, 64)]
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	m, err := llvm.Lower(f, llvm.Options{VectorBits: 512})
	if err != nil {
		t.Fatal(err)
	}
	if ir := m.String(); strings.Contains(ir, "gather") {
		t.Errorf("the merge of heads gathers:\n%s", ir)
	}
	agree(t, f, nil, llvm.Options{VectorBits: 512}, 3)
}

// TestVectorStepsLoads: a vector whose index divides its lanes into
// groups, floordiv(v, G) with v = 16*jo + ji and ji vectorized (the input
// channel of a grouped convolution whose vector spans whole groups, a
// nearest-neighbour upsampling), against the interpreter: every group's
// lanes read one element. Where the groups' elements lie in one aligned
// run of the vector's width inside the buffer, the run is loaded once
// and shuffled; elsewhere (a stride that leaves the run, a buffer whose
// size is no whole number of runs, a base not known to be a multiple of
// the width) each group's element is loaded alone; a group size that
// does not divide the width, a partial vector (its lanes masked) and an
// odd start read lane by lane as before. At every vector width; at 512
// bits the aligned cases must not gather.
func TestVectorStepsLoads(t *testing.T) {
	for ci, c := range []struct {
		index    string // of A, over vj and vk in [0, 4), unrolled
		n        int64  // A's size
		inner    int64  // the vectorized loop's extent
		lo       int64  // its start
		noGather bool   // at 512 bits: no gather in the IR
		run      bool   // and A read as whole vectors (the aligned run)
	}{
		{"floordiv(vj, 8) * 8 + vk", 96, 16, 0, true, true}, // grouped convolution, groups of 8
		{"floordiv(vj, 4) * 4 + vk", 96, 16, 0, true, true}, // groups of 4
		{"floordiv(vj, 2) * 2 + 1", 96, 16, 0, true, true},
		{"floordiv(vj, 8) * 8 + vk + 3", 96, 16, 0, true, true},    // still in the run
		{"floordiv(vj, 8) * 8 + vk + 9", 96, 16, 0, true, false},   // past the run: loads one by one
		{"floordiv(vj, 2)", 96, 16, 0, true, false},                // upsampling: base a multiple of 8 only
		{"floordiv(vj, 4) * 3 + 1", 96, 16, 0, true, false},        // a stride other than the group
		{"floordiv(vj, 8) * 8 + vk", 90, 16, 0, true, false},       // buffer not a whole number of runs
		{"floordiv(vj, 3) * 3 + vk", 96, 16, 0, false, false},      // 3 does not divide the width
		{"floordiv(vj, 8) * 8 + vk", 96, 12, 0, false, false},      // partial vectors
		{"floordiv(vj + 1, 8) * 8 + vk", 100, 16, 0, false, false}, // base not a multiple
		{"floordiv(vj, 8) * 8 + 7 - vk", 96, 16, 0, true, true},
		{"floordiv(vj, 4) * 4 + min(floordiv(vj, 8), 1)", 96, 16, 0, false, false}, // steps of two groups in a min: lane by lane
		{"floordiv(vj, 4) + floordiv(vj, 8)", 96, 16, 0, false, false},             // steps of two groups added
	} {
		src := fmt.Sprintf(`func steps(A: float32[%[1]d], Y: float32[4, 5, %[2]d]) {
  ScheduleBlock(root) {
    unrolled for (k, 0, 4) {
      serial for (jo, 0, 5) {
        vectorized for (ji, %[3]d, %[2]d) {
          ScheduleBlock(Y) {
            vk, vo, vj = axis.bind(k, jo, jo * %[2]d + ji)
            axis.domain(vk = spatial(0, 4), vo = spatial(0, 5), vj = spatial(0, %[4]d))
            reads(A[0:+%[1]d])
            writes(Y[vk, vo, vj - vo * %[2]d])
            Y[vk, vo, vj - vo * %[2]d] = A[%[5]s]
          }
        }
      }
    }
  }
}`, c.n, c.inner, c.lo, 5*c.inner, c.index)
		f, err := ast.Parse(src)
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		for _, bits := range pick(ci, []int{128, 256, 512}) {
			t.Run(fmt.Sprintf("%s,n=%d,inner=%d/%d", c.index, c.n, c.inner, bits), func(t *testing.T) {
				agree(t, f, nil, llvm.Options{VectorBits: bits}, 11)
				if bits != 512 || !c.noGather {
					return
				}
				m, err := llvm.Lower(f, llvm.Options{VectorBits: bits})
				if err != nil {
					t.Fatal(err)
				}
				ir := m.String()
				if strings.Contains(ir, "masked.gather") {
					t.Errorf("%s gathers:\n%s", c.index, ir)
				}
				if run := strings.Contains(ir, "load <16 x float>"); run != c.run {
					t.Errorf("%s: A read as one run of the vector's width: %v, want %v\n%s", c.index, run, c.run, ir)
				}
			})
		}
	}
}
