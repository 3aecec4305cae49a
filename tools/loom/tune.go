package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/autotune/cudatune"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/schedule"
	"github.com/loom-go/loom/tools/loom/internal/bench"
)

// version is written into every tuning record.
const version = "loom-dev"

// tuneSummary is what tune reports of one kernel (-json prints it).
type tuneSummary struct {
	Kernel   string  `json:"kernel"`
	Shape    string  `json:"shape"`
	Threads  int     `json:"threads,omitempty"`
	GPU      string  `json:"gpu,omitempty"` // the GPU's architecture, when tuned for one
	Trials   int     `json:"trials"`
	Failed   int     `json:"failed"`
	Distinct int     `json:"distinct"`           // distinct schedules among the trials
	Internal int     `json:"internal,omitempty"` // failed trials loom's own checks rejected (bugs of loom; see -validate)
	BestMs   float64 `json:"best_ms"`
	// BestSpread is the interquartile range of the best's samples over
	// their median (BestSamples of them), and BestConfirmed the rounds
	// that confirmed it (-confirm): how far its time can be trusted.
	BestSpread    float64 `json:"best_spread,omitempty"`
	BestSamples   int     `json:"best_samples,omitempty"`
	BestConfirmed int     `json:"best_confirmed,omitempty"`
	Best          string  `json:"best"`
	// DefaultMs is the time of the schedule loom decides without tuning
	// (autotune.Default): measured in the search's first round, and
	// again beside the leaders when they are confirmed (-confirm), so
	// that it compares with BestMs; absent when it did not run.
	DefaultMs float64 `json:"default_ms,omitempty"`
	StartMs   float64 `json:"start_ms,omitempty"` // absent when the function as written does not run on the target
	Start     string  `json:"start,omitempty"`
	Speedup   float64 `json:"speedup,omitempty"`
	// KeptStart: no candidate beat the starting schedule, which is kept
	// (and written with -out) instead.
	KeptStart bool     `json:"kept_start,omitempty"`
	Seconds   float64  `json:"seconds"`
	Database  string   `json:"db"`
	Files     []string `json:"files,omitempty"`
	Trace     string   `json:"trace"`

	internal     []*autotune.Record // the Internal trials' records
	searchBestMs float64            // the search's best, even when the start is kept
	readable     string             // the best trace simplified (schedule.Trace.Simplified), for the text output
}

// spread says how the best time was measured: the median of how many
// samples, their interquartile range over it, and the rounds that
// confirmed it.
func (sum *tuneSummary) spread() string {
	out := fmt.Sprintf("median of %d samples, IQR %.1f%%", sum.BestSamples, 100*sum.BestSpread)
	if sum.BestConfirmed > 0 {
		out += fmt.Sprintf(", confirmed in %d rounds", sum.BestConfirmed)
	}
	return out
}

