package autotune

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// A model (a network, a graph of fused kernels) is tuned as a set of
// tasks, one per distinct kernel, each weighted by how many times one run
// of the model runs it. TuneModel gives its trials in rounds, each to the
// task whose next round it expects to cut the model's time most, the way
// Ansor's task scheduler does: the expected cut of task i is
//
//	w_i * (alpha * backward_i + (1 - alpha) * forward_i)
//
// where backward_i is how much its best time fell per trial over its
// last round (what tuning it paid lately) and forward_i its best time
// over the trials it has had (an optimistic guess: the first rounds of a
// search pay most). A task never tried comes first; a task whose space is
// exhausted gets no more rounds. One cost model learns from every
// measurement of every task, so what a round teaches about tilings of one
// kernel ranks the candidates of the next.

// ModelTask is one distinct kernel of a model and how many times one run
// of the model runs it.
type ModelTask struct {
	Task   *Task
	Weight int
	// Members are the positions, in the tasks DistinctTasks was given, of
	// the tasks this one stands for (Weight of them).
	Members []int
}

// DistinctTasks merges the tasks of one computation at the same sizes on
// the same target, in the order they first appear; a task's weight is
// how many of tasks it stands for. Tasks are compared by the structural
// hash of their functions' canonical forms (ast.Canonical), blind to
// names: a 12-layer transformer's layers, whose kernels are named after
// their layers, are one task each kernel, not twelve. A merged task's
// function is that canonical form (its name and sizes the first task's),
// so that its records serve every kernel it stands for: Record.Apply
// and the Database's lookups build them under each kernel's own names.
func DistinctTasks(tasks []*Task) []ModelTask {
	var out []ModelTask
	index := map[string]int{}
	for n, t := range tasks {
		k, canon := distinctKey(t)
		if i, ok := index[k]; ok {
			out[i].Weight++
			out[i].Members = append(out[i].Members, n)
			continue
		}
		index[k] = len(out)
		c := *t
		c.Func = canon
		out = append(out, ModelTask{Task: &c, Weight: 1, Members: []int{n}})
	}
	return out
}

// distinctKey tells tasks apart: the canonical form of the function (which
// it returns too) and sizes, bucket and target.
func distinctKey(t *Task) (string, *ast.Func) {
	canon, _ := ast.Canonical(t.Func)
	return ast.Hash(canon).String() + fmt.Sprint(sortedSizes(t.Sizes)) + "|" + bucketKey(t.Bucket) + "|" + t.Target, canon
}

// ModelOptions control TuneModel. Options are each task's search's
// (Trials aside, which counts the trials of all tasks together), with one
// Model for all of them.
type ModelOptions struct {
	Options
	// Budget is the tuning time, confirmations included (0: none; then
	// Trials must be set). A run resumed from State continues it.
	Budget time.Duration
	// State, when set, is a file that keeps how much of the budget and
	// trials runs of these tasks spent, rewritten after every round, so
	// that a run stopped at any moment (kill -9 included) and started
	// again continues where it was. Runs of other task sets keep their
	// own entries in it.
	State string
	// ModelFile, when set, is where the cost model is saved after every
	// round, and loaded from when the run starts (a warm start; without
	// the file the model is trained on the database's records, or is the
	// one loom ships).
	ModelFile string
	// OnRound is called after every round.
	OnRound func(ModelProgress)
	// Sequential tunes the tasks one after the other instead, each with
	// an equal share of the budget (or of the trials): the way a model
	// was tuned before the scheduler, kept to measure the scheduler
	// against.
	Sequential bool
}

// alpha weighs the backward-looking gain against the forward-looking one
// (Ansor's choice), and explore is the share of rounds given to a task
// drawn at random, so that a task whose gain looks small is still
// retried now and then.
const (
	alpha   = 0.2
	explore = 0.05
)

// ModelProgress reports a model's tuning after a round.
type ModelProgress struct {
	Round int
	// Task is the task the round went to, TaskBest its best time after it
	// (seconds; +Inf when none ran).
	Task     string
	TaskBest float64
	// Trials counts this run's trials (Failed of them failed), Spent the
	// tuning time of every run of these tasks, this one's included, and
	// Elapsed this run's.
	Trials, Failed int
	Spent, Elapsed time.Duration
	Budget         time.Duration
	TotalTrials    int // the trial limit, 0 when none
	// Estimate is the model's time as tuned so far (the sum over tasks of
	// weight x best time), Default its time with the default schedules;
	// a task not measured yet counts with neither. Measured counts the
	// tasks that have a time.
	Estimate, Default float64
	Measured, Tasks   int
	// Confirming: the search is over, the leaders are measured again.
	Confirming bool
}

