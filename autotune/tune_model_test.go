package autotune

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

// scaledRunner is fakeRunner with each task's times multiplied by its
// factor: a model whose kernels differ in size. noise, when set, spreads
// each candidate's samples by that share (a busy machine).
type scaledRunner struct {
	scale map[string]float64
	noise float64
}

func (r scaledRunner) Run(ctx context.Context, task *Task, cands []*Candidate, builds []BuildResult) []RunResult {
	out := fakeRunner{}.Run(ctx, task, cands, builds)
	for i := range out {
		for k := range out[i].Seconds {
			out[i].Seconds[k] *= r.scale[task.Name] * 1e-3
			if r.noise > 0 {
				out[i].Seconds[k] *= 1 + r.noise*float64(k%3-1)
			}
		}
	}
	return out
}

func matmulTask(m int) *Task {
	c := workload.Matmul(m, 64, 64)
	rules := []Rule{MultiLevelTiling{Structure: "SSRSRS", MaxInnermost: 64}}
	return &Task{Name: c.Name, Func: c.Func, Target: "fake", Space: &Space{Rules: rules, Target: Target{VectorLanes: 8, Threads: 2}}}
}

// TestDistinctTasks: kernels of the same function at the same sizes are
// one task, weighted by their count, in the order they first appear, its
// function the canonical form (TestCanonicalRecordsServeEveryLayer has
// kernels that differ in their names).
func TestDistinctTasks(t *testing.T) {
	a, b := matmulTask(64), matmulTask(32)
	got := DistinctTasks([]*Task{a, b, matmulTask(64), matmulTask(64)})
	same := func(m ModelTask, t *Task) bool {
		c, _ := ast.Canonical(t.Func)
		return m.Task.Name == t.Name && ast.Equal(m.Task.Func, c) && m.Task.Space == t.Space
	}
	if len(got) != 2 || !same(got[0], a) || got[0].Weight != 3 || !same(got[1], b) || got[1].Weight != 1 {
		t.Fatalf("DistinctTasks: %+v, want matmul 64 x3 then matmul 32 x1", got)
	}
	if !slices.Equal(got[0].Members, []int{0, 2, 3}) || !slices.Equal(got[1].Members, []int{1}) {
		t.Errorf("members %v and %v, want [0 2 3] and [1]", got[0].Members, got[1].Members)
	}
	c := matmulTask(64)
	c.Target = "other"
	if got := DistinctTasks([]*Task{a, c}); len(got) != 2 {
		t.Errorf("one function on two targets: %d tasks, want 2", len(got))
	}
}

