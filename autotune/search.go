package autotune

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/cacheflush"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/sysmem"
	"github.com/loom-go/loom/schedule"
)

// Task is one function to tune.
type Task struct {
	Name  string
	Func  *ast.Func
	Sizes map[string]int64 // values of its symbolic sizes for measurement
	// Shape describes the sizes for people ("512x512x512"), kept in the
	// records; optional.
	Shape  string
	Target string // the target's key, as records store it
	Space  *Space
	// Bucket, when set, is the range of each symbolic size (lo and hi,
	// inclusive) the task's schedule is for: a bucket of sizes, whose
	// candidates are measured at every binding of SizeSets (Sizes
	// among them: the one the features are taken at), their time the
	// geometric mean of those medians. Records keep the bucket.
	Bucket   map[string][2]int64
	SizeSets []map[string]int64
	// Cold are the positions among Func's parameters of the buffers a
	// model's call finds out of the caches when the kernel runs: its
	// weights, each read once per call, hundreds of megabytes in all.
	// Every timed run of a candidate starts with them flushed from the
	// caches (on x86-64; see package internal/cacheflush), the flush
	// outside the time: timed again and again with its weights cached,
	// a kernel measures faster than it runs in the model (a 12-layer
	// BERT's feed-forward products at one thread, 20%), and the schedule
	// that wins cached need not win there. Records of such a task are
	// filed under ColdTarget of its target (the caller sets Target so),
	// never compared with cached times.
	Cold []int
}

// SetCold makes the task time its runs with the weights at positions
// weights out of the caches (Task.Cold) and file its records under
// ColdTarget of its target, where this machine can flush them (x86-64);
// elsewhere, or without weights, the task stays as it is.
func (t *Task) SetCold(weights []int) {
	if len(weights) == 0 || !cacheflush.Supported {
		return
	}
	t.Cold = slices.Clone(weights)
	t.Target = ColdTarget(t.Target)
}

// ColdTarget is the target key of the records of tasks timed with their
// weights out of the caches (Task.Cold): key with "/cold-weights".
func ColdTarget(key string) string { return key + "/cold-weights" }

// Check returns an error when the task cannot be measured: a function
// that does not verify, a symbolic size without a value (or a value for
// none), a negative size, a buffer larger than the interpreter's limit, or
// arguments (with the reference's copy) larger than the memory available.
func (t *Task) Check() error {
	if t.Func == nil {
		return fmt.Errorf("task %s has no function", t.Name)
	}
	for i, set := range t.SizeSets {
		sub := *t
		sub.Sizes, sub.SizeSets = set, nil
		if err := sub.Check(); err != nil {
			return fmt.Errorf("size set %d: %w", i, err)
		}
		for name, v := range set {
			if r, ok := t.Bucket[name]; ok && (v < r[0] || v > r[1]) {
				return fmt.Errorf("task %s: size set %d has %s = %d, outside its bucket %d..%d", t.Name, i, name, v, r[0], r[1])
			}
		}
	}
	for name, r := range t.Bucket {
		if t.Func.Size(name) == nil {
			return fmt.Errorf("task %s: bucket of %s, not a symbolic size of %s", t.Name, name, t.Func.Name)
		}
		if r[0] < 1 || r[1] < r[0] {
			return fmt.Errorf("task %s: bucket %s = %d..%d: want 1 <= lo <= hi", t.Name, name, r[0], r[1])
		}
	}
	if err := ast.Verify(t.Func); err != nil {
		return fmt.Errorf("task %s: %v", t.Name, err)
	}
	for name, v := range t.Sizes {
		if t.Func.Size(name) == nil {
			return fmt.Errorf("task %s: %s is not a symbolic size of %s", t.Name, name, t.Func.Name)
		}
		if v <= 0 || v > math.MaxInt32 {
			return fmt.Errorf("task %s: size %s = %d: want 1 to %d", t.Name, name, v, math.MaxInt32)
		}
	}
	for _, s := range t.Func.Sizes {
		if _, ok := t.Sizes[s.Name]; !ok {
			return fmt.Errorf("task %s: no value for size %s", t.Name, s.Name)
		}
	}
	for _, p := range t.Func.Params {
		if _, err := ast.DataSize(p, t.Sizes); err != nil {
			return fmt.Errorf("task %s: %v", t.Name, err)
		}
	}
	// The arguments, the reference's outputs and a candidate's run.
	return sysmem.Check("task "+t.Name, 3*check.Bytes(t.Func, t.Sizes))
}