// runTune searches schedules of a built-in workload or of every fused
// kernel of a graph, measuring every candidate in an isolated worker
// process; it appends the records to the database and writes the best
// kernels out.
func runTune(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("tune", "(-workload W [-size N|NAME=VALUE,...] | -graph GRAPH.json -size NAME=VALUE... | -func FILE.loom -size NAME=VALUE...) [flags]",
		`Searches schedules of a function with the autotuner: candidates from the
search rules, evolved by mutation and chosen by a cost model, each built and
run in a worker process of its own (a crashing or hanging one is recorded as
failed), checked against a reference before it is timed. Every measured
candidate is appended to the tuning database; the best one is printed (its
schedule as a trace) and, with -out, written as LLVM IR, an object file and
a C header. Ctrl-C stops the search and keeps what it measured.

-validate checks every step of every schedule the tuner builds with the
translation validator (package validate), independently of the primitive's
own legality proof. A candidate it rejects is a bug of loom: it is recorded
as failed, with the reason, reported at the end, and loom tune exits 1.`, stderr)
	var src source
	src.register(fs)
	threads := fs.Int("threads", 0, "threads the kernel runs on (0: one per core)")
	trials := fs.Int("trials", 64, "candidates to measure (per kernel)")
	seed := fs.Uint64("seed", 1, "random seed; the same seed gives the same search")
	dbPath := fs.String("db", "", "the tuning database, JSON lines (default: tuning.jsonl in loom's cache directory)")
	out := fs.String("out", "", "write each best kernel into this directory, ready to link into a C program: NAME.o, NAME.h (its comment shows the cc line), NAME.ll and loomrt.c, loom's runtime")
	fs.StringVar(out, "o", "", "the same as -out")
	symbol := fs.String("name", "", "with -out, the kernel's C symbol and file name (default: the workload's, or each graph kernel's; a graph's kernels are NAME_0, NAME_1, ...)")
	confirm := fs.Int("confirm", 6, "after the search, measure the `K` fastest candidates again, side by side in two rounds, and keep the fastest of those (a busy machine makes single measurements lucky or not; 0: off)")
	timeout := fs.Duration("timeout", time.Minute, "per-candidate limit: a slower candidate is recorded as failed")
	asJSON := fs.Bool("json", false, "print one JSON summary per kernel instead of text")
	quiet := fs.Bool("q", false, "no progress bar")
	target := fs.String("target", "cpu", "what the kernels run on: cpu (this machine's, through LLVM) or cuda (an NVIDIA GPU, with the GPU search rules)")
	validate := fs.Bool("validate", false, "check every schedule step with the translation validator; a candidate it rejects (a bug of loom) is recorded as failed and reported")
	bucketsFlag := fs.String("buckets", "", "tune a symbolic size by buckets: `NAME=B0,B1,...,Bk` makes the buckets B0..B1-1, B1..B2-1, ..., up to Bk inclusive; each bucket is tuned on its own, every candidate measured at its bounds and their geometric middle (the geometric mean of the times counts), and its records keep the bucket (loom bench -sweep, and the dispatch of the built kernels, pick a bucket by the sizes at run time)")
	specialize := fs.String("specialize", "", "tune a schedule for one value of a symbolic size, `NAME=VALUE` (S=1 for decoding steps, say): a bucket of that one size, which a dispatch takes before any wider bucket; with -buckets or -sizes, besides them")
	sizesFlag := fs.String("sizes", "", "tune a symbolic size over a range by buckets: `NAME=LO..HI` makes buckets whose bounds double up to 16, then grow 4 times (1..4096: as -buckets NAME=1,2,4,8,16,64,256,1024,4096); neighbours whose best schedules agree are merged. A dimension of -workload named here, by -buckets or by -specialize (gemm's and gemm_bias_relu's M, N or K; rmsnorm's R or D; softmax's R or D, not both) is made a symbolic size of its function, the others constants at -size; its records are for that function: loom bench -sweep and loom build -symbolic find them when they name the same dimensions")
	budget := fs.Duration("budget", 0, "tune a graph's kernels as one model within this time (30m, 2h), confirmations included: the task scheduler gives each round to the kernel expected to cut the model's time most; the run's state and cost model are kept beside -db, so the same command run again continues the budget (-trials then caps the trials of all kernels together)")
	asModel := fs.Bool("model", false, "tune a graph's kernels as one model with the task scheduler (implied by -budget): its distinct kernels are tuned together, weighted by how often the graph runs each, and -trials counts the trials of all of them (default 64 per distinct kernel); each kernel's first trial is its default schedule, and at the end its two fastest are confirmed (-confirm 0 or 1: fewer)")
	sequential := fs.Bool("sequential", false, "with -model or -budget, tune the kernels one after the other with an equal share each of the budget or trials, instead of the task scheduler's choice (the baseline it is measured against)")
	var queue queueFlags
	queue.register(fs, true)
	profile := profileFlag(fs)
	src.symbolicDims = func() []string { return specNames(*bucketsFlag, *sizesFlag, *specialize) }
	jobs, code, ok := src.parse(fs, args, stderr)
	if !ok {
		return code
	}
	stopProfile, err := profile()
	if err != nil {
		fmt.Fprintln(stderr, "loom tune:", err)
		return 1
	}
	defer stopProfile()
	if !threadsOK(fs, stderr, *threads) || !inRange(fs, stderr, "trials", *trials, 1, maxTrials) ||
		!inRange(fs, stderr, "confirm", *confirm, 0, maxConfirm) || !inRange(fs, stderr, "timeout", *timeout, time.Millisecond, 24*time.Hour) ||
		!dbOK(fs, stderr, *dbPath) || !onlyWith(fs, stderr, *out != "", "with -out (it names the files written)", "name") ||
		!inRange(fs, stderr, "budget", *budget, 0, 30*24*time.Hour) ||
		!onlyWith(fs, stderr, *budget > 0 || *asModel, "with -model or -budget", "sequential") {
		return 2
	}
	trialsSet := false
	fs.Visit(func(f *flag.Flag) { trialsSet = trialsSet || f.Name == "trials" })
	if *validate {
		// Every schedule of this process: the candidates, their mutants,
		// the records replayed. The workers only build and run the
		// finished functions.
		defer schedule.SetValidation(schedule.SetValidation(true))
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "loom tune:", err)
		return 1
	}
	var dev *cuda.Device
	switch *target {
	case "cpu":
	case "cuda":
		// Candidates for a GPU are measured on one: without it there is
		// nothing to tune against.
		var err error
		if dev, err = cuda.Open(); err != nil {
			return fail(fmt.Errorf("-target cuda needs an NVIDIA GPU and its driver, and this machine has none usable: %v", err))
		}
	default:
		return fail(fmt.Errorf("unknown -target %q (have cpu, cuda)", *target))
	}
	if *out != "" {
		// Before the search, not after it: a directory that cannot be
		// made would throw the search's result away.
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fail(fmt.Errorf("-out: %v", err))
		}
	}
	t, err := newTuner(dev, *threads, *trials, *seed, dbPath, *confirm, *timeout, stderr)
	if err != nil {
		return fail(err)
	}
	if queue.url != "" {
		if dev != nil {
			return fail(fmt.Errorf("-nats measures on CPU workers; -target cuda tunes on this machine's GPU"))
		}
		if *bucketsFlag != "" || *sizesFlag != "" || *specialize != "" {
			return fail(fmt.Errorf("-nats tunes at one size: tune buckets without it"))
		}
		stopQueue, err := t.useQueue(&queue, *dbPath, *threads, stderr)
		if err != nil {
			return fail(err)
		}
		defer stopQueue()
		*asModel = true
	} else if queue.workers > 0 || queue.target != "" {
		fmt.Fprintln(stderr, "loom tune: -workers and -nats-target need -nats")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// Deferred after stop, so run before it: the runner's temporary
	// files are removed on every return, an interrupt's included, while
	// a second interrupt is still caught.
	defer t.close()
	status := 0
	names := outNames(jobs, *symbol)
	if *bucketsFlag != "" || *sizesFlag != "" || *specialize != "" {
		if *out != "" {
			return fail(fmt.Errorf("-out writes one kernel per job, and a bucketed job has one per bucket: use loom build"))
		}
		type sizeBuckets struct {
			name    string
			buckets [][2]int64
		}
		var all []sizeBuckets
		if *specialize != "" {
			name, b, err := specializeBucket(*specialize)
			if err != nil {
				return fail(err)
			}
			all = append(all, sizeBuckets{name, b})
		}
		spec := *bucketsFlag
		if spec == "" && *sizesFlag != "" {
			if spec, err = rangeBuckets(*sizesFlag); err != nil {
				return fail(err)
			}
		}
		if spec != "" {
			name, b, err := parseBuckets(spec)
			if err != nil {
				return fail(err)
			}
			all = append(all, sizeBuckets{name, b})
		}
		plain := jobs
		jobs = nil
		for i, sb := range all {
			bj, err := bucketJobs(plain, sb.name, sb.buckets)
			if err != nil {
				return fail(err)
			}
			if i > 0 { // the jobs without the size came with the first
				bj = slices.DeleteFunc(bj, func(j *job) bool { return j.Bucket == nil })
			}
			jobs = append(jobs, bj...)
		}
		names = outNames(jobs, *symbol)
	}
	if *budget > 0 || *asModel {
		if *bucketsFlag != "" || *sizesFlag != "" || *specialize != "" {
			return fail(fmt.Errorf("-budget and -model tune a model at one size; tune buckets without them"))
		}
		total := *trials
		switch {
		case !trialsSet && *budget > 0:
			total = 0 // the budget alone
		case !trialsSet:
			total = *trials * len(autotune.DistinctTasks(tasksOf(t, jobs)))
		}
		return t.tuneModel(ctx, jobs, names, modelRun{budget: *budget, trials: total, sequential: *sequential}, *dbPath, *out, *asJSON, *quiet, stdout, stderr)
	}
	for ji, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		tty := autotune.IsTerminal(stderr)
		if !*quiet {
			t.opts.Progress = autotune.PrintProgressWith(stderr, j.Name, j.speed)
		}
		sum, best, err := t.tune(ctx, j)
		if !*quiet && tty {
			fmt.Fprintln(stderr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "loom tune: %s: %v\n", j.Name, err)
			status = 1
			continue
		}
		sum.Database = *dbPath
		if sum.Internal > 0 {
			// A bug of loom, whatever the search found: said on its own,
			// with what reproduces it, and the exit status says it too.
			fmt.Fprintf(stderr, "loom tune: %s: BUG: loom's own checks rejected %d candidates (recorded as failed in %s):\n", j.Name, sum.Internal, *dbPath)
			for _, r := range sum.internal {
				fmt.Fprintf(stderr, "  trial %d: %s\n", r.Trial, r.Error)
			}
			fmt.Fprintf(stderr, "the first one's trace, up to the rejected step:\n%s", sum.internal[0].Trace)
			status = 1
		}
		if *out != "" {
			write := writeKernel
			if dev != nil {
				write = writeCUDAKernel(dev.Arch())
			}
			if sum.Files, err = write(*out, names[ji], best); err != nil {
				return fail(err)
			}
		}
		if *asJSON {
			json.NewEncoder(stdout).Encode(sum)
			continue
		}
		on := fmt.Sprintf("%d threads", sum.Threads)
		if sum.GPU != "" {
			on = "GPU " + sum.GPU
		}
		internal := ""
		if sum.Internal > 0 {
			internal = fmt.Sprintf(", %d of them rejected by loom's own checks", sum.Internal)
		}
		if sum.Trials < *trials && ctx.Err() == nil {
			// Fewer than asked, and not interrupted: the space ran out.
			internal += fmt.Sprintf("; the search space holds no other schedule, so %d of the %d trials asked", sum.Trials, *trials)
		}
		if sum.KeptStart {
			fmt.Fprintf(stdout, "%s %s, %s: no candidate of %d trials (%d failed%s) beat the starting schedule, %.4g ms (%s); keeping it (the fastest candidate took %.4g ms)\n",
				sum.Kernel, sum.Shape, on, sum.Trials, sum.Failed, internal, sum.StartMs, sum.Start, sum.searchBestMs)
			fmt.Fprintf(stdout, "records appended to %s\n", sum.Database)
			if len(sum.Files) > 0 {
				fmt.Fprintf(stdout, "kernel written to %s\n", strings.Join(sum.Files, ", "))
			}
			continue
		}
		fmt.Fprintf(stdout, "%s %s, %s: best %.4g ms (%s; %s) after %d trials (%d failed%s) in %.0f s", sum.Kernel, sum.Shape, on, sum.BestMs, sum.Best, sum.spread(), sum.Trials, sum.Failed, internal, sum.Seconds)
		if sum.StartMs > 0 {
			fmt.Fprintf(stdout, "; the starting schedule took %.4g ms (%s): %.1fx", sum.StartMs, sum.Start, sum.Speedup)
		}
		fmt.Fprintln(stdout)
		fmt.Fprintf(stdout, "records appended to %s\n", sum.Database)
		if len(sum.Files) > 0 {
			fmt.Fprintf(stdout, "kernel written to %s\n", strings.Join(sum.Files, ", "))
		}
		fmt.Fprintf(stdout, "best schedule (the record's trace simplified; loom replay prints it as Go):\n%s\n", sum.readable)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "loom tune: interrupted; the records measured so far are in", *dbPath)
		return 130
	}
	if dev == nil && !checkDispatches(jobs, t, *seed, stderr) {
		status = 1
	}
	return status
}