// ModelResult is the outcome of TuneModel.
type ModelResult struct {
	Tasks []TaskResult // in the order of the tasks given
	// Estimate and Default are the model's time tuned and with the
	// default schedules (confirmed figures where the leaders were
	// measured again), over the tasks that ran.
	Estimate, Default float64
	Rounds, Trials    int
	Spent             time.Duration // by every run of these tasks
	// Variation is the median over the tasks of their best record's
	// coefficient of variation (standard deviation over mean of its
	// samples); Busy says it passed BusyVariation: the machine had other
	// work, and the times are not to be trusted to better than that.
	Variation float64
	Busy      bool
}

// BusyVariation is the coefficient of variation of repeated timings above
// which ModelResult.Busy says the machine was too busy to trust.
const BusyVariation = 0.1

// TaskResult is what tuning one task of a model found.
type TaskResult struct {
	ModelTask
	// Result is this run's search; Best the fastest record of the task,
	// from this run or an earlier one (nil when none ran); Default the
	// default schedule's record, when measured in this run.
	Result  *Result
	Best    *Record
	Default *Record
	// Rounds and Trials this run gave the task; Resumed is how many
	// records of earlier runs at these sizes it started from.
	Rounds, Trials, Resumed int
}

// modelState is what State keeps of a run, per set of tasks.
type modelState struct {
	Spent   float64   `json:"spent_seconds"`
	Trials  int       `json:"trials"`
	Rounds  int       `json:"rounds"`
	Updated time.Time `json:"updated"`
}

