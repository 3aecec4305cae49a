package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/schedule"
)

// runLower prints a function before and after a schedule: a trace file,
// or the best tuning record.
func runLower(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("lower", "(-workload W [-size N|NAME=VALUE,...] | -graph GRAPH.json -size NAME=VALUE... | -func FILE.loom -size NAME=VALUE...) [-trace FILE | -db FILE] [flags]",
		`Prints the function before and after a schedule: the trace in -trace (JSON,
as records store it, or the text form traces print in), or else the best
record of the tuning database for this machine. The trace is replayed up to
its post-processing (enter_postproc) and finished as the tuner finishes a
candidate (the sampled unroll limits and vector widths), so that an edited
decision takes effect; the schedule printed is the one applied.`, stderr)
	var src source
	src.register(fs)
	var rf recordFlags
	rf.register(fs)
	tracePath := fs.String("trace", "", "a trace file to apply instead of the best record")
	asJSON := fs.Bool("json", false, "print one JSON object per function: kernel, shape, before, schedule, after (texts)")
	jobs, code, ok := src.parse(fs, args, stderr)
	if !ok {
		return code
	}
	status := 0
	for _, j := range jobs {
		f := j.Case.Func
		var err error
		var s *schedule.Schedule
		if *tracePath != "" {
			var trace *schedule.Trace
			if trace, err = readTrace(*tracePath); err == nil {
				s, err = autotune.Replay(f, trace)
			}
		} else {
			var r *autotune.Record
			if r, err = rf.best(j); err == nil {
				s, err = replayRecord(r, j)
				if err == nil && !sameRecordSizes(r, j) {
					fmt.Fprintf(stderr, "loom lower: %s: no record at %s; using the best of %s (-any-size)\n", j.Name, j.Shape, recordShape(r))
				}
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "loom lower: %s: %s\n", j.Name, schedule.Explain(err))
			status = 1
			continue
		}
		if *asJSON {
			json.NewEncoder(stdout).Encode(lowered{Kernel: j.Name, Shape: j.Shape, Before: ast.Print(f), Schedule: s.Trace().String(), After: ast.Print(s.Func())})
			continue
		}
		fmt.Fprintf(stdout, "// %s before:\n%s\n// schedule:\n%s\n// %s after:\n%s", j.Name, ast.Print(f), indent(s.Trace().String()), j.Name, ast.Print(s.Func()))
	}
	return status
}

// lowered is loom lower -json's line.
type lowered struct {
	Kernel   string `json:"kernel"`
	Shape    string `json:"shape"`
	Before   string `json:"before"`   // the function, in loom's text form
	Schedule string `json:"schedule"` // the trace, in its text form
	After    string `json:"after"`
}

// indent prefixes every line with "//   ".
func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString("//   " + line + "\n")
	}
	return b.String()
}
