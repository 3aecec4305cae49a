package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/loom-go/loom/autotune"
)

// modelRun says how a model is tuned: within a budget, a number of
// trials in all (0: none), by the scheduler or one kernel after another.
type modelRun struct {
	budget     time.Duration
	trials     int
	sequential bool
}

// modelConfirm is how many leaders of each kernel of a model are
// measured again at the end (at most; -confirm lowers it).
const modelConfirm = 2

// modelRound is what -json prints after every round of a model's tuning.
type modelRound struct {
	Round       int            `json:"round"`
	Task        string         `json:"task,omitempty"` // the task the round went to
	TaskBestMs  float64        `json:"task_best_ms,omitempty"`
	Trials      int            `json:"trials"`
	Failed      int            `json:"failed"`
	ElapsedS    float64        `json:"elapsed_s"`
	SpentS      float64        `json:"spent_s"`                 // by every run of these tasks
	BudgetLeftS float64        `json:"budget_left_s,omitempty"` // with -budget
	EstimateMs  float64        `json:"estimate_ms"`             // the model's time as tuned so far
	DefaultMs   float64        `json:"default_ms"`              // its time with the default schedules
	Measured    int            `json:"measured"`                // tasks with a time
	Tasks       int            `json:"tasks"`                   // distinct kernels
	Confirming  bool           `json:"confirming,omitempty"`    // the leaders are measured again
	TotalTrials int            `json:"total_trials,omitempty"`  // with -trials
	Busy        bool           `json:"busy,omitempty"`          // on the last line: see modelSummary
	Variation   float64        `json:"variation,omitempty"`     // idem
	Kind        string         `json:"kind"`                    // "round" or "model" (the last line)
	Kernels     []kernelResult `json:"kernels,omitempty"`       // on the last line
}

// kernelResult is one task of the model in the last -json line.
type kernelResult struct {
	Kernel    string   `json:"kernel"`
	Kernels   []string `json:"kernels"` // the graph's kernels it stands for
	Weight    int      `json:"weight"`
	Shape     string   `json:"shape"`
	Trials    int      `json:"trials"`
	Resumed   int      `json:"resumed,omitempty"` // records of earlier runs it started from
	BestMs    float64  `json:"best_ms,omitempty"`
	Spread    float64  `json:"best_spread,omitempty"`
	Samples   int      `json:"best_samples,omitempty"`
	Confirmed int      `json:"best_confirmed,omitempty"`
	DefaultMs float64  `json:"default_ms,omitempty"`
	Trace     string   `json:"trace,omitempty"`
}

// tuneModel tunes jobs, the kernels of a graph, as one model: its
// distinct kernels are the tasks, weighted by how many kernels each
// stands for, and the task scheduler (autotune.TuneModel) gives the
// rounds within budget or trials (0: none). The run's state and the cost
// model are kept beside the database, so that the same command run again
// continues. It writes the best kernels with -out and returns the exit
// status.
func (t *tuner) tuneModel(ctx context.Context, jobs []*job, names []string, run modelRun, dbPath, out string, asJSON, quiet bool, stdout, stderr io.Writer) int {
	budget, trials := run.budget, run.trials
	tasks := tasksOf(t, jobs)
	// Timed as the model runs them, with the weights out of the caches,
	// by this machine's workers or a work queue's (each job says which
	// parameters to flush); a GPU has no such flush.
	if t.arch == "" {
		for i, task := range tasks {
			task.SetCold(jobs[i].weights)
		}
	}
	distinct := autotune.DistinctTasks(tasks)
	opts := autotune.ModelOptions{
		Options:    t.opts,
		Budget:     budget,
		State:      dbPath + ".state.json",
		ModelFile:  dbPath + ".model.json",
		Sequential: run.sequential,
	}
	opts.Trials = trials
	// Two leaders a kernel, beside its default schedule: a model has
	// tens of kernels, and confirming six of each would take much of a
	// short budget.
	opts.Confirm = min(opts.Confirm, modelConfirm)
	tty := autotune.IsTerminal(stderr)
	show := autotune.PrintModelProgress(stderr)
	opts.OnRound = func(p autotune.ModelProgress) {
		if asJSON {
			json.NewEncoder(stdout).Encode(roundLine(p))
		}
		if !quiet {
			show(p)
		}
	}
	if !quiet {
		left := "no time limit"
		if budget > 0 {
			left = "a budget of " + budget.String()
		}
		fmt.Fprintf(stderr, "loom tune: %d kernels, %d distinct; %s", len(jobs), len(distinct), left)
		if trials > 0 {
			fmt.Fprintf(stderr, ", at most %d trials", trials)
		}
		fmt.Fprintf(stderr, "; state in %s\n", opts.State)
	}
	res, err := autotune.TuneModel(ctx, distinct, t.builder, t.runner, opts)
	if tty && !quiet {
		fmt.Fprintln(stderr)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "loom tune:", err)
		return 1
	}
	if res == nil {
		fmt.Fprintln(stderr, "loom tune: interrupted; the records measured so far are in", dbPath)
		return 130
	}
	if t.finishCampaign != nil && ctx.Err() == nil {
		if err := t.finishCampaign(); err != nil {
			fmt.Fprintln(stderr, "loom tune:", err)
		}
	}
	var kernels []kernelResult
	status := 0
	for d, tr := range res.Tasks {
		k := kernelResult{Kernel: tr.Task.Name, Weight: tr.Weight, Shape: tr.Task.Shape, Trials: tr.Trials, Resumed: tr.Resumed}
		for _, i := range distinct[d].Members {
			k.Kernels = append(k.Kernels, jobs[i].Name)
		}
		if b := tr.Best; b != nil {
			k.BestMs, k.Spread, k.Samples, k.Confirmed, k.Trace = b.Median*1e3, b.Spread, len(b.Seconds), b.Confirmed, b.Trace.String()
		}
		if tr.Default.OK() {
			k.DefaultMs = tr.Default.Median * 1e3
		}
		if n := len(tr.Result.Internal); n > 0 {
			fmt.Fprintf(stderr, "loom tune: %s: BUG: loom's own checks rejected %d candidates (recorded as failed in %s); the first: %s\n", tr.Task.Name, n, dbPath, tr.Result.Internal[0].Error)
			status = 1
		}
		kernels = append(kernels, k)
		if out == "" || tr.Best == nil {
			continue
		}
		write := writeKernel
		if t.arch != "" {
			write = writeCUDAKernel(t.arch)
		}
		for _, i := range distinct[d].Members {
			// The task's function is the kernels' canonical form: each
			// kernel is built under its own names.
			f, err := tr.Best.Apply(tasks[i].Func)
			if err != nil {
				fmt.Fprintf(stderr, "loom tune: %s: %v\n", jobs[i].Name, err)
				return 1
			}
			if _, err := write(out, names[i], f); err != nil {
				fmt.Fprintln(stderr, "loom tune:", err)
				return 1
			}
		}
	}
	if asJSON {
		last := roundLine(autotune.ModelProgress{Round: res.Rounds, Trials: res.Trials, Spent: res.Spent, Estimate: res.Estimate, Default: res.Default, Tasks: len(res.Tasks), Measured: len(res.Tasks)})
		last.Kind, last.Busy, last.Variation, last.Kernels = "model", res.Busy, res.Variation, kernels
		json.NewEncoder(stdout).Encode(last)
	} else {
		printModel(stdout, res, kernels, dbPath)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "loom tune: interrupted; the records measured so far are in", dbPath, "and the same command continues the run")
		return 130
	}
	if res.Busy {
		fmt.Fprintf(stderr, "loom tune: the machine was busy: repeated timings of the best kernels varied by %.0f%% (median coefficient of variation; above %.0f%% the figures are not to be trusted to better than that)\n", 100*res.Variation, 100*autotune.BusyVariation)
	}
	return status
}

