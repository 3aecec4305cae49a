package native

import (
	"fmt"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// TestStridedLoads: vectorized loads whose index moves by 2, 3 or 4 per
// lane (one wide load and a shuffle) and by 5 (a gather), on a row that
// ends in a partial vector, under a predicate that differs between lanes,
// and with the last lane reading the buffer's last element, at every
// vector width and in float16 too, against the interpreter (under
// rerunSubset each type and predicate at one width).
func TestStridedLoads(t *testing.T) {
	const n = 37
	for di, dt := range []string{"float32", "float16", "float64"} {
		for pi, pred := range []string{"", "predicate(i % 3 != 1)\n        "} {
			src := fmt.Sprintf(`func strided(A: %[1]s[%[2]d], B: %[1]s[%[3]d], Y: %[1]s[%[4]d]) {
  ScheduleBlock(root) {
    vectorized for (i, 0, %[4]d) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, %[4]d))
        %[5]sreads(A[0:+%[2]d], B[0:+%[3]d])
        writes(Y[vi])
        Y[vi] = A[vi * 2] + A[vi * 3 + 1] * A[vi * 4 + 2] - A[vi * 5] + B[vi * 2]
      }
    }
  }
}`, dt, 5*(n-1)+1, 2*(n-1)+1, n, pred)
			f, err := ast.Parse(src)
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			for _, bits := range pick(2*di+pi, []int{128, 256, 512}) {
				t.Run(fmt.Sprintf("%s/%d/predicate=%t", dt, bits, pred != ""), func(t *testing.T) {
					agree(t, f, nil, llvm.Options{VectorBits: bits}, 5)
				})
			}
		}
	}
}
