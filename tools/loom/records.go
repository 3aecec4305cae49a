package main

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"runtime"
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
}

func (rf *recordFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&rf.db, "db", "", "the tuning database (default: tuning.jsonl in loom's cache directory)")
	fs.IntVar(&rf.threads, "threads", 0, "the thread count the records were tuned for (0: one per core)")
	fs.BoolVar(&rf.anySize, "any-size", false, "when no record was measured at these sizes, use the best one of another size whose schedule applies (its time says nothing of these sizes)")
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
	return autotune.OpenDatabase(path)
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
	r, _, err := db.BestFor(f, j.Case.Sizes, rf.target())
	if r == nil && err == nil && rf.anySize {
		r, _, err = db.BestAnySize(f, j.Name, j.Case.Sizes, rf.target())
	}
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %v", j.Name, db.Path, err)
	}
	if r != nil {
		return r, nil
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
		opts = append(opts, schedule.AdaptDecisions())
	}
	return autotune.Replay(j.Case.Func, r.Trace, opts...)
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
	return r.Workload == ast.Hash(j.Case.Func).String() && (maps.Equal(r.Sizes, j.Case.Sizes) || len(r.Sizes) == 0 && len(j.Case.Sizes) == 0)
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