// checkDispatches runs, for each function tuned by buckets, its dispatch
// (the fastest record of every bucket in the database, the default for
// the sizes none holds) from its entry point at every bucket's bounds and
// at sizes drawn inside it, against the reference (Dispatch.Check); it
// says what it checked on stderr and reports whether all agreed.
func checkDispatches(jobs []*job, t *tuner, seed uint64, stderr io.Writer) bool {
	cache, err := native.DefaultCache()
	if err != nil {
		fmt.Fprintln(stderr, "loom tune: checking the dispatch:", err)
		return false
	}
	ok := true
	done := map[string]bool{}
	for _, j := range jobs {
		h := ast.Hash(j.Case.Func).String()
		if j.Bucket == nil || done[h] {
			continue
		}
		done[h] = true
		d, err := autotune.DispatchFromDatabase(j.Case.Func, t.opts.DB, t.targetKey, t.target, cache, llvm.Options{})
		if err == nil {
			var sets []map[string]int64
			if sets, err = d.CheckSizes(j.Case.Sizes, 3, seed); err == nil {
				if err = d.Check(sets, cache, llvm.Options{}); err == nil {
					fmt.Fprintf(stderr, "loom tune: %s: the dispatch (%d buckets and the default) computes what the reference does at %d sizes: its buckets' bounds, up to 3 drawn inside each, one past them\n", j.Name, d.Buckets(), len(sets))
					continue
				}
			}
		}
		fmt.Fprintf(stderr, "loom tune: %s: BUG: the dispatch of the buckets' best schedules: %v\n", j.Name, err)
		ok = false
	}
	return ok
}