// RunAtSizes measures built candidates at the task's sizes, or, for a
// bucket's task (SizeSets), at each of its size sets: a candidate's
// seconds are then, sample by sample (each set's sorted), the geometric
// mean over the sets, and a failure at any set fails it, naming the
// sizes.
func RunAtSizes(ctx context.Context, r Runner, task *Task, cands []*Candidate, builds []BuildResult) []RunResult {
	if len(task.SizeSets) == 0 {
		return r.Run(ctx, task, cands, builds)
	}
	out := make([]RunResult, len(cands))
	logs := make([][]float64, len(cands))
	for k, set := range task.SizeSets {
		sub := *task
		sub.Sizes, sub.SizeSets = set, nil
		runs := r.Run(ctx, &sub, cands, builds)
		for i, run := range runs {
			out[i].Job = joinJobs(out[i].Job, run.Job)
			if run.Machine != "" {
				out[i].Machine = run.Machine
			}
			switch {
			case out[i].Err != nil:
			case run.Err != nil:
				out[i].Err = fmt.Errorf("at %v: %w", sortedSizes(set), run.Err)
			default:
				secs := slices.Sorted(slices.Values(run.Seconds))
				if k == 0 {
					logs[i] = make([]float64, len(secs))
				}
				logs[i] = logs[i][:min(len(logs[i]), len(secs))]
				for j := range logs[i] {
					logs[i][j] += math.Log(secs[j]) / float64(len(task.SizeSets))
				}
			}
		}
	}
	for i := range out {
		if out[i].Err == nil && len(logs[i]) == 0 {
			out[i].Err = fmt.Errorf("no times measured")
		}
		if out[i].Err == nil {
			for _, l := range logs[i] {
				out[i].Seconds = append(out[i].Seconds, math.Exp(l))
			}
		}
	}
	return out
}

// joinJobs lists the jobs a record stands for, comma separated.
func joinJobs(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "," + b
}

// record starts the record of one trial of the task.
func (t *Task) record(trace *schedule.Trace, opts Options, run string, trial int) *Record {
	return &Record{
		Workload: ast.Hash(t.Func).String(), Name: t.Name, Sizes: maps.Clone(t.Sizes), Shape: t.Shape,
		Target: t.Target, Machine: hostname(), Trace: trace, Bucket: maps.Clone(t.Bucket),
		Version: opts.Version, Time: time.Now().UTC(), Run: run, Trial: trial,
	}
}

// hostname names this machine in records, "" when it cannot be told.
func hostname() string {
	h, _ := os.Hostname()
	return h
}

// Candidate is one schedule of a task.
type Candidate struct {
	Sched    *schedule.Schedule // sampled and finished (see Finish)
	Func     *ast.Func          // what is built: Sched.Func()
	Hash     string             // ast.Hash of Func, for de-duplication
	Features []float64
}

// Builder builds candidates (in parallel, as it sees fit).
type Builder interface {
	Build(ctx context.Context, task *Task, cands []*Candidate) []BuildResult
}

// BuildResult is what building one candidate gave: whatever the Runner
// needs (a kernel, a file), or why it failed.
type BuildResult struct {
	Artifact any
	Err      error
}

// Runner measures built candidates. It checks each result against the
// reference before timing it: a wrong result is an error, never a time.
type Runner interface {
	Run(ctx context.Context, task *Task, cands []*Candidate, builds []BuildResult) []RunResult
}

// RunResult is one candidate's measured run times, or why it failed.
type RunResult struct {
	Seconds []float64
	Err     error
	// Job and Machine, from a runner that measures elsewhere (package
	// cluster), name the job that measured it and the host it ran on;
	// the record keeps them.
	Job, Machine string
}

