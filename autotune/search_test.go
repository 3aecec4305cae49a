package autotune

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// fakeRunner times a candidate by a synthetic cost of its tile
// decisions (best when every innermost tile is 8 and parallel work is
// split two ways), so the search is deterministic given its seed. Traces
// whose decisions sum to a multiple of 13 "crash", to exercise failures.
type fakeRunner struct{}

type fakeBuilder struct{}

func (fakeBuilder) Build(_ context.Context, _ *Task, cands []*Candidate) []BuildResult {
	return make([]BuildResult, len(cands))
}

func (fakeRunner) Run(_ context.Context, _ *Task, cands []*Candidate, _ []BuildResult) []RunResult {
	out := make([]RunResult, len(cands))
	for i, c := range cands {
		cost, sum := 1.0, int64(0)
		for _, in := range c.Sched.Trace().Insts {
			if in.Kind != "sample_perfect_tile" {
				continue
			}
			inner := in.Decision[len(in.Decision)-1]
			cost += math.Abs(math.Log2(float64(inner)) - 3)
			cost += 0.25 * math.Abs(math.Log2(float64(in.Decision[0]))-1)
			for _, d := range in.Decision {
				sum += d
			}
		}
		if sum%13 == 0 {
			out[i].Err = errors.New("crashed: signal SIGSEGV")
			continue
		}
		out[i].Seconds = []float64{cost, cost * 1.01, cost * 0.99}
	}
	return out
}

// newTask is a matmul whose space is its tiling alone: the fake runner
// only looks at tile decisions, and fewer primitives make candidates
// cheaper.
func newTask() *Task {
	c := workload.Matmul(64, 64, 64)
	rules := []Rule{MultiLevelTiling{Structure: "SSRSRS", MaxInnermost: 64}}
	return &Task{Name: c.Name, Func: c.Func, Target: "fake", Space: &Space{Rules: rules, Target: Target{VectorLanes: 8, Threads: 2}}}
}

