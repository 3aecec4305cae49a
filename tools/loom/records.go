package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

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
}

func (rf *recordFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&rf.db, "db", "", "the tuning database (default: tuning.jsonl in loom's cache directory)")
	fs.IntVar(&rf.threads, "threads", 0, "the thread count the records were tuned for (0: one per core)")
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

func (rf *recordFlags) target() string {
	nt := rf.threads
	if nt <= 0 {
		nt = runtime.NumCPU()
	}
	return autotune.TargetKey(llvm.Host(), nt)
}

// best returns the fastest record of f on the target that replays.
func (rf *recordFlags) best(f *ast.Func) (*autotune.Record, error) {
	db, err := rf.open()
	if err != nil {
		return nil, err
	}
	r, _, err := db.BestFor(f, rf.target())
	if err != nil {
		return nil, fmt.Errorf("%s in %s: %v", f.Name, db.Path, err)
	}
	if r == nil {
		return nil, fmt.Errorf("%s has no successful record for %s in %s (run loom tune on it first)", f.Name, rf.target(), db.Path)
	}
	return r, nil
}

// readTrace reads a trace file, as JSON or as text.
func readTrace(path string) (*schedule.Trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if t, err := schedule.ParseTrace(data); err == nil {
		return t, nil
	}
	t, err := schedule.ParseTraceText(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return t, nil
}