// Options control Tune.
type Options struct {
	Trials     int     // candidates to measure
	Seed       uint64  // a fixed seed makes the search reproducible (with a deterministic runner)
	Population int     // candidates sampled for the first round
	Batch      int     // candidates measured per round
	Mutants    int     // mutants generated per round, for the model to choose from
	Epsilon    float64 // share of each batch picked at random rather than by the model
	DB         *Database
	Version    string
	Model      Model          // nil: a RidgeModel
	Progress   func(Progress) // called after every round
	// Confirm, when > 0, re-measures that many of the fastest
	// candidates after the search, in ConfirmRounds rounds (<= 0 means 2),
	// and makes the fastest of those re-measurements the best (see
	// confirm).
	Confirm       int
	ConfirmRounds int
}

func (o *Options) defaults() {
	if o.Trials <= 0 {
		o.Trials = 64
	}
	if o.Population <= 0 {
		o.Population = 64
	}
	if o.Batch <= 0 {
		o.Batch = 16
	}
	if o.Mutants <= 0 {
		o.Mutants = 3 * o.Batch
	}
	if o.Epsilon <= 0 {
		o.Epsilon = 0.2
	}
	if o.Model == nil {
		o.Model = NewRidgeModel()
	}
	if o.ConfirmRounds <= 0 {
		o.ConfirmRounds = 2
	}
}

// Progress reports a running search.
type Progress struct {
	Trials, Total int
	Failed        int
	Best          float64 // seconds; +Inf before the first success
	Elapsed       time.Duration
	// Round is the confirmation round just measured (1 to Rounds) after
	// the search, 0 during the search; Best is then the fastest of the
	// leaders measured again so far, and after the last round the
	// result's best (Result.Best).
	Round, Rounds int
}

// Result is the outcome of a search.
type Result struct {
	Best    *Record   // nil when no candidate succeeded
	Records []*Record // every measured candidate, in order
	Curve   []float64 // best seconds so far after each trial (+Inf before the first success)
	// Confirmed are the leaders' re-measurements (Options.Confirm), best
	// first; Best is the first of them when there are any.
	Confirmed []*Record
	// Internal are the records of candidates that loom's own checks
	// rejected as they were made (see InternalError; the translation
	// validator, with schedule.SetValidation): bugs of loom, each
	// recorded as a failed trial with the reason.
	Internal []*Record
	// Default is the record of the schedule the space's rules decide
	// without measurement (Space.Decide), measured in the first round,
	// and with Options.Confirm measured again beside the leaders (its
	// confirmed record): nil when the rules decide none or it failed to
	// build.
	Default *Record
}

// Tune searches schedules of task: an initial population sampled from the
// space, then rounds of mutants of the best measured candidates (tile
// sizes, unroll limits, compute locations), chosen by the cost model's
// prediction plus a share of random picks, de-duplicated by structural
// hash, built, measured, recorded and learned from. It stops after
// opts.Trials measurements or when ctx is done; records measured so far
// are kept (and in opts.DB). With opts.Confirm the leaders are then
// measured again (confirm).
func Tune(ctx context.Context, task *Task, b Builder, r Runner, opts Options) (*Result, error) {
	s, err := newSearcher(task, b, r, opts)
	if err != nil {
		return nil, err
	}
	for len(s.res.Records) < s.opts.Trials && !s.exhausted && ctx.Err() == nil {
		if err := s.round(ctx, s.opts.Trials); err != nil {
			return s.res, err
		}
	}
	if err := s.confirmLeaders(ctx); err != nil {
		return s.res, err
	}
	return s.res, ctx.Err()
}

// searcher is one task's search, run a round at a time: Tune runs one to
// its end, TuneModel many, giving each round to the task it expects to
// pay most.
type searcher struct {
	task *Task
	b    Builder
	r    Runner
	opts Options
	rng  *rand.Rand
	// start is when the search began, run the name its records carry.
	start time.Time
	run   string
	res   *Result
	// seen holds the hashes of the candidates measured (and the keys of
	// the rejections recorded), parents the measured ones that ran, to
	// mutate, and trialOf their records by hash.
	seen    map[string]bool
	parents []parent
	trialOf map[string]*Record
	// decidedCand is the default schedule's candidate, once measured.
	decidedCand *Candidate
	best        float64
	failed      int
	// exhausted: the space yields no candidate not measured before.
	exhausted bool
	// score is what the model learns of a measured median (higher is
	// faster); nil: -log(median).
	score func(median float64) float64
	// triedDefault: a round has made the default schedule's candidate.
	triedDefault bool
	// extra are candidates the next round measures first (records of
	// other sizes, see resume); resumed counts the records of earlier
	// runs the search started from.
	extra   []*Candidate
	resumed int
	// probed: the last round measured the default schedule alone (see
	// probe), so the next samples a whole population as a first round
	// does.
	probed bool
}

