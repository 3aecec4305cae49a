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
	"github.com/loom-go/loom/internal/hand"
	"github.com/loom-go/loom/module"
	"github.com/loom-go/loom/schedule"
	"github.com/loom-go/loom/tools/loom/internal/bench"
)

// runBuild compiles functions with a schedule chosen without tuning, into
// a directory a C program links against (like Halide's
// compile_to_static_library).
func runBuild(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("build", "(-workload W | -graph GRAPH.json | -func FILE.loom) [-size ...] [-schedule auto|default|tuned|hand|none | -trace FILE] -out DIR [-name NAME]",
		`Compiles a function with a schedule, without tuning, into DIR: NAME.o, NAME.h
(its comment shows the cc line that links it), NAME.ll and loomrt.c, loom's
runtime; a C program needs nothing else. The schedule is a trace from a file
(-trace: JSON as records store it, or the text form loom tune prints), the
best record of the tuning database (tuned), the schedule loom decides
without tuning (default), the hand-written schedule of a built-in workload
(hand), none, or auto: the best record if there is one, else the default.
It says which it used. A function's symbolic sizes (-func without -size)
stay parameters of the kernel; when the database has schedules for buckets
of them (loom tune -buckets, -specialize), NAME.o holds each bucket's code
behind one entry point that picks it by the sizes at run time
(NAME_dispatch.c shows the tests), the schedule above for the sizes no
bucket holds.

With -graph, it compiles the whole graph into one C library instead: NAME.h,
libNAME.a and libNAME.so (NAME: the graph's name), holding every kernel (each
with its best record, else the default schedule), the shape function, the
memory plan and the runtime, behind one entry point that takes the inputs'
and outputs' data and shapes; the graph's sizes stay symbolic (no -size).`, stderr)
	src := source{wholeGraph: true, symbolic: true}
	src.register(fs)
	var rf recordFlags
	rf.register(fs)
	sched := fs.String("schedule", "auto", "auto, default, tuned, hand or none")
	tracePath := fs.String("trace", "", "a trace file to apply (instead of -schedule)")
	out := fs.String("out", "", "the directory to write the kernels into (required)")
	fs.StringVar(out, "o", "", "the same as -out")
	weights := fs.String("weights", "embed", "with -graph or -onnx, where the library keeps the graph's weights: embed (read-only data of the library) or file (NAME.weights beside it, loaded with NAME_load_weights)")
	symbol := fs.String("name", "", "the kernel's C symbol and file name (default: the workload's, or each graph kernel's; a graph's kernels are NAME_0, NAME_1, ...)")
	asJSON := fs.Bool("json", false, "print one JSON object per kernel written (kernel, shape, schedule, buckets, files), or for -graph one for the library (graph, header, static, shared, weights, kernels with their schedules, link)")
	symbolic := fs.String("symbolic", "", "`NAMES`, comma-separated: dimensions of -workload that stay symbolic sizes, parameters of the kernel (gemm's M, say, after loom tune -workload gemm -sizes M=1..4096: the kernel dispatches on M to the buckets' schedules)")
	src.symbolicDims = func() []string {
		var names []string
		for _, n := range strings.Split(*symbolic, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		return names
	}
	jobs, code, ok := src.parse(fs, args, stderr)
	if !ok {
		return code
	}
	if !rf.check(fs, stderr) || !notBoth(fs, stderr, "schedule", "trace") ||
		!onlyWith(fs, stderr, src.graph == "", "without -graph (its kernels take the best record of any size)", "any-size") {
		return 2
	}
	if src.graph != "" && (src.size.n != 0 || len(src.size.symbols) > 0) {
		// A graph's library binds its symbols from the inputs' shapes
		// at every call: a value given here would be ignored.
		fmt.Fprintf(stderr, "loom build: -graph builds a library for every value of the graph's symbols (each call reads them from its inputs' shapes); -size %s does not apply: drop it\n", src.size.String())
		return 2
	}
	if *symbolic != "" && (src.graph != "" || src.fn != "") {
		fmt.Fprintln(stderr, "loom build: -symbolic names dimensions of -workload; the symbolic sizes of -graph and -func stay symbolic without it")
		return 2
	}
	if !onlyWith(fs, stderr, src.graph != "", "with -graph or -onnx", "weights") {
		return 2
	}
	if *out == "" {
		fmt.Fprintln(stderr, "loom build: -out DIR is required (see loom build -h)")
		return 2
	}
	switch *sched {
	case "auto", "default", "tuned", "hand", "none":
	default:
		fmt.Fprintf(stderr, "loom build: unknown -schedule %q (have auto, default, tuned, hand, none)\n", *sched)
		return 2
	}
	if src.graph != "" {
		if *tracePath != "" || (*sched != "auto" && *sched != "default") {
			fmt.Fprintln(stderr, "loom build: -graph takes -schedule auto (each kernel's best record, else the default) or default")
			return 2
		}
		if *weights != "embed" && *weights != "file" {
			fmt.Fprintf(stderr, "loom build: unknown -weights %q (have embed, file)\n", *weights)
			return 2
		}
		return buildGraph(src.graph, src.layout, *out, *symbol, *sched, *weights == "file", *asJSON, &rf, stdout, stderr)
	}
	var trace *schedule.Trace
	if *tracePath != "" {
		var err error
		if trace, err = readTrace(*tracePath); err != nil {
			fmt.Fprintf(stderr, "loom build: %v\n", err)
			return 1
		}
	}
	names := outNames(jobs, *symbol)
	status := 0
	for i, j := range jobs {
		var choices []autotune.BucketChoice
		if trace == nil && (*sched == "auto" || *sched == "tuned") && len(j.Case.Func.Sizes) > 0 {
			var err error
			if choices, err = bucketChoices(j, &rf); err != nil {
				fmt.Fprintf(stderr, "loom build: %s: %v\n", j.Name, err)
				status = 1
				continue
			}
		}
		f, used, err := buildSchedule(j, src, *sched, trace, *tracePath, &rf, stderr)
		if err != nil && len(choices) > 0 {
			// Tuned for buckets of the sizes, not at these: the default
			// for the sizes no bucket holds.
			f, used, err = buildSchedule(j, src, "default", nil, "", &rf, stderr)
		}
		if err == nil && len(choices) > 0 {
			var files []string
			if files, err = writeDispatchKernel(*out, names[i], f, choices); err == nil {
				if *asJSON {
					json.NewEncoder(stdout).Encode(builtKernel{Kernel: j.Name, Shape: j.Shape, Schedule: used, Buckets: len(choices), Files: files})
					continue
				}
				fmt.Fprintf(stdout, "%s %s (schedule: %d bucket(s) of its sizes, else %s): %s\n", j.Name, j.Shape, len(choices), used, strings.Join(files, ", "))
				continue
			}
		} else if err == nil {
			var files []string
			if files, err = writeKernel(*out, names[i], f); err == nil {
				if *asJSON {
					json.NewEncoder(stdout).Encode(builtKernel{Kernel: j.Name, Shape: j.Shape, Schedule: used, Files: files})
					continue
				}
				fmt.Fprintf(stdout, "%s %s (schedule: %s): %s\n", j.Name, j.Shape, used, strings.Join(files, ", "))
				continue
			}
		}
		fmt.Fprintf(stderr, "loom build: %s: %s\n", j.Name, schedule.Explain(err))
		status = 1
	}
	return status
}

// bucketChoices returns the schedules the tuning database has for buckets
// of the job's sizes (loom tune -buckets, -specialize), if any.
func bucketChoices(j *job, rf *recordFlags) ([]autotune.BucketChoice, error) {
	db, err := rf.open()
	if err != nil {
		return nil, nil // no database: nothing tuned
	}
	return db.Buckets(j.Case.Func, rf.target())
}

// buildGraph compiles a graph into one C library (module.Build): every
// kernel, the shape function, the memory plan and the runtime, behind one
// entry point.
func buildGraph(path string, layout layoutChoice, dir, name, sched string, weightsFile, asJSON bool, rf *recordFlags, stdout, stderr io.Writer) int {
	g, err := readGraph(path)
	if err != nil {
		fmt.Fprintf(stderr, "loom build: %v\n", err)
		return 1
	}
	threads := rf.threads
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	opts := module.Options{Threads: threads, Layout: layout.channels, PlainWeights: layout.plainWeights}
	if sched == "auto" {
		if db, err := rf.open(); err == nil {
			opts.Database = db
		}
	}
	if name == "" {
		name = symbolName(g.Name)
	}
	m, err := module.Compile(g, opts)
	if err != nil {
		fmt.Fprintf(stderr, "loom build: %s: %v\n", path, err)
		return 1
	}
	lib, err := m.BuildWith(dir, name, module.BuildOptions{WeightsFile: weightsFile})
	if err != nil {
		fmt.Fprintf(stderr, "loom build: %s: %v\n", path, err)
		return 1
	}
	link := fmt.Sprintf("cc -O2 -I %s your_program.c %s -lm -pthread", dir, lib.Static)
	if asJSON {
		b := builtGraph{Graph: g.Name, Header: lib.Header, Static: lib.Static, Shared: lib.Shared, Weights: lib.Weights, Link: link}
		for _, k := range m.Kernels() {
			b.Kernels = append(b.Kernels, builtKernel{Kernel: k[0], Schedule: k[1]})
		}
		json.NewEncoder(stdout).Encode(b)
		return 0
	}
	for _, k := range m.Kernels() {
		fmt.Fprintf(stdout, "kernel %s: schedule %s\n", k[0], k[1])
	}
	fmt.Fprintf(stdout, "graph %s: %s, %s, %s\n", g.Name, lib.Header, lib.Static, lib.Shared)
	if lib.Weights != "" {
		fmt.Fprintf(stdout, "weights: %s (load it with %s_load_weights before the first call)\n", lib.Weights, name)
	}
	fmt.Fprintf(stdout, "link: %s\n", link)
	return 0
}

// builtKernel is what build -json prints of a kernel written.
type builtKernel struct {
	Kernel   string   `json:"kernel"`
	Shape    string   `json:"shape,omitempty"`
	Schedule string   `json:"schedule"`          // where it came from
	Buckets  int      `json:"buckets,omitempty"` // schedules for buckets of its sizes, dispatched on them
	Files    []string `json:"files,omitempty"`
}

// builtGraph is what build -json prints of a graph's library.
type builtGraph struct {
	Graph   string        `json:"graph"`
	Header  string        `json:"header"`
	Static  string        `json:"static"`
	Shared  string        `json:"shared"`
	Weights string        `json:"weights,omitempty"`
	Kernels []builtKernel `json:"kernels"`
	Link    string        `json:"link"` // the cc line that links a program with it
}

// buildSchedule returns the job's function scheduled as asked, and what
// it used.
func buildSchedule(j *job, src source, sched string, trace *schedule.Trace, tracePath string, rf *recordFlags, stderr io.Writer) (*ast.Func, string, error) {
	f := j.Case.Func
	if trace != nil {
		s, err := autotune.Replay(f, trace)
		if err != nil {
			return nil, "", err
		}
		noteReplacedSteps(stderr, "build", tracePath, trace, s.Trace())
		return s.Func(), "the trace", nil
	}
	if sched == "tuned" || sched == "auto" {
		r, err := rf.best(j)
		switch {
		case err == nil:
			s, err := replayRecord(r, j)
			if err != nil {
				return nil, "", err
			}
			return s.Func(), fmt.Sprintf("the best record, %.3f ms on %s", r.Median*1e3, r.Target), nil
		case sched == "tuned":
			return nil, "", err
		}
	}
	threads := rf.threads
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	if sched == "default" || sched == "auto" {
		s, err := autotune.Default(f, autotune.HostTarget(threads))
		if err != nil {
			return nil, "", err
		}
		return s.Func(), "the default, decided without tuning", nil
	}
	w, _ := bench.Lookup(src.workload)
	if sched == "hand" && src.graph == "" && src.fn == "" && w != nil {
		s, err := schedule.New(f)
		if err != nil {
			return nil, "", err
		}
		if err := w.Hand(s, hand.Config{Threads: threads, VectorBits: llvm.Host().VectorBits()}); err != nil {
			return nil, "", err
		}
		return s.Func(), "the hand-written one", nil
	}
	if sched == "hand" {
		return nil, "", fmt.Errorf("only the built-in workloads have a hand-written schedule")
	}
	return f, "none", nil
}
