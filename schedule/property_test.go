package schedule_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/schedgen"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// runSequence applies n random steps to a schedule of c and checks the
// properties after each one.
func runSequence(t *testing.T, c workload.Case, seed uint64, n int) {
	r := rand.New(rand.NewPCG(seed, 99))
	s, err := schedule.New(c.Func, schedule.WithSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	args := c.Args(seed)
	want := workload.Clone(args)
	if err := ast.Interpret(s.Func(), c.Sizes, want); err != nil {
		t.Fatal(err)
	}
	var log []string
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("%s, seed %d, after:\n  %s\n%s", c.Name, seed, strings.Join(log, "\n  "), fmt.Sprintf(format, a...))
	}
	for i := 0; i < n; i++ {
		before, beforeTrace := s.Func(), len(s.Trace().Insts)
		var desc string
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					fail("step %d panicked: %v", i, p)
				}
			}()
			desc, err = schedgen.Step(r, s, func() { before, beforeTrace = s.Func(), len(s.Trace().Insts) })
		}()
		if err != nil {
			var se *schedule.Error
			if !errors.As(err, &se) {
				fail("%s returned an untyped error: %v", desc, err)
			}
			if s.Func() != before || len(s.Trace().Insts) != beforeTrace {
				fail("%s failed (%v) but changed the schedule", desc, err)
			}
			continue
		}
		log = append(log, desc)
		got := workload.Clone(c.Args(seed))
		if err := ast.Interpret(s.Func(), c.Sizes, got); err != nil {
			fail("%s: the scheduled function faults: %s", desc, ast.Explain(s.Func(), err))
		}
		for name, w := range want {
			if workload.MaxRelErr(got[name], w) > 1e-5 {
				fail("%s changed the result in buffer %s:\n%s", desc, name, ast.Print(s.Func()))
			}
		}
	}
	// The whole trace replays from JSON to the same function.
	data, err := json.Marshal(s.Trace())
	if err != nil {
		fail("marshal: %v", err)
	}
	tr, err := schedule.ParseTrace(data)
	if err != nil {
		fail("parse trace: %v", err)
	}
	again, err := schedule.Replay(c.Func, tr, nil, schedule.WithSeed(seed))
	if err != nil {
		fail("replay: %v", err)
	}
	if ast.Hash(again.Func()) != ast.Hash(s.Func()) {
		fail("replay gives another function")
	}
}

// long runs the property test at full size: go test ./schedule -run
// RandomSchedules -long -timeout 1h.
var long = flag.Bool("long", false, "run the property test at full size")

// seed reruns one sequence of a failure report: go test ./schedule -run
// RandomSchedules/chain -long -seed 27.
var seed = flag.Uint64("seed", 0, "run only the sequence with this seed")

// TestRandomSchedules applies long random sequences of primitives to every
// function of the corpus: accepted steps keep the interpreter's results,
// refused ones change nothing, none panics, and the trace replays.
func TestRandomSchedules(t *testing.T) {
	seqs, steps := 6, 25
	switch {
	case testing.Short():
		seqs, steps = 2, 15
	case *long:
		seqs, steps = 40, 30
	}
	for _, c := range schedgen.Corpus() {
		t.Run(c.Name, func(t *testing.T) {
			if *seed != 0 {
				runSequence(t, c, *seed, steps)
				return
			}
			for k := 0; k < seqs; k++ {
				runSequence(t, c, uint64(k+1), steps)
			}
		})
	}
}

// FuzzSchedule runs a random sequence chosen by the fuzzer.
//
//	go test ./schedule -run '^$' -fuzz FuzzSchedule -fuzztime 1m
func FuzzSchedule(f *testing.F) {
	f.Add(uint64(1), uint8(0), uint8(10))
	f.Add(uint64(7), uint8(3), uint8(20))
	f.Add(uint64(42), uint8(6), uint8(30))
	// Smaller than the corpus of TestRandomSchedules (the chain is 64 wide,
	// not 1024), so that each input runs in well under a second.
	cs := schedgen.Corpus()
	cs[len(cs)-1] = workload.Chain(1, 2, 64)
	f.Fuzz(func(t *testing.T, seed uint64, fn, n uint8) {
		runSequence(t, cs[int(fn)%len(cs)], seed, int(n%20))
	})
}