type parent struct {
	c       *Candidate
	seconds float64
}

func newSearcher(task *Task, b Builder, r Runner, opts Options) (*searcher, error) {
	if err := task.Check(); err != nil {
		return nil, err
	}
	opts.defaults()
	start := time.Now()
	return &searcher{
		task: task, b: b, r: r, opts: opts,
		rng:   rand.New(rand.NewPCG(opts.Seed, 0x6c6f6f6d)),
		start: start,
		// Two tunes started in the same second with the same seed are
		// two runs: the process id and the nanoseconds tell them apart.
		run:     fmt.Sprintf("%s seed=%d pid=%d", start.UTC().Format(time.RFC3339Nano), opts.Seed, os.Getpid()),
		res:     &Result{},
		seen:    map[string]bool{},
		trialOf: map[string]*Record{},
		best:    math.Inf(1),
	}, nil
}

// round makes candidates (fresh samples, and mutants of the best
// parents), measures a batch of them, records them and teaches the model,
// never taking the search past upto trials. It sets exhausted when the
// space has nothing new.
func (s *searcher) round(ctx context.Context, upto int) error {
	task, opts, rng, res := s.task, s.opts, s.rng, s.res
	var pool []*Candidate
	var rejected []*InternalError
	add := func(m made) {
		switch c := m.c; {
		case m.rejected != nil:
			// Keyed by its trace, so that the same rejection made
			// twice is recorded once.
			if key := "internal:" + m.rejected.Trace.String(); !s.seen[key] {
				s.seen[key] = true
				rejected = append(rejected, m.rejected)
			}
		case c != nil && !s.seen[c.Hash] && !slices.ContainsFunc(pool, func(x *Candidate) bool { return x.Hash == c.Hash }):
			pool = append(pool, c)
		}
	}
	// Each candidate is made from a seed drawn here, in order, so that
	// making them in parallel keeps the search reproducible.
	var makers []func() made
	fresh := opts.Population
	if len(s.parents) > 0 {
		if !s.probed {
			fresh = opts.Batch / 2
		}
		s.probed = false
		sort.SliceStable(s.parents, func(i, j int) bool { return s.parents[i].seconds < s.parents[j].seconds })
		top := s.parents[:min(len(s.parents), 8)]
		for range opts.Mutants {
			p, seed := top[rankedPick(rng, len(top))], rng.Uint64()
			makers = append(makers, func() made { return mutate(task, p.c, rand.New(rand.NewPCG(seed, 0))) })
		}
	}
	for range fresh {
		seed := rng.Uint64()
		makers = append(makers, func() made { return sample(task, seed) })
	}
	firstRound := !s.triedDefault
	s.triedDefault = true
	if firstRound {
		// The schedule decided without measurement (Space.Decide) is
		// measured in the first round: tuning never ends below it.
		makers = append(makers, func() made { return decided(task) })
	}
	var decidedHash string
	for i, m := range parallelMap(makers) {
		if firstRound && i == len(makers)-1 && m.c != nil {
			decidedHash = m.c.Hash
		}
		add(m)
	}
	// A candidate loom's own checks rejected is a failed trial, in the
	// records and the database like any other, and counted apart.
	for _, ie := range rejected {
		if len(res.Records) >= upto {
			break
		}
		rec := task.record(ie.Trace, opts, s.run, len(res.Records)+1)
		rec.Error = "internal: " + firstLine(ie.Err.Error())
		s.failed++
		if opts.DB != nil {
			if err := opts.DB.Append(rec); err != nil {
				return err
			}
		}
		res.Records = append(res.Records, rec)
		res.Internal = append(res.Internal, rec)
		res.Curve = append(res.Curve, s.best)
	}
	if len(res.Records) >= upto {
		return nil
	}
	extra := s.extra
	s.extra = nil
	for _, c := range extra {
		add(made{c: c})
	}
	if len(pool) == 0 {
		switch {
		case len(rejected) > 0:
			return nil // the next round makes new ones
		case len(s.parents) == 0:
			return errors.New("autotune: the space yields no candidate for " + task.Name)
		}
		s.exhausted = true
		return nil
	}
	batch := pick(pool, opts, rng, min(opts.Batch, upto-len(res.Records)))
	// The extra candidates take the end of the batch (up to half of it),
	// the default schedule's its last place.
	at := len(batch) - 1
	for _, c := range extra {
		if at < len(batch)/2 {
			break
		}
		same := func(x *Candidate) bool { return x.Hash == c.Hash }
		if i := slices.IndexFunc(pool, same); i >= 0 && !slices.ContainsFunc(batch, same) {
			batch[at] = pool[i]
			at--
		}
	}
	if i := slices.IndexFunc(pool, func(c *Candidate) bool { return c.Hash == decidedHash }); i >= 0 && !slices.Contains(batch, pool[i]) {
		batch[len(batch)-1] = pool[i]
	}
	return s.measure(ctx, batch, decidedHash)
}

