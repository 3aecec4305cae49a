package cuda_test

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestPipelineRefused: a pipeline annotation that cannot be honoured is
// refused where the function lowers, naming the loop and the reason,
// never ignored: stages out of range, a loop that is not serial or not run
// alike by the whole block, one whose body does not begin with a fetch of
// a shared tile, and a target without cp.async.
func TestPipelineRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		loop   string // the loop of block C to annotate
		stages any
		arch   string
		want   string
	}{
		{"one stage", "k_0", 1, "", "the stages must be an integer from 2 to 8"},
		{"nine stages", "k_0", 9, "", "the stages must be an integer from 2 to 8"},
		{"not a number", "k_0", "two", "", "the stages must be an integer from 2 to 8"},
		{"sm_75", "k_0", 2, "sm_75", "cp.async, which needs sm_80 or later, not sm_75"},
		{"thread loop", "i_1", 2, "", "only a serial loop runs as a pipeline, not a bind(threadIdx.y) one"},
		{"no fetch", "k_1", 2, "", "does not begin with a fetch of a shared tile"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := schedule.New(workload.Matmul(128, 128, 128).Func)
			if err != nil {
				t.Fatal(err)
			}
			if err := scheduleGemm(s); err != nil {
				t.Fatal(schedule.Explain(err))
			}
			h := &steps{s: s}
			found := false
			for _, l := range h.loops("C") {
				if l.Name() == c.loop {
					found = true
					h.do(func() error { return s.AnnotateLoop(l, cuda.PipelineKey, c.stages) })
				}
			}
			if !found || h.err != nil {
				t.Fatalf("no loop %s to annotate (%v)", c.loop, h.err)
			}
			_, err = cuda.Lower(s.Func(), cuda.Options{Arch: c.arch})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "loop "+c.loop) {
				t.Fatalf("got %v, want an error naming loop %s: %s\n%s", err, c.loop, c.want, ast.Print(s.Func()))
			}
		})
	}
}