// newCPUTuner is the tuner of loom tune for this machine's CPU: threads
// (0: one per core), trials and seed of the search, the database at
// *dbPath (which it sets to the default when empty), confirmation rounds
// and the per-candidate timeout; damage a read of the database skipped is
// said on warn.
func newCPUTuner(threads, trials int, seed uint64, dbPath *string, confirm int, timeout time.Duration, warn io.Writer) (*tuner, error) {
	return newTuner(nil, threads, trials, seed, dbPath, confirm, timeout, warn)
}

// newTuner is newCPUTuner, or with dev the tuner for that GPU: the GPU
// rules, candidates lowered to CUDA C here and run there by the workers,
// and no LLVM needed (a GPU's machine often has none).
func newTuner(dev *cuda.Device, threads, trials int, seed uint64, dbPath *string, confirm int, timeout time.Duration, warn io.Writer) (*tuner, error) {
	nt := threads
	if nt <= 0 {
		nt = runtime.NumCPU()
	}
	var cache *native.Cache
	cacheDir := native.DefaultCacheDir()
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("loom's cache directory: %w", err)
	}
	if dev == nil {
		var err error
		if cache, err = native.DefaultCache(); err != nil {
			return nil, err
		}
		cacheDir = cache.Dir
	}
	if *dbPath == "" {
		*dbPath = filepath.Join(cacheDir, "tuning.jsonl")
	}
	db, err := openDatabase(*dbPath, "tune", warn)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	runner := &autotune.ProcessRunner{Command: []string{exe, "worker"}, CacheDir: cacheDir, Threads: nt, Timeout: timeout, MinSeconds: runnerMinSeconds}
	t := &tuner{
		threads: nt,
		timeout: timeout,
		runner:  runner,
		opts:    autotune.Options{Trials: trials, Seed: seed, Population: 32, Batch: 8, DB: db, Version: version, Confirm: confirm},
	}
	if dev != nil {
		runner.Target = cudatune.Target
		t.builder = &cudatune.Builder{Arch: dev.Arch()}
		t.rules, t.target, t.targetKey = autotune.GPURules(), autotune.CUDATargetFor(dev.Arch()), autotune.CUDATargetKey(dev.Arch())
		t.arch = dev.Arch()
		return t, nil
	}
	t.builder = &autotune.LocalBuilder{Cache: cache, Parallel: runtime.NumCPU()}
	t.rules, t.target, t.targetKey = autotune.DefaultRules(), autotune.HostTarget(nt), autotune.TargetKey(llvm.Host(), nt)
	return t, nil
}

