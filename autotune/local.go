package autotune

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
)

// WorkerEnv is the environment variable that makes a process a tuning
// worker: Local starts the program it runs in again with WorkerEnv=1,
// and this package's initialization, before the program's main, serves
// the one measurement asked on its standard input and exits. A program
// that tunes through Local needs nothing in its main for it.
const WorkerEnv = "LOOM_AUTOTUNE_WORKER"

func init() {
	if os.Getenv(WorkerEnv) != "1" {
		return
	}
	if err := ServeWorker(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loom worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// LocalOptions say how Local tunes on this machine; the zero value is
// loom tune's defaults.
type LocalOptions struct {
	Threads int    // threads the kernel runs on; 0: one per core
	Trials  int    // candidates to measure (of all kernels, for a model); 0: 64 (per kernel)
	Seed    uint64 // the same seed gives the same search
	// Confirm is how many of the fastest candidates are measured again
	// after the search; 0: 6 (2 per kernel of a model), negative: none.
	Confirm int
	// DB is the tuning database's path; "": tuning.jsonl in loom's cache
	// directory (where loom tune keeps it).
	DB string
	// CacheDir is where compiled kernels are kept; "": loom's cache
	// directory ($LOOM_CACHE_DIR, else loom/ in the user's cache).
	CacheDir string
	Timeout  time.Duration // per candidate; 0: a minute
	// Progress, when not nil, is where the search's progress goes: a line
	// redrawn on a terminal, else a line per round.
	Progress io.Writer
	// Budget, for a model (TuneModel), is the tuning time; 0: Trials
	// alone.
	Budget time.Duration
}

// Local is what tuning on this CPU needs, as loom tune sets it up: a
// builder into loom's kernel cache, a runner whose workers are this
// program started again (see WorkerEnv), the database, the search
// options and the host's target. Close removes the runner's temporary
// files.
type Local struct {
	Builder Builder
	Runner  *ProcessRunner
	DB      *Database
	Options Options
	Target  Target
	// TargetKey names the target in records: this CPU at Threads.
	TargetKey string
	Threads   int
	budget    time.Duration
	progress  io.Writer
}

// NewLocal sets up tuning on this machine with o (see LocalOptions).
func NewLocal(o LocalOptions) (*Local, error) {
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	cache, err := native.DefaultCache()
	if o.CacheDir != "" {
		cache, err = native.NewCache(o.CacheDir)
	}
	if err != nil {
		return nil, err
	}
	path := o.DB
	if path == "" {
		path = filepath.Join(cache.Dir, "tuning.jsonl")
	}
	db, err := OpenDatabase(path)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	confirm := o.Confirm
	switch {
	case confirm == 0:
		confirm = 6
	case confirm < 0:
		confirm = 0
	}
	l := &Local{
		Builder:   &LocalBuilder{Cache: cache, Parallel: runtime.NumCPU()},
		Runner:    &ProcessRunner{Command: []string{exe}, Env: []string{WorkerEnv + "=1"}, CacheDir: cache.Dir, Threads: threads, Timeout: o.Timeout},
		DB:        db,
		Options:   Options{Trials: o.Trials, Seed: o.Seed, Population: 32, Batch: 8, DB: db, Confirm: confirm},
		Target:    HostTarget(threads),
		TargetKey: TargetKey(llvm.Host(), threads),
		Threads:   threads,
		budget:    o.Budget,
		progress:  o.Progress,
	}
	return l, nil
}

// Close removes the runner's temporary files (its reference outputs).
func (l *Local) Close() error { return l.Runner.Close() }

// Task is the task of tuning f at sizes (its symbolic sizes' values) on
// l's target with the default rules, named name.
func (l *Local) Task(name string, f *ast.Func, sizes map[string]int64) *Task {
	return &Task{Name: name, Func: f, Sizes: sizes, Target: l.TargetKey, Space: &Space{Rules: DefaultRules(), Target: l.Target}}
}

// Tune tunes f at sizes: one call for what loom tune -func does. The
// result's best record replays on f (Record.Apply); every record is in
// l.DB.
func (l *Local) Tune(ctx context.Context, name string, f *ast.Func, sizes map[string]int64) (*Result, error) {
	o := l.Options
	if l.progress != nil {
		o.Progress = PrintProgress(l.progress, name)
	}
	return Tune(ctx, l.Task(name, f, sizes), l.Builder, l.Runner, o)
}

// TuneModel tunes tasks as one model (see TuneModel), within the budget
// of the options l was made with or their trials, keeping its state and
// cost model beside l.DB so that the same call continues a stopped run.
func (l *Local) TuneModel(ctx context.Context, tasks []ModelTask) (*ModelResult, error) {
	o := ModelOptions{Options: l.Options, Budget: l.budget, State: l.DB.Path + ".state.json", ModelFile: l.DB.Path + ".model.json"}
	o.Confirm = min(o.Confirm, 2)
	if o.Trials == 0 && o.Budget == 0 {
		o.Trials = 64 * len(tasks)
	}
	if l.progress != nil {
		o.OnRound = PrintModelProgress(l.progress)
	}
	return TuneModel(ctx, tasks, l.Builder, l.Runner, o)
}