// measure builds and runs batch, records every candidate (in the results
// and the database), teaches the model, and reports progress; the
// candidate of hash decidedHash is the default schedule's.
func (s *searcher) measure(ctx context.Context, batch []*Candidate, decidedHash string) error {
	task, opts, res := s.task, s.opts, s.res
	builds := s.b.Build(ctx, task, batch)
	runs := RunAtSizes(ctx, s.r, task, batch, builds)
	var xs [][]float64
	var ys []float64
	for i, c := range batch {
		if ctx.Err() != nil && (builds[i].Err != nil || runs[i].Err != nil) {
			// Interrupted, not failed: an unfinished candidate is not
			// recorded (a later run may measure it).
			continue
		}
		s.seen[c.Hash] = true
		rec := task.record(c.Sched.Trace(), opts, s.run, len(res.Records)+1)
		rec.Features, rec.FeaturesVersion = c.Features, FeaturesVersion
		switch {
		case builds[i].Err != nil:
			rec.Error = "build: " + builds[i].Err.Error()
		case runs[i].Err != nil:
			rec.Error = runs[i].Err.Error()
		default:
			rec.Seconds = runs[i].Seconds
			rec.Median, rec.Spread = Summarize(runs[i].Seconds)
		}
		rec.Job = runs[i].Job
		if runs[i].Machine != "" {
			rec.Machine = runs[i].Machine
		}
		if rec.OK() {
			s.parents = append(s.parents, parent{c, rec.Median})
			s.trialOf[c.Hash] = rec
			s.best = math.Min(s.best, rec.Median)
			xs = append(xs, c.Features)
			ys = append(ys, s.scoreOf(rec.Median))
		} else {
			s.failed++
		}
		if opts.DB != nil {
			if err := opts.DB.Append(rec); err != nil {
				return err
			}
		}
		res.Records = append(res.Records, rec)
		res.Curve = append(res.Curve, s.best)
		if c.Hash == decidedHash && res.Default == nil {
			res.Default, s.decidedCand = rec, c
		}
		if rec.OK() && (res.Best == nil || rec.Median < res.Best.Median) {
			res.Best = rec
		}
	}
	if len(xs) > 0 {
		opts.Model.Update(xs, ys)
	}
	if opts.Progress != nil {
		opts.Progress(Progress{Trials: len(res.Records), Total: opts.Trials, Failed: s.failed, Best: s.best, Elapsed: time.Since(s.start)})
	}
	return nil
}

// probe measures the default schedule alone (the space's decision), as
// the task's first trial: what the task costs untuned, for a model's
// estimate and its scheduler, for one trial. It does nothing when the
// search has measured the default already.
func (s *searcher) probe(ctx context.Context) error {
	if s.triedDefault {
		return nil
	}
	s.probed = true
	s.triedDefault = true
	d := decided(s.task)
	if d.c == nil {
		// No default (or loom's checks rejected it): a round of the
		// search instead.
		s.triedDefault, s.probed = false, false
		return s.round(ctx, len(s.res.Records)+s.opts.Batch)
	}
	n0 := len(s.res.Records)
	if err := s.measure(ctx, []*Candidate{d.c}, d.c.Hash); err != nil {
		return err
	}
	if len(s.res.Records) == n0 || s.res.Default == nil || !s.res.Default.OK() {
		s.probed = false
	}
	return nil
}