// runnerMinSeconds is how long each timed sample of a candidate lasts at
// least (0: autotune's default, 10 ms). The package's tests shorten it
// (see TestMain): they check what tune records, reports and writes, not
// how precise its times are.
var runnerMinSeconds float64

// close removes the runner's temporary files (the reference outputs).
func (t *tuner) close() {
	if c, ok := t.runner.(io.Closer); ok {
		c.Close()
	}
}

// defaultDB is the tuning database in loom's cache directory.
func defaultDB(cache *native.Cache) string { return filepath.Join(cache.Dir, "tuning.jsonl") }

// tuner tunes jobs one after the other with one builder and runner.
type tuner struct {
	threads   int
	builder   autotune.Builder
	runner    autotune.Runner
	opts      autotune.Options
	rules     []autotune.Rule
	target    autotune.Target
	targetKey string // as records store it
	arch      string // the GPU's, when tuning for one
	timeout   time.Duration
	// finishCampaign, when tuning through a queue (-nats), ends the
	// campaign after a run that finished (see cluster.Campaign).
	finishCampaign func() error
}

// task is j's tuning task on t's target.
func (t *tuner) task(j *job) *autotune.Task {
	task := &autotune.Task{
		Name: j.Name, Func: j.Case.Func, Sizes: j.Case.Sizes, Shape: j.Shape,
		Target: t.targetKey,
		Space:  &autotune.Space{Rules: t.rules, Target: t.target},
		Bucket: j.Bucket, SizeSets: j.SizeSets,
	}
	if j.Bucket != nil {
		// No tile larger than a symbolic loop of the bucket can be, and
		// no parallel loop without work for every thread at its smallest
		// sizes (the other sizes at the values the bucket is tuned at).
		most, least := maps.Clone(j.Case.Sizes), maps.Clone(j.Case.Sizes)
		for name, r := range j.Bucket {
			least[name], most[name] = r[0], r[1]
		}
		task.Space.Target.Bounds = &autotune.SizeBounds{Max: most, Min: least}
	}
	return task
}

