package llvm

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestCompaction: the local tile of a cache_write, declared at full size,
// is allocated per tile (8 x 16 floats on the stack); a temporary whose
// values flow between iterations keeps its size.
func TestCompaction(t *testing.T) {
	f := workload.Matmul(64, 64, 64).Func
	s, err := schedule.New(f)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.GetBlock("C")
	loops, _ := s.GetLoops(c)
	i, _ := s.Split(loops[0], -1, 8)
	j, _ := s.Split(loops[1], -1, 16)
	if err := s.Reorder(i[0], j[0], i[1], j[1]); err != nil {
		t.Fatal(schedule.Explain(err))
	}
	tile, err := s.CacheWrite(c, "C", "local")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReverseComputeAt(tile, j[0]); err != nil {
		t.Fatal(schedule.Explain(err))
	}
	plans := planCompactions(s.Func())
	var local *ast.Buffer
	for b := range plans {
		if b.Name == "C_local" {
			local = b
		}
	}
	if local == nil {
		t.Fatalf("C_local is not compacted:\n%s", s.Func())
	}
	p := plans[local]
	var dims []string
	for _, d := range p.Shape {
		dims = append(dims, ast.Print(d))
	}
	if p.Loop.Var.Name != "j_0" || strings.Join(dims, ",") != "8L,16L" {
		t.Errorf("C_local compacts at %s to [%s], want j_0 and [8,16]", p.Loop.Var.Name, strings.Join(dims, ","))
	}
	m, err := Lower(s.Func(), Options{Target: goldenTarget})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.String(), "alloca [128 x float]") {
		t.Errorf("no 128-float tile on the stack:\n%s", m)
	}

	// A prefix sum keeps its buffer whole: each iteration reads the
	// previous one's value.
	g, err := ast.Parse(`func scan(X: float32[16], Y: float32[16]) {
  ScheduleBlock(root) {
    alloc T: float32[16]
    serial for (i, 0, 16) {
      ScheduleBlock(T) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 16))
        reads(X[vi], T[vi - 1:+1])
        writes(T[vi])
        T[vi] = X[vi] + select(vi > 0, T[max(vi - 1, 0)], 0.0f)
      }
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 16))
        reads(T[vi])
        writes(Y[vi])
        Y[vi] = T[vi]
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	if plans := planCompactions(g); len(plans) != 0 {
		t.Errorf("a buffer carried between iterations was compacted: %v", plans)
	}
}
