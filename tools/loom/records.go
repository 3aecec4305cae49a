package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/schedule"
)

// recordFlags select tuning records: the database, and the target they
// were measured on.
type recordFlags struct {
	db      string
	threads int
	anySize bool
	// warn, when set, is where damage a read of the database skipped is
	// said (once: the database is opened once).
	warn   io.Writer
	cmd    string // the command's name, for that message
	opened *autotune.Database
}

func (rf *recordFlags) register(fs *flag.FlagSet) {
	rf.warn, rf.cmd = fs.Output(), fs.Name()
	fs.StringVar(&rf.db, "db", "", "the tuning database (default: tuning.jsonl in loom's cache directory)")
	fs.IntVar(&rf.threads, "threads", 0, "the thread count the records were tuned for (0: one per core)")
	fs.BoolVar(&rf.anySize, "any-size", false, "when no record was measured at these sizes, use the best one of another size whose schedule applies (its time says nothing of these sizes)")
}

// check checks the flags' values (see threadsOK, dbOK), saying on stderr
// what is wrong.
func (rf *recordFlags) check(fs *flag.FlagSet, stderr io.Writer) bool {
	return threadsOK(fs, stderr, rf.threads) && dbOK(fs, stderr, rf.db)
}

func (rf *recordFlags) open() (*autotune.Database, error) {
	path := rf.db
	if path == "" {
		cache, err := native.DefaultCache()
		if err != nil {
			return nil, err
		}
		path = defaultDB(cache)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no tuning database at %s (run loom tune first)", path)
	}
	if rf.opened == nil || rf.opened.Path != path {
		db, err := openDatabase(path, rf.cmd, rf.warn)
		if err != nil {
			return nil, err
		}
		rf.opened = db
	}
	return rf.opened, nil
}

// openDatabase opens a tuning database (autotune.OpenDatabase) whose
// damage, when a read finds some (a corrupt tail, garbage lines), is said
// once on warn (nil: not said), as a warning of command cmd.
func openDatabase(path, cmd string, warn io.Writer) (*autotune.Database, error) {
	db, err := autotune.OpenDatabase(path)
	if err != nil {
		return nil, err
	}
	if warn != nil {
		db.Warn = func(msg string) { fmt.Fprintf(warn, "loom %s: warning: %s\n", cmd, msg) }
	}
	return db, nil
}

// model returns the cost model that refines a default schedule: one
// trained on the database's records of this target when it has enough
// of them (autotune.ModelFromDatabase), else the one loom ships. A
// database that does not exist is no error: the shipped model.
func (rf *recordFlags) model() (autotune.Model, error) {
	db, err := rf.open()
	if err != nil {
		return autotune.DefaultModel(), nil
	}
	m, _, err := autotune.ModelFromDatabase(db, rf.target())
	return m, err
}

func (rf *recordFlags) target() string {
	nt := rf.threads
	if nt <= 0 {
		nt = runtime.NumCPU()
	}
	return autotune.TargetKey(llvm.Host(), nt)
}

// best returns the fastest record of the job on the target that replays,
// at the job's sizes (with -any-size, at other sizes when there is none).
// When there is none the error says what the database does have.
func (rf *recordFlags) best(j *job) (*autotune.Record, error) {
	db, err := rf.open()
	if err != nil {
		return nil, err
	}
	f := j.Case.Func
	// A model's kernels are tuned with their weights out of the caches
	// (autotune.Task.SetCold), as the model runs them: those records
	// first, as a module takes them.
	targets := []string{autotune.ColdTarget(rf.target()), rf.target()}
	for _, target := range targets {
		r, _, err := db.BestFor(f, j.Case.Sizes, target)
		if err != nil {
			return nil, fmt.Errorf("%s in %s: %v", j.Name, db.Path, err)
		}
		if r != nil {
			return r, nil
		}
	}
	if rf.anySize {
		for _, target := range targets {
			r, _, err := db.BestAnySize(f, j.Name, j.Case.Sizes, target)
			if err != nil {
				return nil, fmt.Errorf("%s in %s: %v", j.Name, db.Path, err)
			}
			if r != nil {
				return r, nil
			}
		}
	}
	msg := fmt.Sprintf("%s at %s has no successful record for %s in %s", j.Name, j.Shape, rf.target(), db.Path)
	have, _ := db.Holdings(j.Name)
	if len(have) == 0 {
		return nil, fmt.Errorf("%s, nor at any other size or target (run loom tune on it first)", msg)
	}
	hint := "run loom tune at these sizes and threads, or pick one of these with -size and -threads"
	if !rf.anySize {
		hint += " (or -any-size to try the best record of another size)"
	}
	return nil, fmt.Errorf("%s; it has:\n  %s\n%s", msg, strings.Join(have, "\n  "), hint)
}

// replayRecord replays a record's schedule on the job's function; a
// record of other sizes (-any-size) has its tilings fitted to these.
func replayRecord(r *autotune.Record, j *job, opts ...schedule.Option) (*schedule.Schedule, error) {
	if !sameRecordSizes(r, j) {
		return r.Adapt(j.Case.Func, opts...)
	}
	return r.Schedule(j.Case.Func, opts...)
}

// recordShape describes the sizes a record was measured at.
func recordShape(r *autotune.Record) string {
	switch {
	case r.Shape != "":
		return r.Shape
	case len(r.Sizes) > 0:
		return fmt.Sprint(r.Sizes)
	}
	return "workload " + r.Workload[:min(len(r.Workload), 12)]
}

// sameRecordSizes says whether a record was measured at the job's sizes.
func sameRecordSizes(r *autotune.Record, j *job) bool {
	f := j.Case.Func
	own := r.Workload == ast.Hash(f).String() || r.Workload == autotune.CanonicalWorkload(f)
	return own && (maps.Equal(r.Sizes, j.Case.Sizes) || len(r.Sizes) == 0 && len(j.Case.Sizes) == 0)
}

// noteReplacedSteps tells on w when a trace file's steps after its
// enter_postproc mark are not the ones the schedule got: loom replays a
// trace up to the mark and derives the rest (autotune.Replay), so steps
// written there by hand, or derived by another version of loom, are
// replaced, and the user should know which ones ran.
func noteReplacedSteps(w io.Writer, cmd, path string, written, built *schedule.Trace) {
	after := func(t *schedule.Trace) []string {
		lines := strings.Split(strings.TrimSpace(t.String()), "\n")
		for i, l := range lines {
			if strings.TrimSpace(l) == "enter_postproc()" {
				return lines[i+1:]
			}
		}
		return nil
	}
	got, want := after(written), after(built)
	if !written.HasPostproc() || slices.Equal(got, want) {
		return
	}
	fmt.Fprintf(w, "loom %s: %s: the %d steps after enter_postproc() were replaced by the %d loom derives from the steps before it (the unrolls and vector widths the decisions ask for); steps of your own go before enter_postproc()\n", cmd, path, len(got), len(want))
}

// readTrace reads a trace file, as JSON or as text.
// A file that starts with '{' is JSON, and its JSON error is the one
// reported; a file with no instructions is an error, not an empty
// schedule.
func readTrace(path string) (*schedule.Trace, error) {
	data, err := readInput(path)
	if err != nil {
		return nil, err
	}
	var t *schedule.Trace
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		t, err = schedule.ParseTrace(data)
	} else {
		t, err = schedule.ParseTraceText(string(data))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(t.Insts) == 0 {
		return nil, fmt.Errorf("%s holds no schedule instructions (want a trace as loom tune prints it, or as JSON)", path)
	}
	return t, nil
}