// TestTuneModelSpendsWhereItPays: a heavy task (ten times the time, run
// four times by the model) and a light one. After every task's first
// round, rounds go where the expected cut of the model's time is largest:
// the heavy task gets most of the trials; the estimate reported after
// each round never rises once both are measured; every record is in the
// database.
func TestTuneModelSpendsWhereItPays(t *testing.T) {
	heavy, light := matmulTask(64), matmulTask(32)
	dir := t.TempDir()
	db, err := OpenDatabase(filepath.Join(dir, "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tasks := []ModelTask{{Task: light, Weight: 1}, {Task: heavy, Weight: 4}}
	runner := scaledRunner{scale: map[string]float64{heavy.Name: 10, light.Name: 1}}
	var rounds []ModelProgress
	res, err := TuneModel(context.Background(), tasks, fakeBuilder{}, runner, ModelOptions{
		Options: Options{Trials: 40, Seed: 5, Population: 8, Batch: 8, Mutants: 8, DB: db, Version: "test"},
		OnRound: func(p ModelProgress) { rounds = append(rounds, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Trials != 40 {
		t.Errorf("%d trials, want 40", res.Trials)
	}
	if len(rounds) != res.Rounds || res.Rounds < 3 {
		t.Fatalf("%d progress reports for %d rounds", len(rounds), res.Rounds)
	}
	hv, lt := res.Tasks[1], res.Tasks[0]
	if hv.Trials <= lt.Trials || hv.Trials < 24 {
		t.Errorf("the heavy task had %d trials, the light one %d: want most for the heavy one", hv.Trials, lt.Trials)
	}
	last := math.Inf(1)
	for i, p := range rounds {
		if p.Measured < p.Tasks {
			continue
		}
		if p.Estimate > last*(1+1e-12) {
			t.Errorf("round %d: estimate %g rose from %g", i+1, p.Estimate, last)
		}
		last = p.Estimate
		if p.Default < p.Estimate {
			t.Errorf("round %d: the default schedules' time %g is below the tuned %g", i+1, p.Default, p.Estimate)
		}
	}
	want := 4*hv.Best.Median + lt.Best.Median
	if math.Abs(res.Estimate-want) > 1e-12*want {
		t.Errorf("estimate %g, want 4 x %g + %g", res.Estimate, hv.Best.Median, lt.Best.Median)
	}
	recs, _, err := db.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 40 {
		t.Errorf("the database holds %d records, want 40", len(recs))
	}
}

// TestTuneModelResumes: a run of 16 trials, stopped, then the same tasks
// with a limit of 32: the second run takes up the state (16 spent), runs
// 16 more, and measures no schedule the first one measured; its model
// starts from the saved one.
func TestTuneModelResumes(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDatabase(filepath.Join(dir, "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := matmulTask(64), matmulTask(32)
	tasks := []ModelTask{{Task: a, Weight: 2}, {Task: b, Weight: 1}}
	runner := scaledRunner{scale: map[string]float64{a.Name: 3, b.Name: 1}}
	opts := ModelOptions{
		Options: Options{Seed: 9, Population: 8, Batch: 8, Mutants: 8, DB: db, Version: "test"},
		State:   filepath.Join(dir, "state.json"), ModelFile: filepath.Join(dir, "model.json"),
	}
	opts.Trials = 16
	first, err := TuneModel(context.Background(), tasks, fakeBuilder{}, runner, opts)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(opts.ModelFile)
	if err != nil {
		t.Fatal("no model saved:", err)
	}
	var saved struct{ Trained int }
	if err := json.Unmarshal(data, &saved); err != nil || saved.Trained == 0 {
		t.Fatalf("the saved model: %s (%v)", data, err)
	}
	opts.Trials = 32
	second, err := TuneModel(context.Background(), tasks, fakeBuilder{}, runner, opts)
	if err != nil {
		t.Fatal(err)
	}
	if second.Trials != 16 {
		t.Errorf("the resumed run measured %d trials, want 16 (32 less the 16 of the first)", second.Trials)
	}
	resumed := 0
	for _, tr := range second.Tasks {
		resumed += tr.Resumed
	}
	if resumed == 0 {
		t.Error("the resumed run started from no record of the first")
	}
	measured := map[string]bool{}
	for _, tr := range first.Tasks {
		for _, r := range tr.Result.Records {
			if r.OK() {
				measured[tr.Task.Name+r.Trace.String()] = true
			}
		}
	}
	for _, tr := range second.Tasks {
		for _, r := range tr.Result.Records {
			if measured[tr.Task.Name+r.Trace.String()] {
				t.Errorf("%s: trial %d measured again a schedule of the first run", tr.Task.Name, r.Trial)
			}
		}
		if prev := first.Tasks[0]; tr.Task == prev.Task && tr.Best.Median > prev.Best.Median {
			t.Errorf("%s: best %g after resuming, worse than the first run's %g", tr.Task.Name, tr.Best.Median, prev.Best.Median)
		}
	}
	// A third run with the same limit has nothing left to do.
	third, err := TuneModel(context.Background(), tasks, fakeBuilder{}, runner, opts)
	if err != nil {
		t.Fatal(err)
	}
	if third.Trials != 0 || third.Estimate != second.Estimate {
		t.Errorf("a run past its limit measured %d trials, estimate %g (want 0, %g)", third.Trials, third.Estimate, second.Estimate)
	}
}

// TestTuneModelBudget: a time budget stops the search (the confirmation
// included) and is continued, not restarted, by the next run: a spent
// budget leaves a run nothing to measure.
func TestTuneModelBudget(t *testing.T) {
	dir := t.TempDir()
	a := matmulTask(64)
	state := filepath.Join(dir, "state.json")
	st := map[string]modelState{modelKey([]ModelTask{{Task: a, Weight: 1}}): {Spent: 3600, Trials: 10, Rounds: 2}}
	data, _ := json.Marshal(st)
	if err := os.WriteFile(state, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := TuneModel(context.Background(), []ModelTask{{Task: a, Weight: 1}}, fakeBuilder{}, fakeRunner{}, ModelOptions{
		Options: Options{Seed: 1, Population: 8, Batch: 4, Version: "test", Confirm: 2},
		Budget:  time.Hour, State: state,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Trials != 0 || res.Spent < time.Hour {
		t.Errorf("a spent budget: %d trials, %v spent (want 0 trials, an hour)", res.Trials, res.Spent)
	}
}

// TestTuneModelBusy: samples that vary by a fifth make the result say
// the machine was too busy to trust; steady ones do not.
func TestTuneModelBusy(t *testing.T) {
	a := matmulTask(64)
	for _, noise := range []float64{0, 0.2} {
		res, err := TuneModel(context.Background(), []ModelTask{{Task: a, Weight: 1}}, fakeBuilder{}, scaledRunner{scale: map[string]float64{a.Name: 1}, noise: noise}, ModelOptions{
			Options: Options{Trials: 8, Seed: 1, Population: 8, Batch: 8, Version: "test"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Busy != (noise > 0) {
			t.Errorf("noise %g: busy %v (variation %.3f)", noise, res.Busy, res.Variation)
		}
	}
}

// TestTuneModelBadInput: no task, no limit, a weight below one and a
// damaged state file are errors, not panics.
func TestTuneModelBadInput(t *testing.T) {
	a := matmulTask(64)
	ctx := context.Background()
	if _, err := TuneModel(ctx, nil, fakeBuilder{}, fakeRunner{}, ModelOptions{Options: Options{Trials: 1}}); err == nil {
		t.Error("no task: no error")
	}
	if _, err := TuneModel(ctx, []ModelTask{{Task: a, Weight: 1}}, fakeBuilder{}, fakeRunner{}, ModelOptions{}); err == nil {
		t.Error("neither budget nor trials: no error")
	}
	if _, err := TuneModel(ctx, []ModelTask{{Task: a, Weight: 0}}, fakeBuilder{}, fakeRunner{}, ModelOptions{Options: Options{Trials: 1}}); err == nil {
		t.Error("weight 0: no error")
	}
	state := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(state, []byte("{not json"), 0o644)
	if _, err := TuneModel(ctx, []ModelTask{{Task: a, Weight: 1}}, fakeBuilder{}, fakeRunner{}, ModelOptions{Options: Options{Trials: 1}, State: state}); err == nil {
		t.Error("a damaged state file: no error")
	}
}

// TestTuneModelSequential: the baseline policy gives the tasks equal
// shares of the trials, one task after the other.
func TestTuneModelSequential(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDatabase(filepath.Join(dir, "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := matmulTask(64), matmulTask(32)
	runner := scaledRunner{scale: map[string]float64{a.Name: 10, b.Name: 1}}
	res, err := TuneModel(context.Background(), []ModelTask{{Task: b, Weight: 1}, {Task: a, Weight: 4}}, fakeBuilder{}, runner, ModelOptions{
		Options:    Options{Trials: 32, Seed: 2, Population: 8, Batch: 8, Mutants: 8, DB: db, Version: "test"},
		Sequential: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks[0].Trials != 16 || res.Tasks[1].Trials != 16 {
		t.Errorf("trials %d and %d, want 16 each", res.Tasks[0].Trials, res.Tasks[1].Trials)
	}
	recs, _, err := db.Load()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if want := map[bool]string{true: b.Name, false: a.Name}[i < 16]; r.Name != want {
			t.Fatalf("record %d is of %s, want %s: the tasks one after the other", i, r.Name, want)
		}
	}
}

// TestResumeOtherSizes: a search of a function at new sizes starts from
// the fastest records of the same function at other sizes, their tilings
// fitted to these, and measures them in its first round of search.
func TestResumeOtherSizes(t *testing.T) {
	f, err := ast.Parse(`func mm[M: int32](A: float32[M, 64], B: float32[64, 64], C: float32[M, 64]) {
  ScheduleBlock(root) {
    serial for (i, 0, M) {
      serial for (j, 0, 64) {
        serial for (k, 0, 64) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, M), vj = spatial(0, 64), vk = reduce(0, 64))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0f
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	task := func(m int64) *Task {
		rules := []Rule{MultiLevelTiling{Structure: "SSRSRS", MaxInnermost: 64}}
		return &Task{Name: "mm", Func: f, Sizes: map[string]int64{"M": m}, Target: "fake", Space: &Space{Rules: rules, Target: Target{VectorLanes: 8, Threads: 2}}}
	}
	db, err := OpenDatabase(filepath.Join(t.TempDir(), "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	opts := ModelOptions{Options: Options{Trials: 12, Seed: 4, Population: 8, Batch: 8, Mutants: 8, DB: db, Version: "test"}}
	if _, err := TuneModel(context.Background(), []ModelTask{{Task: task(64), Weight: 1}}, fakeBuilder{}, fakeRunner{}, opts); err != nil {
		t.Fatal(err)
	}
	recs, _, err := db.Load()
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSearcher(task(96), fakeBuilder{}, fakeRunner{}, opts.Options)
	if err != nil {
		t.Fatal(err)
	}
	if best := s.resume(recs); best != nil || s.resumed != 0 {
		t.Errorf("records at M=64 taken as records at M=96 (%d)", s.resumed)
	}
	if len(s.extra) == 0 {
		t.Fatal("no schedule of M=64 to try at M=96")
	}
	extra := map[string]bool{}
	for _, c := range s.extra {
		extra[c.Hash] = true
	}
	if err := s.probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.round(context.Background(), 1000); err != nil {
		t.Fatal(err)
	}
	tried := 0
	for h := range extra {
		if s.seen[h] {
			tried++
		}
	}
	if tried != len(extra) {
		t.Errorf("the first round measured %d of the %d schedules of other sizes", tried, len(extra))
	}
}
