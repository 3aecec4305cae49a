package llvm

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/internal/hand"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

var avx512Target = Target{Triple: "x86_64-unknown-linux-gnu", CPU: "skylake-avx512"}

// TestVectorBitsAnnotation: a vectorized loop annotated with
// VectorBitsKey = 256 runs in 8-lane float32 vectors on an AVX-512
// target; without it, in 16-lane ones.
func TestVectorBitsAnnotation(t *testing.T) {
	for _, bits := range []int64{0, 256} {
		s, err := schedule.New(workload.Chain(2, 3, 64).Func)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := s.GetBlock("F")
		loops, _ := s.GetLoops(f)
		if err := s.Vectorize(loops[2]); err != nil {
			t.Fatal(schedule.Explain(err))
		}
		if bits > 0 {
			if err := s.AnnotateLoop(loops[2], VectorBitsKey, bits); err != nil {
				t.Fatal(err)
			}
		}
		m, err := Lower(s.Func(), Options{Target: avx512Target})
		if err != nil {
			t.Fatal(err)
		}
		ir := m.String()
		wide, narrow := strings.Contains(ir, "<16 x float>"), strings.Contains(ir, "<8 x float>")
		if bits == 256 && (wide || !narrow) || bits == 0 && (!wide || narrow) {
			t.Errorf("vector_bits %d: 16-lane vectors %v, 8-lane vectors %v:\n%s", bits, wide, narrow, ir)
		}
	}
}

// TestIndexStays64Bit: the chain's hand schedule compacts its rfactor
// buffer to one row, at an origin written with int32 loop variables cast
// to int64. Computed through int32, the offset j - sext(trunc(j)) is not
// 0 to LLVM, so the buffer stays in memory instead of registers; as index
// arithmetic it folds away.
func TestIndexStays64Bit(t *testing.T) {
	c := workload.Chain(4, 8, 1024)
	s, err := schedule.New(c.Func)
	if err != nil {
		t.Fatal(err)
	}
	if err := hand.Chain(s, hand.Config{Threads: 1, VectorBits: 512}); err != nil {
		t.Fatal(schedule.Explain(err))
	}
	m, err := Lower(s.Func(), Options{Target: avx512Target})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"trunc", "sext"} {
		if strings.Contains(m.String(), " "+op+" ") {
			t.Errorf("%s in the chain's index arithmetic:\n%s", op, m)
		}
	}
}
