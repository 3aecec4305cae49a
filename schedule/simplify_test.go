package schedule_test

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestSimplified: the schedules the tuner samples (with post-processing,
// as records keep them) simplify to traces that rebuild the same
// function, in text too, with fewer steps, no sampling left, each block
// looked up once at most, and a Go form that names no unused variable.
func TestSimplified(t *testing.T) {
	// What is checked is the rewrite; the validator judges the primitives
	// in the other tests.
	defer schedule.SetValidation(schedule.SetValidation(false))
	sp := &autotune.Space{Rules: autotune.DefaultRules(), Target: autotune.Target{VectorLanes: 16, Threads: 2}}
	for _, c := range workload.All() {
		for seed := uint64(1); seed <= 3; seed++ {
			s, err := sp.Sample(c.Func, seed)
			if err != nil {
				t.Fatalf("%s seed %d: %v", c.Name, seed, err)
			}
			if err := autotune.Finish(s); err != nil {
				t.Fatalf("%s seed %d: finish: %v", c.Name, seed, err)
			}
			full := s.Trace()
			simple, err := full.Simplified(c.Func)
			if err != nil {
				t.Fatalf("%s seed %d: %v\n%s", c.Name, seed, err, full)
			}
			want := ast.Hash(s.Func())
			text, err := schedule.ParseTraceText(simple.String())
			if err != nil {
				t.Fatalf("%s seed %d: the text does not parse: %v\n%s", c.Name, seed, err, simple)
			}
			again, err := schedule.Replay(c.Func, text, nil)
			if err != nil || ast.Hash(again.Func()) != want {
				t.Fatalf("%s seed %d: the simplified trace's text rebuilds another function (%v):\n%s", c.Name, seed, err, simple)
			}
			if len(simple.Insts) >= len(full.Insts) {
				t.Errorf("%s seed %d: %d steps simplified to %d", c.Name, seed, len(full.Insts), len(simple.Insts))
			}
			blocks := map[string]bool{}
			for _, in := range simple.Insts {
				if strings.HasPrefix(in.Kind, "sample_") {
					t.Errorf("%s seed %d: a sampling step is left: %s", c.Name, seed, in)
				}
				if in.Kind == "get_block" {
					if name := *in.Args[0].Str; blocks[name] {
						t.Errorf("%s seed %d: block %s looked up twice:\n%s", c.Name, seed, name, simple)
					} else {
						blocks[name] = true
					}
				}
			}
			if g := simple.Go(); strings.Contains(g, "_ = ") {
				t.Errorf("%s seed %d: the Go keeps variables alive with _ =:\n%s", c.Name, seed, g)
			}
		}
	}
}