// TestTuneDeterministic: with a fixed seed and a deterministic runner,
// two searches measure the same candidates in the same order; the curve
// never rises; failures are recorded and never win; the database holds
// every record.
func TestTuneDeterministic(t *testing.T) {
	trials := 40
	if testing.Short() {
		trials = 24
	}
	run := func(db *Database) *Result {
		res, err := Tune(context.Background(), newTask(), fakeBuilder{}, fakeRunner{}, Options{Trials: trials, Seed: 7, Population: 16, Batch: 8, Mutants: 16, DB: db, Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	db, err := OpenDatabase(filepath.Join(t.TempDir(), "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := run(db), run(nil)
	if len(a.Records) != trials || len(b.Records) != trials {
		t.Fatalf("%d and %d records, want %d", len(a.Records), len(b.Records), trials)
	}
	for i := range a.Records {
		ja, _ := json.Marshal(a.Records[i].Trace)
		jb, _ := json.Marshal(b.Records[i].Trace)
		if string(ja) != string(jb) || a.Records[i].Median != b.Records[i].Median {
			t.Fatalf("record %d differs between two runs with the same seed", i)
		}
	}
	failures := 0
	for i := 1; i < len(a.Curve); i++ {
		if a.Curve[i] > a.Curve[i-1] {
			t.Fatalf("the best-so-far curve rises at trial %d", i)
		}
	}
	for _, r := range a.Records {
		if !r.OK() {
			failures++
			if a.Best == r {
				t.Fatal("a failed record is the best")
			}
		}
	}
	if failures == 0 {
		t.Error("the fake runner's crashes never happened; the test does not exercise failures")
	}
	// The search improves on the first round.
	if a.Best == nil || a.Best.Median >= a.Curve[7] {
		t.Errorf("no improvement after the first round: best %v, first round %v (curve %v)", a.Best.Median, a.Curve[7], a.Curve)
	}
	recs, skipped, err := db.Load()
	if err != nil || skipped != 0 || len(recs) != trials {
		t.Fatalf("database: %d records, %d skipped, %v", len(recs), skipped, err)
	}
	if best, _ := db.Best(a.Best.Workload, nil, "fake"); best == nil || best.Median != a.Best.Median {
		t.Errorf("database best %v, search best %v", best, a.Best)
	}
}

// luckyRunner is fakeRunner on a busy machine: a candidate's first
// measurement comes out faster than it is by a factor of its own (0.3 to
// 1), every later one at its true cost.
type luckyRunner struct{ seen map[string]bool }

func (r luckyRunner) Run(ctx context.Context, task *Task, cands []*Candidate, builds []BuildResult) []RunResult {
	out := fakeRunner{}.Run(ctx, task, cands, builds)
	for i, c := range cands {
		if r.seen[c.Hash] || out[i].Err != nil {
			continue
		}
		r.seen[c.Hash] = true
		h := fnv.New32a()
		h.Write([]byte(c.Hash))
		luck := 0.3 + 0.7*float64(h.Sum32()%1000)/1000
		for j := range out[i].Seconds {
			out[i].Seconds[j] *= luck
		}
	}
	return out
}

// TestTuneConfirm: with Options.Confirm the leaders are measured again
// after the search, and the best is the fastest re-measured one, not the
// luckiest first measurement; the database prefers it too, and the
// re-measurements are not trials.
func TestTuneConfirm(t *testing.T) {
	db, err := OpenDatabase(filepath.Join(t.TempDir(), "db.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const trials, leaders = 24, 6
	task := newTask()
	res, err := Tune(context.Background(), task, fakeBuilder{}, luckyRunner{seen: map[string]bool{}}, Options{Trials: trials, Seed: 3, Population: 16, Batch: 8, Mutants: 16, DB: db, Version: "test", Confirm: leaders})
	if err != nil {
		t.Fatal(err)
	}
	// The default schedule is confirmed beside the leaders when it is
	// not one of them.
	confirmed := leaders
	if len(res.Confirmed) == leaders+1 && slices.Contains(res.Confirmed, res.Default) {
		confirmed++
	}
	if len(res.Records) != trials || len(res.Confirmed) != confirmed {
		t.Fatalf("%d trials and %d confirmed, want %d and %d", len(res.Records), len(res.Confirmed), trials, confirmed)
	}
	luckiest := res.Records[0]
	for _, r := range res.Records {
		if r.OK() && (!luckiest.OK() || r.Median < luckiest.Median) {
			luckiest = r
		}
	}
	for _, r := range res.Confirmed {
		if r.Confirmed != 2 {
			t.Errorf("trial %d re-measured in %d rounds, want 2", r.Trial, r.Confirmed)
		}
		// Measured again, a leader shows its true cost: no luck twice.
		s, err := schedule.Replay(task.Func, r.Trace, nil)
		if err != nil {
			t.Fatal(err)
		}
		cost, _ := Summarize(fakeRunner{}.Run(context.Background(), task, []*Candidate{{Sched: s}}, nil)[0].Seconds)
		if r.Median != cost || r.Median < res.Best.Median {
			t.Errorf("trial %d re-measured at %g, true cost %g, best %g", r.Trial, r.Median, cost, res.Best.Median)
		}
	}
	if res.Best != res.Confirmed[0] || res.Best.Median <= luckiest.Median {
		t.Errorf("best: trial %d at %g; the luckiest first measurement: trial %d at %g", res.Best.Trial, res.Best.Median, luckiest.Trial, luckiest.Median)
	}
	if best, _ := db.Best(res.Best.Workload, nil, "fake"); best == nil || best.Trial != res.Best.Trial || best.Confirmed == 0 {
		t.Errorf("the database's best: %+v, want the confirmed trial %d", best, res.Best.Trial)
	}
	recs, _, _ := db.Load()
	if len(recs) != trials+confirmed {
		t.Errorf("the database holds %d records, want %d trials and %d confirmations", len(recs), trials, confirmed)
	}
}

// TestTuneCancel: a cancelled search stops and keeps what it measured.
func TestTuneCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n, measured := 0, 0
	res, err := Tune(ctx, newTask(), fakeBuilder{}, fakeRunner{}, Options{Trials: 1000, Seed: 1, Population: 8, Batch: 4, Progress: func(p Progress) {
		if n++; n == 2 {
			measured = p.Trials
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || measured == 0 || len(res.Records) != measured {
		t.Fatalf("err %v, %d records; want context.Canceled after the %d measured when it was cancelled", err, len(res.Records), measured)
	}
}

// TestRunIDsDiffer: two tunes with the same seed, started at once, are two
// runs: their records do not share a run id (a plot would merge them).
func TestRunIDsDiffer(t *testing.T) {
	opts := Options{Trials: 2, Population: 2, Batch: 2, Seed: 7}
	a, err := Tune(context.Background(), newTask(), fakeBuilder{}, fakeRunner{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Tune(context.Background(), newTask(), fakeBuilder{}, fakeRunner{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if a.Records[0].Run == b.Records[0].Run {
		t.Errorf("both runs are %q", a.Records[0].Run)
	}
}

// TestTaskCheck: a task that cannot be measured is refused before the
// search, saying why.
func TestTaskCheck(t *testing.T) {
	c := workload.Chain(2, 2, 16)
	for _, tc := range []struct {
		sizes map[string]int64
		want  string
	}{
		{map[string]int64{"S1": 2}, "no value for size S2"},
		{map[string]int64{"S1": 2, "S2": -1}, "size S2 = -1"},
		{map[string]int64{"S1": 2, "S2": 2, "Q": 1}, "Q is not a symbolic size"},
		{map[string]int64{"S1": 1 << 30, "S2": 1 << 30}, "larger than"},
	} {
		task := &Task{Name: "chain", Func: c.Func, Sizes: tc.sizes, Target: "fake", Space: &Space{Rules: DefaultRules(), Target: Target{VectorLanes: 8, Threads: 1}}}
		_, err := Tune(context.Background(), task, fakeBuilder{}, fakeRunner{}, Options{Trials: 1})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sizes %v: %v, want %q", tc.sizes, err, tc.want)
		}
	}
}

// TestTuneConfirmMoreThanMeasured: a Confirm of 2^31-1 (loom tune
// -confirm 2147483647) re-measures the candidates there are, without
// making room for 2^31 of them (16 GiB).
func TestTuneConfirmMoreThanMeasured(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := Tune(context.Background(), newTask(), fakeBuilder{}, fakeRunner{}, Options{Trials: 4, Seed: 3, Population: 4, Batch: 4, Version: "test", Confirm: math.MaxInt32})
	runtime.ReadMemStats(&after)
	if err != nil || res.Best == nil || len(res.Confirmed) == 0 {
		t.Fatalf("%v; %+v", err, res)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<30 {
		t.Errorf("allocated %d bytes to confirm %d candidates", n, len(res.Confirmed))
	}
}

// cancelRunner is fakeRunner interrupted (Ctrl-C) in its second batch,
// after its first candidate: the others come back with the context's
// error, as a ProcessRunner's killed workers do.
type cancelRunner struct {
	cancel  context.CancelFunc
	batches *int
}

func (r cancelRunner) Run(ctx context.Context, task *Task, cands []*Candidate, builds []BuildResult) []RunResult {
	out := fakeRunner{}.Run(ctx, task, cands, builds)
	if *r.batches++; *r.batches == 2 {
		r.cancel()
		for i := 1; i < len(out); i++ {
			out[i] = RunResult{Err: ctx.Err()}
		}
	}
	return out
}

// TestTuneInterruptRecordsNothingUnfinished: the candidates an interrupt
// cut short are not recorded as failed trials; those measured before it
// are.
func TestTuneInterruptRecordsNothingUnfinished(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	batches := 0
	res, err := Tune(ctx, newTask(), fakeBuilder{}, cancelRunner{cancel, &batches}, Options{Trials: 100, Seed: 1, Population: 8, Batch: 4, Version: "test"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	for _, r := range res.Records {
		if strings.Contains(r.Error, "canceled") {
			t.Errorf("trial %d recorded as failed by the interrupt: %s", r.Trial, r.Error)
		}
	}
	if len(res.Records) != 4+1 {
		t.Errorf("%d records, want the first batch's 4 and the one finished before the interrupt", len(res.Records))
	}
}
