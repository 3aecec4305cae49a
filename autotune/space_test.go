package autotune

import (
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/schedgen"
	"github.com/loom-go/loom/schedule"
)

// TestSampleKeepsResults: candidates sampled from the default space of
// every corpus function compute what the function computes, and their
// traces replay to the same function: three seeds each, four with
// -long.
func TestSampleKeepsResults(t *testing.T) {
	sp := &Space{Rules: DefaultRules(), Target: Target{VectorLanes: 8, Threads: 2}}
	n := 3
	if *long {
		n = 4
	}
	for _, c := range schedgen.Corpus() {
		want := c.Args(1)
		if err := ast.Interpret(c.Func, c.Sizes, want); err != nil {
			t.Fatal(err)
		}
		ok := 0
		for seed := uint64(1); seed <= uint64(n); seed++ {
			s, err := sp.Sample(c.Func, seed)
			if err != nil {
				t.Logf("%s seed %d: %v", c.Name, seed, err)
				continue
			}
			ok++
			f := s.Func()
			got := c.Args(1)
			if err := ast.Interpret(f, c.Sizes, got); err != nil {
				t.Fatalf("%s seed %d: %v\n%s", c.Name, seed, err, s.Trace())
			}
			for name, w := range want {
				if e := check.MaxRelErr(got[name], w); e > 1e-5 {
					t.Fatalf("%s seed %d: %s differs (%g)\n%s", c.Name, seed, name, e, s.Trace())
				}
			}
			again, err := schedule.Replay(c.Func, s.Trace(), nil)
			if err != nil {
				t.Fatalf("%s seed %d: replay: %v", c.Name, seed, err)
			}
			if ast.Hash(again.Func()) != ast.Hash(s.Func()) {
				t.Fatalf("%s seed %d: replay gives another function", c.Name, seed)
			}
		}
		if ok == 0 {
			t.Errorf("%s: no candidate could be sampled", c.Name)
		}
	}
}
