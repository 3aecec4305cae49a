package native

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// TestGuardedLoads: a padded read, select(h in [0, n), A[clamp(h)], fill),
// in a vectorized loop is a masked load of A[h] where the condition covers
// the clamp (whatever the order and form of the comparisons, at strides 1
// and 2, under a predicate, with A of a symbolic extent), and stays a gather where
// it does not (a missing upper bound, a condition on another expression):
// against the interpreter at every vector width, lanes past both ends of A
// included (under rerunSubset each case and predicate at one width).
func TestGuardedLoads(t *testing.T) {
	cases := []struct {
		name, cond, index string
		masked            bool
	}{
		{"both", "vi - 2 >= 0 && vi - 2 < N", "min(N - 1, max(0, vi - 2))", true},
		{"swapped", "0 <= vi - 2 && N > vi - 2", "max(min(vi - 2, N - 1), 0)", true},
		{"le", "vi - 2 > -1 && vi - 2 <= N - 1", "min(max(0, vi - 2), N - 1)", true},
		{"stride2", "vi * 2 - 3 >= 0 && vi * 2 - 3 < N", "min(N - 1, max(0, vi * 2 - 3))", true},
		{"tighter", "vi - 2 >= 1 && vi - 2 < N - 1", "min(N - 1, max(0, vi - 2))", true},
		{"noUpper", "vi - 2 >= 0", "min(N - 1, max(0, vi - 2))", false},
		{"looser", "vi - 2 >= -1 && vi - 2 < N", "min(N - 1, max(0, vi - 2))", false},
		{"other", "vi - 1 >= 0 && vi - 1 < N", "min(N - 1, max(0, vi - 2))", false},
	}
	for ci, c := range cases {
		for pi, pred := range []string{"", "predicate(i % 3 != 1)\n        "} {
			src := fmt.Sprintf(`func guarded[N: int32](A: float32[N], Y: float32[41]) {
  ScheduleBlock(root) {
    vectorized for (i, 0, 41) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 41))
        %sreads(A[0:+N])
        writes(Y[vi])
        Y[vi] = select(%s, A[%s], -7.0f) + 1.0f
      }
    }
  }
}`, pred, c.cond, c.index)
			f, err := ast.Parse(src)
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			for _, bits := range pick(2*ci+pi, []int{128, 256, 512}) {
				t.Run(fmt.Sprintf("%s/%d/predicate=%t", c.name, bits, pred != ""), func(t *testing.T) {
					for _, n := range []int64{1, 5, 37, 40} {
						agree(t, f, map[string]int64{"N": n}, llvm.Options{VectorBits: bits}, 3)
					}
					m, err := llvm.Lower(f, llvm.Options{VectorBits: bits})
					if err != nil {
						t.Fatal(err)
					}
					ir := m.String()
					if gather := strings.Contains(ir, "masked.gather"); gather == c.masked {
						t.Errorf("gather in the IR: %v, want %v:\n%s", gather, !c.masked, ir)
					}
					if !strings.Contains(ir, "x float>") {
						t.Errorf("not vectorized:\n%s", ir)
					}
				})
			}
		}
	}
}