// tune searches schedules of j and returns the summary and the best
// function.
func (t *tuner) tune(ctx context.Context, j *job) (*tuneSummary, *ast.Func, error) {
	task := t.task(j)
	// The starting schedule: the function as written (on a GPU, with no
	// loop bound to threads, it does not run).
	start, err := schedule.New(j.Case.Func)
	if err != nil {
		return nil, nil, err
	}
	baseSeconds := math.Inf(1)
	if t.arch == "" {
		base := []*autotune.Candidate{{Sched: start, Func: j.Case.Func}}
		baseRun := autotune.RunAtSizes(ctx, t.runner, task, base, t.builder.Build(ctx, task, base))[0]
		if baseRun.Err == nil {
			baseSeconds, _ = autotune.Summarize(baseRun.Seconds)
		}
	}
	begin := time.Now()
	res, err := autotune.Tune(ctx, task, t.builder, t.runner, t.opts)
	if err != nil && ctx.Err() == nil {
		return nil, nil, err
	}
	if res != nil && res.Best == nil && len(res.Internal) > 0 {
		r := res.Internal[0]
		return nil, nil, fmt.Errorf("no candidate ran correctly; BUG: loom's own checks rejected %d of them, the first (trial %d): %s\nits trace, up to the rejected step:\n%s", len(res.Internal), r.Trial, r.Error, r.Trace)
	}
	if res == nil || res.Best == nil {
		return nil, nil, noneRan(res)
	}
	best, err := res.Best.Apply(j.Case.Func)
	if err != nil {
		return nil, nil, err
	}
	keptStart := false
	if !math.IsInf(baseSeconds, 0) && res.Best.Median >= baseSeconds {
		// Nothing the search found beats the function as written: keep
		// that, and say so (a slower kernel is never written out as the
		// result).
		best, keptStart = j.Case.Func, true
	}
	failed := 0
	distinct := map[string]bool{}
	for _, r := range res.Records {
		if !r.OK() {
			failed++
		}
		if r.Trace != nil {
			distinct[r.Trace.String()] = true
		}
	}
	sum := &tuneSummary{
		Kernel: j.Name, Shape: j.Shape, Threads: t.threads, GPU: t.arch, Trials: len(res.Records), Failed: failed, Distinct: len(distinct),
		Internal: len(res.Internal), internal: res.Internal,
		BestMs: res.Best.Median * 1e3, Best: j.speed(res.Best.Median),
		BestSpread: res.Best.Spread, BestSamples: len(res.Best.Seconds), BestConfirmed: res.Best.Confirmed,
		Seconds: time.Since(begin).Seconds(), Trace: res.Best.Trace.String(),
	}
	if t.arch != "" {
		sum.Threads = 0
	}
	if d := res.Default; d != nil && d.OK() {
		sum.DefaultMs = d.Median * 1e3
	}
	if !math.IsInf(baseSeconds, 0) {
		sum.StartMs, sum.Start, sum.Speedup = baseSeconds*1e3, j.speed(baseSeconds), baseSeconds/res.Best.Median
	}
	sum.searchBestMs = sum.BestMs
	sum.readable = sum.Trace
	if simple, err := res.Best.Trace.Simplified(j.Case.Func); err == nil {
		sum.readable = simple.String()
	}
	if keptStart {
		sum.KeptStart = true
		sum.BestMs, sum.Best, sum.Speedup = sum.StartMs, sum.Start, 1
		sum.BestSpread, sum.BestSamples, sum.BestConfirmed = 0, 0, 0
		sum.Trace = ""
	}
	return sum, best, nil
}

