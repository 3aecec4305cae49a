package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/schedule"
)

// runLower prints a function before and after a schedule: a trace file,
// or the best tuning record.
func runLower(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("lower", "(-workload W [-size N|NAME=VALUE,...] | -graph GRAPH.json -size NAME=VALUE... | -func FILE.loom -size NAME=VALUE...) [-trace FILE | -default | -db FILE] [flags]",
		`Prints the function before and after a schedule: the trace in -trace (JSON,
as records store it, or the text form traces print in), or else the best
record of the tuning database for this machine, or with -default the schedule
loom decides without tuning. The trace is replayed up to
its post-processing (enter_postproc) and finished as the tuner finishes a
candidate (the sampled unroll limits and vector widths), so that an edited
decision takes effect; the schedule printed is the one applied.

-stages prints the function after every step of the schedule that changed
it, then the code generator's remarks (where it did less than the
schedule asked: a vectorized loop that runs as scalar code, and why).
-emit prints the code as it is compiled: ll (loom's LLVM IR), opt (after
opt -O3) or asm (llc's assembly), with the flags of the real build.`, stderr)
	var src source
	src.register(fs)
	var rf recordFlags
	rf.register(fs)
	tracePath := fs.String("trace", "", "a trace file to apply instead of the best record")
	dflt := fs.Bool("default", false, "apply the schedule loom decides without tuning (autotune.Default, for -threads) instead of the best record")
	refine := fs.Int("refine", 0, "with -default, refine it by the cost model: the best of the default and this many sampled schedules (0 to 256) by the model's score (autotune.Refine; nothing is run)")
	asJSON := fs.Bool("json", false, "print one JSON object per function: kernel, shape, before, schedule, after (texts), and stages, remarks, code when asked")
	stages := fs.Bool("stages", false, "print the function after every step of the schedule, and the code generator's remarks")
	emit := fs.String("emit", "", "also print the code: ll (loom's LLVM IR), opt (after opt -O3) or asm (llc's assembly)")
	jobs, code, ok := src.parse(fs, args, stderr)
	if !ok {
		return code
	}
	if !rf.check(fs, stderr) || !inRange(fs, stderr, "refine", *refine, 0, maxRefine) || !notBoth(fs, stderr, "default", "trace") ||
		!onlyWith(fs, stderr, *dflt, "with -default", "refine") ||
		!onlyWith(fs, stderr, !*dflt && *tracePath == "", "to the best record (not -default or -trace)", "any-size") {
		return 2
	}
	switch *emit {
	case "", "ll", "opt", "asm":
	default:
		fmt.Fprintf(stderr, "loom lower: unknown -emit %q (have ll, opt, asm)\n", *emit)
		return 2
	}
	status := 0
	for _, j := range jobs {
		f := j.Case.Func
		var err error
		var s *schedule.Schedule
		var steps []stage
		hook := schedule.OnStep(func(in schedule.Inst, g *ast.Func) {
			if *stages && (len(steps) == 0 && g != f || len(steps) > 0 && g != steps[len(steps)-1].f) {
				steps = append(steps, stage{in, g})
			}
		})
		switch {
		case *dflt:
			threads := rf.threads
			if threads <= 0 {
				threads = runtime.NumCPU()
			}
			if *refine > 0 {
				var m autotune.Model
				var r *autotune.Refined
				if m, err = rf.model(); err == nil {
					if r, err = autotune.Refine(f, autotune.HostTarget(threads), autotune.RefineOptions{Candidates: *refine, Model: m, Sizes: j.Case.Sizes}); err == nil {
						s = r.Schedule
						fmt.Fprintf(stderr, "loom lower: %s: refined among %d schedules: score %.3f, the default's %.3f\n", j.Name, r.Ranked, r.Score, r.DefaultScore)
					}
				}
			} else {
				s, err = autotune.Default(f, autotune.HostTarget(threads))
			}
			if err == nil {
				s, err = autotune.Replay(f, s.Trace(), hook)
			}
		case *tracePath != "":
			var trace *schedule.Trace
			if trace, err = readTrace(*tracePath); err == nil {
				if s, err = autotune.Replay(f, trace, hook); err == nil {
					noteReplacedSteps(stderr, "lower", *tracePath, trace, s.Trace())
				}
			}
		default:
			var r *autotune.Record
			if r, err = rf.best(j); err == nil {
				s, err = replayRecord(r, j, hook)
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
		out := lowered{Kernel: j.Name, Shape: j.Shape, Before: ast.Print(f), Schedule: s.Trace().String(), After: ast.Print(s.Func())}
		for _, st := range steps {
			out.Stages = append(out.Stages, loweredStage{Step: st.in.String(), Func: ast.Print(st.f)})
		}
		if *stages || *emit != "" {
			m, err := llvm.Lower(s.Func(), llvm.Options{})
			if err == nil && *emit != "" {
				out.Code = m.String()
				if *emit != "ll" {
					out.Code, err = native.Emit(m, *emit)
				}
			}
			if err != nil {
				fmt.Fprintf(stderr, "loom lower: %s: %v\n", j.Name, err)
				status = 1
				continue
			}
			out.Remarks = m.Remarks
			if !*stages {
				out.Remarks = nil
			}
		}
		if *asJSON {
			json.NewEncoder(stdout).Encode(out)
			continue
		}
		fmt.Fprintf(stdout, "// %s before:\n%s\n", j.Name, out.Before)
		if *stages {
			for i, st := range out.Stages {
				fmt.Fprintf(stdout, "// stage %d: after %s\n%s\n", i+1, st.Step, st.Func)
			}
		}
		fmt.Fprintf(stdout, "// schedule:\n%s\n// %s after:\n%s", indent(out.Schedule), j.Name, out.After)
		if *stages {
			fmt.Fprintf(stdout, "// code generator remarks:\n")
			if len(out.Remarks) == 0 {
				fmt.Fprintf(stdout, "//   none: the code does all the schedule asks\n")
			}
			for _, r := range out.Remarks {
				fmt.Fprintf(stdout, "//   %s\n", r)
			}
		}
		if *emit != "" {
			fmt.Fprintf(stdout, "// %s code (%s):\n%s", j.Name, *emit, out.Code)
		}
	}
	return status
}

// stage is the function after one step of a schedule.
type stage struct {
	in schedule.Inst
	f  *ast.Func
}

// loweredStage is one stage in loom lower -json's line.
type loweredStage struct {
	Step string `json:"step"` // the instruction, in the trace's text form
	Func string `json:"func"`
}

// lowered is loom lower -json's line.
type lowered struct {
	Kernel   string `json:"kernel"`
	Shape    string `json:"shape"`
	Before   string `json:"before"`   // the function, in loom's text form
	Schedule string `json:"schedule"` // the trace, in its text form
	After    string `json:"after"`
	// With -stages: the function after each step that changed it, and
	// the code generator's remarks; with -emit: the code.
	Stages  []loweredStage `json:"stages,omitempty"`
	Remarks []string       `json:"remarks,omitempty"`
	Code    string         `json:"code,omitempty"`
}

// indent prefixes every line with "//   ".
func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString("//   " + line + "\n")
	}
	return b.String()
}