// TuneModel tunes tasks together within opts.Budget (or opts.Trials): in
// rounds of opts.Batch trials, each to the task it expects to cut the
// model's time most (see the comment at the top of this file), every
// record appended to opts.DB, one cost model fed by every measurement.
// Each task's search starts from the records opts.DB has of it at its
// sizes (a resumed run measures none of them again) and tries first the
// fastest schedules of the same function at other sizes. At the end each
// task's leaders are measured again (opts.Confirm). ctx stops it;
// what was measured is kept.
func TuneModel(ctx context.Context, tasks []ModelTask, b Builder, r Runner, opts ModelOptions) (*ModelResult, error) {
	if len(tasks) == 0 {
		return nil, errors.New("autotune: no task to tune")
	}
	if opts.Budget <= 0 && opts.Trials <= 0 {
		return nil, errors.New("autotune: TuneModel needs a budget or a number of trials")
	}
	for _, t := range tasks {
		if t.Weight < 1 {
			return nil, fmt.Errorf("autotune: task %s has weight %d (want at least 1)", t.Task.Name, t.Weight)
		}
	}
	total := opts.Trials
	opts.Trials = math.MaxInt // each search's own limit: the scheduler's is total
	if opts.Model == nil {
		m, err := startModel(opts)
		if err != nil {
			return nil, err
		}
		opts.Model = m
	}
	key := modelKey(tasks)
	state, err := loadState(opts.State, key)
	if err != nil {
		return nil, err
	}
	var recs []*Record
	if opts.DB != nil {
		if recs, _, err = opts.DB.Load(); err != nil {
			return nil, err
		}
	}
	type entry struct {
		ModelTask
		s        *searcher
		resumed  *Record // the fastest record of earlier runs, at these sizes
		rounds   int
		lastGain float64 // seconds of best time per trial, over its last round
		ref      float64 // the first time measured: scores are relative to it
	}
	es := make([]*entry, len(tasks))
	for i, t := range tasks {
		o := opts.Options
		o.Seed = opts.Seed + uint64(i)
		o.Progress = nil
		s, err := newSearcher(t.Task, b, r, o)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.Task.Name, err)
		}
		e := &entry{ModelTask: t, s: s}
		e.resumed = s.resume(recs)
		if e.resumed != nil {
			e.ref = e.resumed.Median
		}
		s.score = func(median float64) float64 {
			if e.ref == 0 {
				e.ref = median
			}
			return math.Log(e.ref / median)
		}
		es[i] = e
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x7363686564))
	start := time.Now()
	spent := func() time.Duration { return time.Duration(state.Spent*float64(time.Second)) + time.Since(start) }
	trials, failed := 0, 0
	bestOf := func(e *entry) float64 {
		b := e.s.best
		if e.resumed != nil {
			b = math.Min(b, e.resumed.Median)
		}
		return b
	}
	estimate := func() (est, def float64, measured int) {
		for _, e := range es {
			b := bestOf(e)
			if math.IsInf(b, 1) {
				continue
			}
			measured++
			w := float64(e.Weight)
			est += w * b
			if d := e.s.res.Default; d.OK() {
				def += w * d.Median
			} else {
				def += w * b // no default measured in this run: no gain claimed
			}
		}
		return est, def, measured
	}
	progress := func(e *entry, confirming bool) {
		if opts.OnRound == nil {
			return
		}
		est, def, measured := estimate()
		tb := math.Inf(1)
		name := ""
		if e != nil {
			tb, name = bestOf(e), e.Task.Name
		}
		opts.OnRound(ModelProgress{
			Round: state.Rounds, Task: name, TaskBest: tb, Trials: trials, Failed: failed,
			Spent: spent(), Elapsed: time.Since(start), Budget: opts.Budget, TotalTrials: total,
			Estimate: est, Default: def, Measured: measured, Tasks: len(es), Confirming: confirming,
		})
	}
	// The confirmation at the end is part of the budget: the search
	// stops at 90% of it, and the tasks are confirmed in the order of
	// their share of the model's time while the budget lasts (a task
	// left unconfirmed keeps its search's figure, Record.Confirmed 0).
	searchBudget := opts.Budget
	if opts.Confirm > 0 {
		searchBudget = opts.Budget * 9 / 10
	}
	for ctx.Err() == nil {
		if opts.Budget > 0 && spent() >= searchBudget {
			break
		}
		if total > 0 && state.Trials >= total {
			break
		}
		var e *entry
		if opts.Sequential {
			e = sequentialTask(es, func(i int, e *entry) bool {
				if e.s.exhausted {
					return true
				}
				if opts.Budget > 0 {
					return spent() >= searchBudget*time.Duration(i+1)/time.Duration(len(es))
				}
				return len(e.s.res.Records) >= total*(i+1)/len(es)-total*i/len(es)
			})
		} else {
			e = pickTask(es, rng, func(e *entry) (untried bool, gain float64, done bool) {
				b := bestOf(e)
				if e.s.exhausted {
					return false, 0, true
				}
				if math.IsInf(b, 1) {
					return e.rounds == 0, 0, e.rounds > 0 && len(e.s.res.Records) >= 4*e.s.opts.Batch
				}
				n := max(len(e.s.res.Records)+countOf(e.resumed), 1)
				return false, float64(e.Weight) * (alpha*e.lastGain + (1-alpha)*b/float64(n)), false
			})
		}
		if e == nil {
			break // every task's space is exhausted
		}
		before, n0 := bestOf(e), len(e.s.res.Records)
		upto := math.MaxInt
		if total > 0 {
			upto = n0 + min(e.s.opts.Batch, total-state.Trials)
			if opts.Sequential {
				i := slices.Index(es, e)
				upto = min(upto, total*(i+1)/len(es)-total*i/len(es))
			}
		}
		// A task's first round measures its default schedule alone: what
		// it costs untuned, for every task before any is searched.
		step := func() error { return e.s.round(ctx, upto) }
		if e.rounds == 0 {
			step = func() error { return e.s.probe(ctx) }
		}
		if err := step(); err != nil {
			return nil, fmt.Errorf("task %s: %w", e.Task.Name, err)
		}
		n := len(e.s.res.Records) - n0
		e.rounds++
		trials += n
		for _, rec := range e.s.res.Records[n0:] {
			if !rec.OK() {
				failed++
			}
		}
		if after := bestOf(e); n > 0 && !math.IsInf(before, 1) {
			e.lastGain = (before - after) / float64(n)
		}
		state.Trials += n
		state.Rounds++
		if err := saveState(opts.State, key, state, spent()); err != nil {
			return nil, err
		}
		if err := saveModel(opts.ModelFile, opts.Model); err != nil {
			return nil, err
		}
		progress(e, false)
	}
	if opts.Confirm > 0 && ctx.Err() == nil {
		progress(nil, true)
		byShare := slices.Clone(es)
		sort.SliceStable(byShare, func(i, j int) bool {
			return float64(byShare[i].Weight)*bestOf(byShare[i]) > float64(byShare[j].Weight)*bestOf(byShare[j])
		})
		for _, e := range byShare {
			if ctx.Err() != nil || opts.Budget > 0 && spent() >= opts.Budget {
				break
			}
			if err := e.s.confirmLeaders(ctx); err != nil {
				return nil, fmt.Errorf("task %s: %w", e.Task.Name, err)
			}
		}
	}
	if err := saveState(opts.State, key, state, spent()); err != nil {
		return nil, err
	}
	out := &ModelResult{Rounds: state.Rounds, Trials: trials, Spent: spent()}
	var cvs []float64
	for _, e := range es {
		tr := TaskResult{ModelTask: e.ModelTask, Result: e.s.res, Default: e.s.res.Default, Rounds: e.rounds, Trials: len(e.s.res.Records), Resumed: e.s.resumed}
		tr.Best = e.s.res.Best
		if e.resumed != nil && (tr.Best == nil || e.resumed.Median < tr.Best.Median) {
			tr.Best = e.resumed
		}
		if tr.Best != nil {
			w := float64(e.Weight)
			out.Estimate += w * tr.Best.Median
			if tr.Default.OK() {
				out.Default += w * tr.Default.Median
			} else {
				out.Default += w * tr.Best.Median
			}
			if cv, ok := variation(tr.Best.Seconds); ok {
				cvs = append(cvs, cv)
			}
		}
		out.Tasks = append(out.Tasks, tr)
	}
	if len(cvs) > 0 {
		sort.Float64s(cvs)
		out.Variation = cvs[len(cvs)/2]
		out.Busy = out.Variation > BusyVariation
	}
	return out, ctx.Err()
}