func (s *searcher) scoreOf(median float64) float64 {
	if s.score != nil {
		return s.score(median)
	}
	return -math.Log(median)
}

// confirmLeaders measures the opts.Confirm fastest candidates again, with
// the default schedule beside them (confirm); nothing when Confirm is 0
// or ctx is done.
func (s *searcher) confirmLeaders(ctx context.Context) error {
	if s.opts.Confirm <= 0 || ctx.Err() != nil {
		return nil
	}
	n := min(len(s.parents), s.opts.Confirm) // Confirm may be far more than were measured
	leaders := make([]*Candidate, 0, n+1)
	sort.SliceStable(s.parents, func(i, j int) bool { return s.parents[i].seconds < s.parents[j].seconds })
	for _, p := range s.parents[:n] {
		leaders = append(leaders, p.c)
	}
	// The default schedule is measured again beside them, so that
	// Result.Default compares with Best in the same moments.
	if s.decidedCand != nil && s.res.Default.OK() && !slices.Contains(leaders, s.decidedCand) {
		leaders = append(leaders, s.decidedCand)
	}
	return confirm(ctx, s.task, s.b, s.r, s.opts, leaders, s.trialOf, s.res, s.start)
}

// confirm measures the leaders again, in opts.ConfirmRounds rounds, each
// leader once a round, the order reversed every other round; it appends
// to the database, and to res.Confirmed, one record per leader, with its
// fastest round (or, where a round failed, the failure), and makes the
// fastest of those res.Best. A machine shared with other work slows
// measurements in bursts of seconds to minutes, longer than a
// candidate's samples take: a candidate measured in a quiet moment can
// lead the search on luck. Measured again side by side, the leaders are
// compared in the same moments.
func confirm(ctx context.Context, task *Task, b Builder, r Runner, opts Options, leaders []*Candidate, trialOf map[string]*Record, res *Result, start time.Time) error {
	if len(leaders) == 0 {
		return nil
	}
	type fastest struct {
		seconds []float64 // of the leader's fastest round
		median  float64
		rounds  int   // rounds that measured it
		err     error // of a failed round: the leader is out
		jobs    string
		machine string
	}
	got := make([]fastest, len(leaders))
	builds := b.Build(ctx, task, leaders)
	for round := range opts.ConfirmRounds {
		order := make([]int, len(leaders))
		for i := range order {
			order[i] = i
		}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		cands, bs := make([]*Candidate, len(order)), make([]BuildResult, len(order))
		for k, i := range order {
			cands[k], bs[k] = leaders[i], builds[i]
		}
		runs := RunAtSizes(ctx, r, task, cands, bs)
		if ctx.Err() != nil {
			return nil // interrupted: the search's own records stand
		}
		for k, i := range order {
			g := &got[i]
			g.rounds++
			g.jobs = joinJobs(g.jobs, runs[k].Job)
			if runs[k].Machine != "" {
				g.machine = runs[k].Machine
			}
			switch {
			case bs[k].Err != nil:
				g.err = fmt.Errorf("confirm: build: %w", bs[k].Err)
			case runs[k].Err != nil:
				g.err = fmt.Errorf("confirm: %w", runs[k].Err)
			case len(runs[k].Seconds) == 0:
				g.err = errors.New("confirm: no time measured")
			}
			if g.err != nil {
				continue
			}
			if m, _ := Summarize(runs[k].Seconds); g.seconds == nil || m < g.median {
				g.seconds, g.median = runs[k].Seconds, m
			}
		}
		if opts.Progress != nil && round < opts.ConfirmRounds-1 {
			best := math.Inf(1)
			for _, g := range got {
				if g.err == nil && g.seconds != nil {
					best = math.Min(best, g.median)
				}
			}
			opts.Progress(progressOf(res, opts, best, start, round+1))
		}
	}
	for i, c := range leaders {
		trial := trialOf[c.Hash]
		if trial == nil {
			continue
		}
		rec := *trial
		rec.Confirmed = got[i].rounds
		rec.Job = got[i].jobs
		if got[i].machine != "" {
			rec.Machine = got[i].machine
		}
		if got[i].err != nil {
			// A wrong result now, a race its first check missed, or a
			// crash: the leader is out (see eligible).
			rec.Seconds, rec.Median, rec.Spread, rec.Error = nil, 0, 0, got[i].err.Error()
		} else {
			rec.Seconds = got[i].seconds
			rec.Median, rec.Spread = Summarize(got[i].seconds)
		}
		rec.Time = time.Now().UTC()
		if opts.DB != nil {
			if err := opts.DB.Append(&rec); err != nil {
				return err
			}
		}
		res.Confirmed = append(res.Confirmed, &rec)
		if trial == res.Default {
			res.Default = &rec
		}
	}
	// Best first, the failed last; with none correct, the fastest trial
	// that did not fail confirmation is the best, as eligible has it.
	slices.SortStableFunc(res.Confirmed, func(a, b *Record) int {
		if a.OK() != b.OK() {
			if a.OK() {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Median, b.Median)
	})
	if len(res.Confirmed) > 0 && res.Confirmed[0].OK() {
		res.Best = res.Confirmed[0]
	} else {
		res.Best = best(append(slices.Clone(res.Records), res.Confirmed...), res.Best.Workload, res.Best.Target)
	}
	if opts.Progress != nil {
		// The last round: the best is the result's, as the caller will
		// report it.
		b := math.Inf(1)
		if res.Best != nil {
			b = res.Best.Median
		}
		opts.Progress(progressOf(res, opts, b, start, opts.ConfirmRounds))
	}
	return nil
}

// progressOf is the progress after a confirmation round.
func progressOf(res *Result, opts Options, best float64, start time.Time, round int) Progress {
	failed := 0
	for _, r := range res.Records {
		if !r.OK() {
			failed++
		}
	}
	return Progress{Trials: len(res.Records), Total: opts.Trials, Failed: failed, Best: best, Elapsed: time.Since(start), Round: round, Rounds: opts.ConfirmRounds}
}

// Summarize returns the median and the interquartile range over it.
func Summarize(xs []float64) (median, spread float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0
	}
	median = s[len(s)/2]
	q1, q3 := s[len(s)/4], s[(3*len(s))/4]
	if median > 0 {
		spread = (q3 - q1) / median
	}
	return median, spread
}