func roundLine(p autotune.ModelProgress) modelRound {
	r := modelRound{
		Kind: "round", Round: p.Round, Task: p.Task, Trials: p.Trials, Failed: p.Failed,
		ElapsedS: p.Elapsed.Seconds(), SpentS: p.Spent.Seconds(),
		EstimateMs: p.Estimate * 1e3, DefaultMs: p.Default * 1e3, Measured: p.Measured, Tasks: p.Tasks,
		Confirming: p.Confirming, TotalTrials: p.TotalTrials,
	}
	if !math.IsInf(p.TaskBest, 0) {
		r.TaskBestMs = p.TaskBest * 1e3
	}
	if p.Budget > 0 {
		r.BudgetLeftS = max(p.Budget-p.Spent, 0).Seconds()
	}
	return r
}

// printModel prints the model's result: a line per distinct kernel and
// the model's time.
func printModel(w io.Writer, res *autotune.ModelResult, kernels []kernelResult, dbPath string) {
	fmt.Fprintf(w, "model: %.3f ms tuned, %.3f ms with the default schedules (%.2fx), %d trials in %d rounds this run, %s spent in all\n",
		res.Estimate*1e3, res.Default*1e3, res.Default/math.Max(res.Estimate, 1e-300), res.Trials, res.Rounds, res.Spent.Round(time.Second))
	for _, k := range kernels {
		times := "none ran"
		if k.BestMs > 0 {
			times = fmt.Sprintf("best %.4f ms (median of %d samples, IQR %.1f%%", k.BestMs, k.Samples, 100*k.Spread)
			if k.Confirmed > 0 {
				times += fmt.Sprintf(", confirmed in %d rounds", k.Confirmed)
			}
			times += ")"
			if k.DefaultMs > 0 {
				times += fmt.Sprintf(", default %.4f ms", k.DefaultMs)
			}
		}
		resumed := ""
		if k.Resumed > 0 {
			resumed = fmt.Sprintf(", %d from earlier runs", k.Resumed)
		}
		fmt.Fprintf(w, "  %s x%d %s: %s%s, %s\n", k.Kernel, k.Weight, k.Shape, plural(k.Trials, "trial"), resumed, times)
	}
	fmt.Fprintf(w, "records appended to %s\n", dbPath)
}

// tasksOf is the tuning task of every job.
func tasksOf(t *tuner, jobs []*job) []*autotune.Task {
	var out []*autotune.Task
	for _, j := range jobs {
		out = append(out, t.task(j))
	}
	return out
}

// plural is "1 trial", "2 trials".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
