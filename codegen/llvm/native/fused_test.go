package native

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// TestFusedLoopAccesses: accesses through a vectorized loop that fuse made
// of two or three loops (indices floordiv(f, k) and floormod(f, k), which
// the code generator merges back into one contiguous offset), next to
// ones where the pair does not match the buffer's row (k is not its
// width: no merge), at every vector width, with tails, against the
// interpreter. W's loop is the fused loop split: its outer part is a
// sum beside the pair (o*2 + floordiv(g, 13), floormod(g, 13)), as a
// split of a fused conv's output rows makes it.
func TestFusedLoopAccesses(t *testing.T) {
	src := `func fused(A: float32[6, 13], B: float32[6, 16], C: float32[3, 7, 5], Y: float32[6, 13], W: float32[6, 13], Z: float32[3, 7, 5]) {
  ScheduleBlock(root) {
    vectorized for (f, 0, 78) {
      ScheduleBlock(Y) {
        vi, vj = axis.bind(floordiv(f, 13), floormod(f, 13))
        axis.domain(vi = spatial(0, 6), vj = spatial(0, 13))
        reads(A[vi, vj], B[vi, vj])
        writes(Y[vi, vj])
        Y[vi, vj] = A[vi, vj] * 2.0f + B[vi, vj]
      }
    }
    serial for (o, 0, 3) {
      serial for (p, 0, 4) {
        vectorized for (q, 0, 8) {
          ScheduleBlock(W) {
            vi, vj = axis.bind(o * 2 + floordiv(p * 8 + q, 13), floormod(p * 8 + q, 13))
            axis.domain(vi = spatial(0, 6), vj = spatial(0, 13))
            predicate(p * 8 + q < 26)
            reads(A[vi, vj])
            writes(W[vi, vj])
            W[vi, vj] = A[vi, vj] + 1.0f
          }
        }
      }
    }
    vectorized for (g, 0, 105) {
      ScheduleBlock(Z) {
        vi, vj, vk = axis.bind(floordiv(g, 35), floormod(floordiv(g, 5), 7), floormod(g, 5))
        axis.domain(vi = spatial(0, 3), vj = spatial(0, 7), vk = spatial(0, 5))
        reads(C[vi, vj, vk], A[vi * 2, vk])
        writes(Z[vi, vj, vk])
        Z[vi, vj, vk] = C[vi, vj, vk] - A[vi * 2, vk]
      }
    }
  }
}`
	f, err := ast.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, bits := range []int{128, 256, 512} {
		t.Run(fmt.Sprint(bits), func(t *testing.T) {
			agree(t, f, nil, llvm.Options{VectorBits: bits}, 7)
			m, err := llvm.Lower(f, llvm.Options{VectorBits: bits})
			if err != nil {
				t.Fatal(err)
			}
			// The stores of Y, W and Z go through the merged offsets: no
			// scatter. (B's rows are 16 wide, not 13, and A[vi * 2, vk]
			// is no fused pair: those loads stay gathers.)
			if n := countCalls(m.String(), "llvm.masked.scatter"); n != 0 {
				t.Errorf("%d scatters, want none:\n%s", n, m)
			}
			if n := countCalls(m.String(), "llvm.masked.gather"); n == 0 {
				t.Errorf("no gather: B's access cannot be contiguous")
			}
		})
	}
}

// countCalls counts the calls of fn in LLVM IR text (not its declaration).
func countCalls(ir, fn string) int {
	n := 0
	for _, line := range strings.Split(ir, "\n") {
		if strings.Contains(line, "call ") && strings.Contains(line, "@"+fn) && !strings.HasPrefix(strings.TrimSpace(line), "declare") {
			n++
		}
	}
	return n
}