// rankedPick draws an index in [0, n) with probability in proportion to
// 1/(index+1): the best parents are mutated most, the others still some.
func rankedPick(rng *rand.Rand, n int) int {
	var total float64
	for i := range n {
		total += 1 / float64(i+1)
	}
	x := rng.Float64() * total
	for i := range n {
		if x -= 1 / float64(i+1); x < 0 {
			return i
		}
	}
	return n - 1
}

// pick chooses n candidates: the best predicted, and a share at random.
func pick(pool []*Candidate, opts Options, rng *rand.Rand, n int) []*Candidate {
	if len(pool) <= n {
		return pool
	}
	scores := make([]float64, len(pool))
	for i, c := range pool {
		scores[i] = opts.Model.Predict(c.Features)
	}
	idx := make([]int, len(pool))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	nRandom := int(math.Round(opts.Epsilon * float64(n)))
	chosen := map[int]bool{}
	var out []*Candidate
	for _, i := range idx[:n-nRandom] {
		chosen[i] = true
		out = append(out, pool[i])
	}
	for len(out) < n {
		i := rng.IntN(len(pool))
		if !chosen[i] {
			chosen[i] = true
			out = append(out, pool[i])
		}
	}
	return out
}

// made is what making a candidate gave: the candidate, nothing (the
// space yields none, or the replay refused a mutated decision), or a
// rejection by loom's own checks.
type made struct {
	c        *Candidate
	rejected *InternalError
}

// decided makes the candidate the space's rules decide without
// measurement (Space.Decide).
func decided(task *Task) made {
	s, err := task.Space.Decide(task.Func)
	if ie, ok := errors.AsType[*InternalError](err); ok {
		return made{rejected: ie}
	}
	if err != nil {
		return made{}
	}
	return made{c: candidate(task, s)}
}

