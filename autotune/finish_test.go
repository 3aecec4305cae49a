package autotune

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestFinishInTrace: a sampled candidate's trace holds the steps after
// the rules (the unroll and vector-width steps after enter_postproc), so
// that replaying it rebuilds the candidate's function with the same
// trace; Finish again adds nothing; and a record without the steps (made
// by a loom that did not record them) is finished when it is applied, to
// the same function and trace.
func TestFinishInTrace(t *testing.T) {
	sp := &Space{Rules: DefaultRules(), Target: Target{VectorLanes: 16, Threads: 2}}
	c := workload.Chain(2, 3, 64)
	unrolled, widths := 0, 0
	for seed := uint64(1); seed <= 6; seed++ {
		s, err := sp.Sample(c.Func, seed)
		if err != nil {
			t.Fatal(err)
		}
		tr := s.Trace()
		if !tr.HasPostproc() {
			t.Fatalf("seed %d: no post-processing in\n%s", seed, tr)
		}
		post := tr.Insts[len(tr.WithoutPostproc().Insts):]
		for _, in := range post {
			switch {
			case in.Kind == "unroll":
				unrolled++
			case in.Kind == "annotate" && len(in.Args) == 3 && in.Args[1].Str != nil && *in.Args[1].Str == llvm.VectorBitsKey:
				widths++
			}
		}
		again, err := schedule.Replay(c.Func, tr, nil)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		sameSchedule(t, again, s)
		if err := Finish(again); err != nil {
			t.Fatal(err)
		}
		if n := len(again.Trace().Insts); n != len(tr.Insts) {
			t.Fatalf("seed %d: Finish of a finished schedule added %d instructions", seed, n-len(tr.Insts))
		}
		old := &Record{Workload: ast.Hash(c.Func).String(), Trace: tr.WithoutPostproc()}
		applied, err := old.Schedule(c.Func)
		if err != nil {
			t.Fatalf("seed %d: a record without the steps: %v", seed, err)
		}
		sameSchedule(t, applied, s)
	}
	if unrolled == 0 || widths == 0 {
		t.Errorf("%d unroll and %d vector-width steps in six candidates; want some of each", unrolled, widths)
	}
}

// sameSchedule fails unless got and want have the same function and the
// same trace.
func sameSchedule(t *testing.T, got, want *schedule.Schedule) {
	t.Helper()
	if ast.Hash(got.Func()) != ast.Hash(want.Func()) {
		t.Fatalf("another function:\n%s\nwant\n%s", ast.Print(got.Func()), ast.Print(want.Func()))
	}
	g, _ := json.Marshal(got.Trace())
	w, _ := json.Marshal(want.Trace())
	if string(g) != string(w) {
		t.Fatalf("another trace:\n%s\nwant\n%s", got.Trace(), want.Trace())
	}
}

// TestMutantFinishedAnew: a mutant replays its parent's decisions up to
// the post-processing, one changed, and is finished anew: its trace
// replays to its function, and its post-processing is what Finish makes
// of the function before it (not the parent's steps).
func TestMutantFinishedAnew(t *testing.T) {
	c := workload.Matmul(64, 64, 64)
	task := &Task{Name: c.Name, Func: c.Func, Target: "fake", Space: &Space{Rules: DefaultRules(), Target: Target{VectorLanes: 16, Threads: 2}}}
	mutants := 0
	for seed := uint64(1); seed <= 2; seed++ {
		parent := sample(task, seed)
		if parent.c == nil {
			t.Fatalf("seed %d: %+v", seed, parent)
		}
		rng := rand.New(rand.NewPCG(seed, 0))
		for range 3 {
			m := mutate(task, parent.c, rng)
			if m.rejected != nil {
				t.Fatalf("seed %d: %v\n%s", seed, m.rejected, m.rejected.Trace)
			}
			if m.c == nil {
				continue
			}
			mutants++
			tr := m.c.Sched.Trace()
			again, err := schedule.Replay(c.Func, tr, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameSchedule(t, again, m.c.Sched)
			fresh, err := schedule.Replay(c.Func, tr.WithoutPostproc(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := Finish(fresh); err != nil {
				t.Fatal(err)
			}
			sameSchedule(t, fresh, m.c.Sched)
		}
	}
	if mutants == 0 {
		t.Fatal("no mutant made")
	}
}

// internalRule is a rule that samples a value among 1 to 16, and whose
// primitive loom's own checks reject when the value is even: a stand-in
// for a validator rejection.
type internalRule struct{}

func (internalRule) Name() string { return "internal" }

func (internalRule) Apply(s *schedule.Schedule, b schedule.Block, _ Target) error {
	choices := make([]int64, 16)
	for i := range choices {
		choices[i] = int64(i + 1)
	}
	v, err := sampleAmong(s, choices)
	if err != nil {
		return err
	}
	if v.Int()%2 == 0 {
		return &schedule.Error{Primitive: "split", Reason: "internal error: the translation validator rejects the result (a stand-in); the transformed function is:\nfunc ...", Kind: schedule.ErrInternal}
	}
	return nil
}

// TestTuneRecordsInternal: a candidate that loom's own checks reject is
// neither dropped nor taken for a refusal: it is a failed trial, recorded
// with the reason (its first line) and its trace, and counted in
// Result.Internal.
func TestTuneRecordsInternal(t *testing.T) {
	task := newTask()
	task.Space.Rules = append([]Rule{internalRule{}}, task.Space.Rules...)
	db, err := OpenDatabase(filepath.Join(t.TempDir(), "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Tune(context.Background(), task, fakeBuilder{}, fakeRunner{}, Options{Trials: 8, Seed: 1, Population: 8, Batch: 4, DB: db, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 8 || len(res.Internal) == 0 || res.Best == nil {
		t.Fatalf("%d records, %d internal, best %v; want 8 trials, some rejected, some measured", len(res.Records), len(res.Internal), res.Best)
	}
	for _, r := range res.Internal {
		if r.OK() || r.Error != "internal: rule internal on block C: schedule: split: internal error: the translation validator rejects the result (a stand-in); the transformed function is:" || r.Trace == nil || len(r.Trace.Insts) == 0 {
			t.Errorf("trial %d recorded as %q, trace %v", r.Trial, r.Error, r.Trace)
		}
	}
	recs, _, err := db.Load()
	internal := 0
	for _, r := range recs {
		if strings.HasPrefix(r.Error, "internal: ") {
			internal++
		}
	}
	if err != nil || len(recs) != 8 || internal != len(res.Internal) {
		t.Errorf("the database holds %d records, %d internal (%v)", len(recs), internal, err)
	}
}
