package native

import (
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// TestBlockAroundNest: a block that holds loops and a block of its own
// (schedule.Blockize makes one around a tile's nest) is context: its
// iteration variables take their bindings, its predicate guards it, its
// body runs. Inside it a parallel loop (its outlined body sees the
// block's variables) and a vectorized one; around it a vectorized loop
// and a guarded tail.
func TestBlockAroundNest(t *testing.T) {
	for _, src := range []string{`func inside(A: float32[8, 64], B: float32[8, 64]) {
  ScheduleBlock(root) {
    serial for (io, 0, 2) {
      ScheduleBlock(B_o) {
        vo = axis.bind(io)
        axis.domain(vo = spatial(0, 2))
        reads(A[vo * 4:+4, 0:+64])
        writes(B[vo * 4:+4, 0:+64])
        parallel for (ii, 0, 4) {
          vectorized for (j, 0, 64) {
            ScheduleBlock(B) {
              vi, vj = axis.bind(vo * 4 + ii, j)
              axis.domain(vi = spatial(0, 8), vj = spatial(0, 64))
              reads(A[vi, vj])
              writes(B[vi, vj])
              B[vi, vj] = A[vi, vj] * 2.0f
            }
          }
        }
      }
    }
  }
}`, `func around[N: int32](A: float32[N, 64], B: float32[N, 64]) {
  ScheduleBlock(root) {
    parallel for (io, 0, floordiv(N + 3, 4)) {
      vectorized for (jo, 0, 4) {
        ScheduleBlock(B_o) {
          vo, vjo = axis.bind(io, jo)
          axis.domain(vo = spatial(0, floordiv(N + 3, 4)), vjo = spatial(0, 4))
          reads(A[vo * 4:+4, vjo * 16:+16])
          writes(B[vo * 4:+4, vjo * 16:+16])
          serial for (ii, 0, 4) {
            serial for (j, 0, 16) {
              ScheduleBlock(B) {
                vi, vj = axis.bind(vo * 4 + ii, vjo * 16 + j)
                axis.domain(vi = spatial(0, N), vj = spatial(0, 64))
                predicate(vo * 4 + ii < N)
                reads(A[vi, vj])
                writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * 2.0f + 1.0f
              }
            }
          }
        }
      }
    }
  }
}`} {
		f, err := ast.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		sizes := []map[string]int64{{}}
		if len(f.Sizes) > 0 {
			sizes = []map[string]int64{{"N": 1}, {"N": 8}, {"N": 13}}
		}
		for _, sz := range sizes {
			agree(t, f, sz, llvm.Options{}, 1)
		}
	}
}
