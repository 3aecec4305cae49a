package schedule

import (
	"errors"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

// TestSplitAtTheInt32Limit: a loop of 2^31 - 1 iterations splits with an
// inferred factor (its rounding up does not overflow the loop's type), and
// a split that covers too few iterations says how many, not a wrapped
// negative count.
func TestSplitAtTheInt32Limit(t *testing.T) {
	f, err := ast.Parse(`func f(A: float32[1]) {
  serial for (i, 0, 2147483647) {
    ScheduleBlock(S) {
      vi = axis.bind(0)
      axis.domain(vi = spatial(0, 1))
      writes(A[vi])
      A[vi] = 1.0f
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	i, _ := s.GetLoop("i")
	parts, err := s.Split(i, -1, 2)
	if err != nil {
		t.Fatalf("split by [-1, 2]: %v", err)
	}
	outer, _, _ := s.loop("test", parts[0])
	if v, ok := ast.ConstIntValue(outer.Extent); !ok || v != 1073741824 {
		t.Errorf("the inferred factor is %s, want 1073741824", ast.Print(outer.Extent))
	}
	s2, _ := New(f)
	i2, _ := s2.GetLoop("i")
	_, err = s2.Split(i2, 65536, 32767)
	if !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), "the factors cover 2147418112 iterations of the 2147483647") {
		t.Errorf("split by [65536, 32767]: %v", err)
	}
	s3, _ := New(f)
	i3, _ := s3.GetLoop("i")
	factors := make([]int, 40)
	for k := range factors {
		factors[k] = 1
	}
	factors[0] = -1
	if _, err := s3.Split(i3, factors...); !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), "at most 32 factors, got 40") {
		t.Errorf("split into 40 factors: %v", err)
	}
}
