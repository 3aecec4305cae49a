package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// runReplay applies the best tuning record of a function and prints its
// schedule as Go code.
func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("replay", "(-workload W [-size N|NAME=VALUE,...] | -graph GRAPH.json -size NAME=VALUE... | -func FILE.loom -size NAME=VALUE...) [-db FILE] [-threads T]",
		`Finds the best record of the tuning database for the function on this
machine, replays its trace (checking that it still applies), and prints the
schedule as a Go function over loom's schedule API, with the record's
measured time: paste it into a program to schedule the function the same
way without the database. The function makes every step the tuner applied,
with the record's decisions written into them (split factors, unroll
limits), each block and loop looked up once and named after itself, so
that it rebuilds exactly the function loom lower prints and loom bench
-schedule tuned runs.`, stderr)
	var src source
	src.register(fs)
	var rf recordFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per function: the record's facts and the Go code")
	jobs, code, ok := src.parse(fs, args, stderr)
	if !ok {
		return code
	}
	if !rf.check(fs, stderr) {
		return 2
	}
	status := 0
	for _, j := range jobs {
		r, err := rf.best(j)
		var s *schedule.Schedule
		if err == nil {
			s, err = replayRecord(r, j)
		}
		if err != nil {
			fmt.Fprintf(stderr, "loom replay: %s: %s\n", j.Name, schedule.Explain(err))
			status = 1
			continue
		}
		// The trace as a person would write it: look-ups made once,
		// decisions written into the primitives, variables named after
		// the blocks and loops (it rebuilds the same function, or
		// Simplified says why not and the full trace prints).
		tr := s.Trace()
		if simple, err := tr.Simplified(j.Case.Func); err == nil {
			tr = simple
		} else {
			fmt.Fprintf(stderr, "loom replay: %s: printing the trace as recorded: %v\n", j.Name, err)
		}
		if *asJSON {
			json.NewEncoder(stdout).Encode(replayed{
				Kernel: j.Name, Shape: j.Shape, RecordShape: recordShape(r), SameSizes: sameRecordSizes(r, j),
				Target: r.Target, Ms: r.Median * 1e3, Speed: j.speed(r.Median), Runs: len(r.Seconds),
				Measured: r.Time.Format(time.RFC3339), Version: r.Version, Run: r.Run, Trial: r.Trial,
				Hash: ast.Hash(s.Func()).String(), Go: tr.Go(),
			})
			continue
		}
		if !sameRecordSizes(r, j) {
			fmt.Fprintf(stdout, "// No record of %s at %s: this is the best of %s (-any-size); its time is of those sizes, not these.\n", j.Name, j.Shape, recordShape(r))
		}
		fmt.Fprintf(stdout, "// Schedule of %s (%s, workload %.12s) on %s:\n// %.3f ms (%s) median of %d runs, measured %s by %s, run %q trial %d.\n"+
			"// Given sch, a new schedule of the function, apply(sch) rebuilds the tuned function (structural hash %.12s).\n%s",
			j.Name, j.Shape, ast.Hash(j.Case.Func).String(), r.Target, r.Median*1e3, j.speed(r.Median), len(r.Seconds),
			r.Time.Format("2006-01-02 15:04"), r.Version, r.Run, r.Trial, ast.Hash(s.Func()).String(), tr.Go())
	}
	return status
}

// replayed is loom replay -json's line.
type replayed struct {
	Kernel      string  `json:"kernel"`
	Shape       string  `json:"shape"`
	RecordShape string  `json:"record_shape"` // the sizes the record was measured at
	SameSizes   bool    `json:"same_sizes"`   // false: a record of another size (-any-size)
	Target      string  `json:"target"`
	Ms          float64 `json:"ms"`
	Speed       string  `json:"speed"`
	Runs        int     `json:"runs"`
	Measured    string  `json:"measured"`
	Version     string  `json:"version"`
	Run         string  `json:"run"`
	Trial       int     `json:"trial"`
	Hash        string  `json:"hash"` // of the function the schedule builds
	Go          string  `json:"go"`   // the schedule as Go code
}
