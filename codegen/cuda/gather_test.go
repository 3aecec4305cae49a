package cuda_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/gputest"
	"github.com/loom-go/loom/schedule"
)

// TestGatherIndexClamped: a GPU kernel has no status to report a gather's
// index out of range with (the CPU kernels return one), so the index is
// clamped into its dimension: an id out of range reads the nearest row,
// never memory outside the table, as the package documentation says.
func TestGatherIndexClamped(t *testing.T) {
	f, err := ast.Parse(`func embed(E: float32[5, 4], I: int32[6], Y: float32[6, 4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 6) {
      serial for (k, 0, 4) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, 6), vk = spatial(0, 4))
          reads(E[0:+5, vk], I[vi])
          writes(Y[vi, vk])
          Y[vi, vk] = E[I[vi], vk]
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedule.New(f)
	if err != nil {
		t.Fatal(err)
	}
	h := &steps{s: s}
	ls := h.loops("Y")
	h.do(func() error { return s.Bind(ls[0], "blockIdx.x") })
	h.do(func() error { return s.Bind(ls[1], "threadIdx.x") })
	if h.err != nil {
		t.Fatal(h.err)
	}
	m, err := cuda.Lower(s.Func(), cuda.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Source, "loom_clamp_index(") {
		t.Fatalf("the gather's index is not clamped:\n%s", m.Source)
	}
	if _, err := cuda.CompilePTX(m); err != nil {
		t.Fatal(err)
	}
	table := make([]float32, 20)
	for i := range table {
		table[i] = float32(i + 1)
	}
	ids := []int32{1, 7, -3, 1 << 30, 0, 4}
	got := map[string]any{"E": table, "I": ids, "Y": make([]float32, 24)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := gputest.Run(ctx, m, nil, got); err != nil {
		t.Fatal(err)
	}
	var want []float32
	for _, id := range []int{1, 4, 0, 4, 0, 4} {
		want = append(want, table[4*id:4*id+4]...)
	}
	if fmt.Sprint(got["Y"]) != fmt.Sprint(want) {
		t.Errorf("Y = %v, want the clamped rows %v", got["Y"], want)
	}
}
