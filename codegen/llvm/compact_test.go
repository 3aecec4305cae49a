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

// TestCompactionAcrossBranches: a temporary written in both branches of
// an if inside its tile loop (a loop partition.Borders versioned)
// compacts to the tile with the tile's origin. Each branch's part starts
// at i * 8, but the else branch runs only at i = 0, where its start reads
// 0: taken as the origin of every tile, the tiles after the first
// indexed their 8 elements past a buffer of 8 (a crash of MobileNetV2's
// strided depthwise convolution).
func TestCompactionAcrossBranches(t *testing.T) {
	block := func(name, expr string) string {
		return `serial for (j, 0, 8) {
          ScheduleBlock(` + name + `) {
            vi = axis.bind(i * 8 + j)
            axis.domain(vi = spatial(0, 32))
            reads(A[vi])
            writes(T[vi])
            T[vi] = ` + expr + `
          }
        }`
	}
	g, err := ast.Parse(`func branches(A: float32[32], B: float32[32]) {
  ScheduleBlock(root) {
    alloc T: float32[32]
    serial for (i, 0, 4) {
      if (i >= 1) {
        ` + block("T1", "A[vi] * 2.0f") + `
      } else {
        ` + block("T2", "A[vi] + 1.0f") + `
      }
      serial for (j, 0, 8) {
        ScheduleBlock(B) {
          vi = axis.bind(i * 8 + j)
          axis.domain(vi = spatial(0, 32))
          reads(T[vi])
          writes(B[vi])
          B[vi] = T[vi]
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	plans := planCompactions(g)
	if len(plans) != 1 {
		t.Fatalf("%d buffers compacted, want T", len(plans))
	}
	for b, c := range plans {
		var origin []string
		for _, o := range c.Origin {
			origin = append(origin, ast.Print(o))
		}
		if got := strings.Join(origin, ","); !strings.Contains(got, "i") {
			t.Errorf("%s compacts at %s from [%s]: the same origin for every tile", b.Name, c.Loop.Var.Name, got)
		}
	}
}