// sample draws a fresh candidate from the space.
func sample(task *Task, seed uint64) made {
	s, err := task.Space.Sample(task.Func, seed)
	if ie, ok := errors.AsType[*InternalError](err); ok {
		return made{rejected: ie}
	}
	if err != nil {
		return made{}
	}
	return made{c: candidate(task, s)}
}

func candidate(task *Task, s *schedule.Schedule) *Candidate {
	f := s.Func()
	return &Candidate{Sched: s, Func: f, Hash: ast.Hash(f).String(), Features: Features(f, task.Sizes)}
}

// firstLine returns s up to its first newline (an internal error goes on
// with the whole function).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// mutate changes one sampled decision of c's trace, replays the trace
// before its post-processing with it and finishes the schedule anew
// (Finish); nothing when the replay refuses the new decision.
func mutate(task *Task, c *Candidate, rng *rand.Rand) made {
	tr := c.Sched.Trace().WithoutPostproc()
	var sites []int
	for i, in := range tr.Insts {
		// A decision no later instruction uses (a structural choice a
		// rule made in Go) changes nothing on replay.
		if in.Decision != nil && usedLater(tr, i) {
			sites = append(sites, i)
		}
	}
	if len(sites) == 0 {
		return made{}
	}
	i := sites[rng.IntN(len(sites))]
	in := tr.Insts[i]
	d := slices.Clone(in.Decision)
	switch in.Kind {
	case "sample_perfect_tile":
		d = mutateTile(d, in, rng)
	case "sample_categorical":
		n := 0
		if len(in.Args) > 0 {
			n = len(in.Args[0].List)
		}
		if n < 2 {
			return made{}
		}
		d[0] = (d[0] + 1 + int64(rng.IntN(n-1))) % int64(n)
	case "sample_compute_location":
		d[0] = int64(rng.IntN(int(d[0])+3)) - 1
	default:
		return made{}
	}
	if d == nil || slices.Equal(d, in.Decision) {
		return made{}
	}
	s, err := schedule.Replay(task.Func, tr, map[int][]int64{i: d})
	if internal(err) != nil {
		tr.Insts[i].Decision = d
		return made{rejected: &InternalError{Trace: tr, Err: fmt.Errorf("mutant: %w", err)}}
	}
	if err != nil {
		return made{}
	}
	if err := Finish(s); err != nil {
		if internal(err) != nil {
			return made{rejected: &InternalError{Trace: s.Trace(), Err: fmt.Errorf("mutant: finish: %w", err)}}
		}
		return made{}
	}
	return made{c: candidate(task, s)}
}

// mutateTile moves one prime factor between two factors of a perfect
// tile, respecting the cap on the innermost one.
func mutateTile(d []int64, in schedule.Inst, rng *rand.Rand) []int64 {
	if len(d) < 2 {
		return nil
	}
	from := rng.IntN(len(d))
	if d[from] == 1 {
		return nil
	}
	ps := schedule.PrimeFactors(d[from])
	p := ps[rng.IntN(len(ps))]
	to := rng.IntN(len(d) - 1)
	if to >= from {
		to++
	}
	d[from] /= p
	d[to] *= p
	if len(in.Args) >= 3 && in.Args[2].Int != nil {
		if limit := *in.Args[2].Int; limit > 0 && d[len(d)-1] > limit {
			return nil
		}
	}
	return d
}

// usedLater reports whether an output of instruction i is an argument of
// a later instruction.
func usedLater(tr *schedule.Trace, i int) bool {
	var uses func(a schedule.Arg) bool
	uses = func(a schedule.Arg) bool {
		return slices.Contains(tr.Insts[i].Outputs, a.RV) || slices.ContainsFunc(a.List, uses)
	}
	for _, in := range tr.Insts[i+1:] {
		if slices.ContainsFunc(in.Args, uses) {
			return true
		}
	}
	return false
}

// parallelMap calls every f, on as many goroutines as there are CPUs, and
// returns their results in order.
func parallelMap[T any](fs []func() T) []T {
	out := make([]T, len(fs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.NumCPU(), len(fs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = fs[i]()
			}
		}()
	}
	for i := range fs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