// noneRan says why no candidate ran correctly: how many were tried and
// the distinct reasons of the first failures.
func noneRan(res *autotune.Result) error {
	if res == nil || len(res.Records) == 0 {
		return fmt.Errorf("no candidate was measured")
	}
	var reasons []string
	seen := map[string]bool{}
	for _, r := range res.Records {
		reason := firstLine(r.Error)
		if reason == "" || seen[reason] {
			continue
		}
		seen[reason] = true
		if len(reasons) == 3 {
			reasons = append(reasons, "...")
			break
		}
		reasons = append(reasons, reason)
	}
	return fmt.Errorf("none of the %d candidates ran correctly; the reasons:\n  %s", len(res.Records), strings.Join(reasons, "\n  "))
}

// firstLine is s up to its first newline, cut to 300 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func workloadNames() string {
	var names []string
	for _, w := range bench.Workloads {
		names = append(names, w.Name)
	}
	return strings.Join(names, ", ")
}

// writeKernel writes a function's kernel into dir as a self-contained
// result: NAME.ll (the LLVM IR), NAME.o (the object file), NAME.h (the C
// header, whose comment shows the cc line that links it) and loomrt.c
// (loom's runtime, which runs the parallel loops). The kernel's C symbol
// is name.
func writeKernel(dir, name string, f *ast.Func) ([]string, error) {
	m, err := llvm.Lower(f, llvm.Options{Symbol: name})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ll, obj, h, rt := filepath.Join(dir, name+".ll"), filepath.Join(dir, name+".o"), filepath.Join(dir, name+".h"), filepath.Join(dir, "loomrt.c")
	if err := os.WriteFile(ll, []byte(m.String()), 0o644); err != nil {
		return nil, err
	}
	if err := native.WriteObject(m, obj); err != nil {
		return nil, err
	}
	if err := os.WriteFile(h, []byte(withUsage(m.Header(), name, "")), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(rt, native.RuntimeSource(), 0o644); err != nil {
		return nil, err
	}
	return []string{ll, obj, h, rt}, nil
}

// withUsage puts into a kernel's header, after its first line, how to
// link it, and note (comment lines, or "") at the end of that comment.
func withUsage(header, name, note string) string {
	usage := fmt.Sprintf("/*\n * Build a program that calls %s with the files of this directory:\n *\n *   cc -O2 -pthread -I. your_program.c %s.o loomrt.c -lm\n *\n * (loomrt.c is loom's runtime: the thread pool of the parallel loops;\n * LOOM_NUM_THREADS sets its size, all cores by default.)\n%s */\n", name, name, note)
	if i := strings.Index(header, "\n"); i >= 0 {
		header = header[:i+1] + usage + header[i+1:]
	}
	return header
}

// symbolName makes a C identifier of a kernel's name.
func symbolName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "kernel"
	}
	return string(b)
}