// countOf is 1 for a record, 0 for none.
func countOf(r *Record) int {
	if r == nil {
		return 0
	}
	return 1
}

// pickTask chooses the task of the next round: a task never tried first
// (in order), else, but for a round in twenty drawn at random, the one of
// the largest expected gain; nil when every task is done.
func pickTask[E any](es []E, rng *rand.Rand, judge func(E) (untried bool, gain float64, done bool)) E {
	var zero E
	var open []E
	best, bestGain := -1, math.Inf(-1)
	for _, e := range es {
		untried, gain, done := judge(e)
		if done {
			continue
		}
		if untried {
			return e
		}
		if gain > bestGain {
			best, bestGain = len(open), gain
		}
		open = append(open, e)
	}
	if len(open) == 0 {
		return zero
	}
	if rng.Float64() < explore {
		return open[rng.IntN(len(open))]
	}
	return open[best]
}

// sequentialTask is the first task whose share is not used up (done
// says whether task i's is), nil when none is left.
func sequentialTask[E any](es []E, done func(int, E) bool) E {
	for i, e := range es {
		if !done(i, e) {
			return e
		}
	}
	var zero E
	return zero
}

// variation is the coefficient of variation of xs (false for fewer than
// two).
func variation(xs []float64) (float64, bool) {
	if len(xs) < 2 {
		return 0, false
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return math.Sqrt(v/float64(len(xs)-1)) / mean, mean > 0
}

// resume starts the search from the records of earlier runs: every
// schedule measured for the task at its sizes is known (never measured
// again), those that ran are parents to mutate, and the fastest of the
// same function at other sizes, their tilings fitted to these, are tried
// in the first round. It returns the fastest record at these sizes, as
// the database ranks them (a run's confirmed figures stand for its
// trials), nil when there is none.
func (s *searcher) resume(recs []*Record) *Record {
	if len(recs) == 0 {
		return nil
	}
	task := s.task
	hash := ast.Hash(task.Func).String()
	mine := func(r *Record) bool {
		return r.Workload == hash && r.Target == task.Target && bucketKey(r.Bucket) == bucketKey(task.Bucket) && sameSizes(r.Sizes, task.Sizes) && r.Trace != nil
	}
	var fastest *Record
	median := map[string]*Record{} // a trace's eligible record, the fastest
	for _, r := range eligible(recs, hash, task.Target) {
		if !mine(r) {
			continue
		}
		if k := r.Trace.String(); median[k] == nil || r.Median < median[k].Median {
			median[k] = r
		}
		if fastest == nil || r.Median < fastest.Median {
			fastest = r
		}
	}
	replayed := map[string]bool{}
	for _, r := range recs {
		if !mine(r) {
			continue
		}
		k := r.Trace.String()
		if replayed[k] {
			continue
		}
		replayed[k] = true
		sch, err := Replay(task.Func, r.Trace)
		if err != nil {
			continue // a record of another loom: measured again if sampled
		}
		c := candidate(task, sch)
		if s.seen[c.Hash] {
			continue
		}
		s.seen[c.Hash] = true
		s.resumed++
		if e := median[k]; e != nil {
			s.parents = append(s.parents, parent{c, e.Median})
			s.trialOf[c.Hash] = e
			s.best = math.Min(s.best, e.Median)
		}
	}
	if fastest != nil && s.res.Best == nil {
		s.res.Best = fastest
	}
	if fastest != nil {
		// The default schedule, when an earlier run measured it: the
		// model's time untuned is taken from its record.
		if d := decided(task); d.c != nil {
			if r := s.trialOf[d.c.Hash]; r != nil {
				s.res.Default, s.decidedCand, s.triedDefault = r, d.c, true
			}
		}
	}
	var others []*Record
	for _, r := range eligible(recs, hash, task.Target) {
		if r.Bucket == nil && task.Bucket == nil && !sameSizes(r.Sizes, task.Sizes) && r.Trace != nil {
			others = append(others, r)
		}
	}
	slices.SortStableFunc(others, func(a, b *Record) int { return cmp.Compare(a.Median, b.Median) })
	for _, r := range others {
		if len(s.extra) == resumeOthers {
			break
		}
		sch, err := Replay(task.Func, r.Trace, schedule.AdaptDecisions())
		if err != nil {
			continue
		}
		if c := candidate(task, sch); !s.seen[c.Hash] && !slices.ContainsFunc(s.extra, func(x *Candidate) bool { return x.Hash == c.Hash }) {
			s.extra = append(s.extra, c)
		}
	}
	return fastest
}

// resumeOthers is how many schedules of other sizes a resumed search
// tries in its first round.
const resumeOthers = 4

// modelKey names a set of tasks in State.
func modelKey(tasks []ModelTask) string {
	var keys []string
	for _, t := range tasks {
		k, _ := distinctKey(t.Task)
		keys = append(keys, fmt.Sprintf("%s*%d", k, t.Weight))
	}
	sort.Strings(keys)
	sum := sha256.Sum256([]byte(strings.Join(keys, ";")))
	return hex.EncodeToString(sum[:12])
}

// startModel is the model a run starts with: opts.ModelFile's when it
// exists, else one trained on the database's records of the tasks'
// target, else the one loom ships.
func startModel(opts ModelOptions) (Model, error) {
	if opts.ModelFile != "" {
		data, err := os.ReadFile(opts.ModelFile)
		switch {
		case err == nil:
			m := NewRidgeModel()
			if err := json.Unmarshal(data, m); err != nil {
				return nil, fmt.Errorf("autotune: the saved model %s: %w", opts.ModelFile, err)
			}
			return m, nil
		case !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
	}
	if opts.DB != nil {
		m, _, err := ModelFromDatabase(opts.DB, "")
		return m, err
	}
	return DefaultModel(), nil
}

// saveModel writes m to path (nothing when path is "" or m is not a
// RidgeModel), by a rename, so that a run killed while writing leaves
// the previous file.
func saveModel(path string, m Model) error {
	rm, ok := m.(*RidgeModel)
	if path == "" || !ok {
		return nil
	}
	data, err := json.Marshal(rm)
	if err != nil {
		return err
	}
	return writeAtomic(path, data)
}

// loadState reads the entry of key in the state file at path (a zero
// state when there is none).
func loadState(path, key string) (modelState, error) {
	if path == "" {
		return modelState{}, nil
	}
	all, err := readStates(path)
	return all[key], err
}

func readStates(path string) (map[string]modelState, error) {
	all := map[string]modelState{}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return all, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, fmt.Errorf("autotune: the run state %s: %w", path, err)
	}
	return all, nil
}

// saveState records st, with spent as its time, under key in the state
// file at path.
func saveState(path, key string, st modelState, spent time.Duration) error {
	if path == "" {
		return nil
	}
	all, err := readStates(path)
	if err != nil {
		return err
	}
	st.Spent, st.Updated = spent.Seconds(), time.Now().UTC()
	all[key] = st
	data, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(data, '\n'))
}

// writeAtomic replaces path's contents with data: written beside it,
// synced, renamed over it.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