// outNames returns the file and symbol name of each job's kernel: -name
// for a single kernel (NAME_0, NAME_1, ... for the kernels of a graph),
// else the job's name, as the user typed it (gemm, not matmul).
func outNames(jobs []*job, name string) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		switch {
		case name == "":
			out[i] = symbolName(j.Name)
		case len(jobs) == 1:
			out[i] = name
		default:
			out[i] = fmt.Sprintf("%s_%d", name, i)
		}
	}
	return out
}

// writeCUDAKernel returns a writer of a function's CUDA C source (the
// kernels and their launch shapes in a comment) for arch.
func writeCUDAKernel(arch string) func(dir, name string, f *ast.Func) ([]string, error) {
	return func(dir, name string, f *ast.Func) ([]string, error) {
		m, err := cuda.Lower(f, cuda.Options{Arch: arch})
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		var launches strings.Builder
		for _, k := range m.Kernels {
			var grid []string
			for _, e := range k.Grid {
				grid = append(grid, ast.Print(e))
			}
			fmt.Fprintf(&launches, "// %s<<<(%s), (%d, %d, %d)>>>\n", k.Name, strings.Join(grid, ", "), k.Block[0], k.Block[1], k.Block[2])
		}
		cu := filepath.Join(dir, name+".cu")
		if err := os.WriteFile(cu, []byte(launches.String()+m.Source), 0o644); err != nil {
			return nil, err
		}
		return []string{cu}, nil
	}
}

// runWorker serves one candidate measurement for loom tune (internal).
func runWorker(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		return runClusterWorker(args, stdout, stderr)
	}
	if err := autotune.ServeWorker(os.Stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "loom worker:", err)
		return 1
	}
	return 0
}
