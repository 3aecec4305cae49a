package main

import (
	"encoding/json"
	"fmt"
	"github.com/loom-go/loom/internal/suggest"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
	"github.com/loom-go/loom/tools/loom/internal/bench"
)

// runBench: loom bench -workload W [-size N] [-threads T] [-schedule hand]
// [-json] runs a built-in workload with a built-in schedule, checks its
// result, and prints the time.
func runBench(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", "-workload W [-size N] [-threads T] [-schedule hand|default|tuned|none | -trace FILE] [flags]",
		`Compiles a built-in workload with a schedule, checks its result against
the workload's Go reference, and times it (the best of several runs). The
schedule is the hand-written one, the one loom decides without tuning
(default: autotune.Default; -json adds schedule_ms, the time it took), the best record of the tuning database
for this machine and thread count (tuned: run loom tune first), a trace
from a file (-trace: JSON as records store it, or the text form loom tune
prints, for trying an edited schedule), or none.
-json prints one JSON object per workload: workload, size, shape, threads,
schedule, ms (the best per-call time), gflops, gbps, compile_ms, max_rel_err.`, stderr)
	name := fs.String("workload", "gemm", "workload: "+workloadNames()+", or all")
	var size sizeValue
	fs.Var(&size, "size", "the sizes: `NAME=VALUE` for a dimension of the workload (repeatable, or comma-separated), or N for M = N = K of gemm and gemm_bias_relu; the workloads' dimensions and defaults:\n"+workloadDims())
	threads := fs.Int("threads", 0, "threads for parallel loops (0: one per core, as loom tune)")
	sched := fs.String("schedule", "hand", "schedule: hand (built in), default (decided without tuning), refined (the default refined by the cost model, see -refine), tuned (the tuning database's best) or none")
	refine := fs.Int("refine", 32, "with -schedule refined, how many sampled schedules (1 to 256) the cost model ranks beside the default (its model: one trained on -db's records of this target when it has 64 or more, else the model loom ships)")
	dbPath := fs.String("db", "", "the tuning database for -schedule tuned (default: tuning.jsonl in loom's cache directory)")
	anySize := fs.Bool("any-size", false, "with -schedule tuned, when no record was measured at these sizes, use the best one of another size whose schedule applies")
	tracePath := fs.String("trace", "", "a trace file to apply (instead of -schedule)")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	suiteDir := fs.String("suite", "", "tune and time every graph (`DIR`/NAME.json) of a benchmark suite (testdata/suite: real models' kernels), printing one JSON line per case: case, kernels, threads, trials (per kernel), failed, distinct schedules, loom_ms (the sum of the kernels' best), kernel_ms, onednn_ms and ratio (with -onednn), tune_s")
	graphPath, layout := new(string), new(layoutChoice)
	graphFlags(fs, graphPath, layout, "compile it as one module (package module) and time it at -size S=V...: one JSON line with ms (a whole call), kernel_ms (the sum of its kernels' best calls) and each_kernel (each one's), the overhead (ms minus kernel_ms) and runtime_us (the least time a call spends outside its kernels), peak_bytes and naive_bytes of the arena, and compile_cold_ms, compile_ms, compile_cached_ms")
	inputFiles := fileFlags{}
	fs.Var(inputFiles, "input", "with -graph, an input from a .npy file, `NAME=FILE.npy` (the graph's or the model's name of the input; repeatable: every input, or none for random ones); the sizes come from their shapes")
	outDir := fs.String("outputs", "", "with -graph, write each output to `DIR`/NAME.npy")
	cases := fs.String("cases", "", "with -suite, only the cases whose name matches this regular expression")
	trials := fs.Int("trials", 64, "with -suite, the trials per kernel; 0: no search, each kernel on its default schedule (the whole suite in minutes)")
	results := fs.String("results", "", "with -suite, append each case's line to `FILE` too, and skip the cases FILE has a good line for (same threads, trials and CPU): a long suite run resumes where it stopped")
	onednn := fs.String("onednn", "", "with -suite, oneDNN's side of each case: the program `BIN` (make onednn builds it from tools/onednn/suite.cpp), run on the same inputs, its result checked against loom's")
	sweep := fs.String("sweep", "", "time the kernels of -workload or -graph (at -size) over a range of one symbolic size, `NAME=LO..HI` (LO, the powers of two and three times them between, HI): one JSON line per kernel and size with bucketed_ms (the kernel tuned for the bucket that holds the size, loom tune -buckets; the default where none does), exact_ms (tuned at exactly that size), one_size_ms (tuned at -one-size, run at this one) and default_ms, from -db's records; a dimension of -workload it names is a symbolic size, as with loom tune -sizes")
	oneSize := fs.String("one-size", "", "with -sweep, the size `NAME=VALUE` whose tuned kernel one_size_ms runs at every size (one tuning used everywhere)")
	cold := fs.Bool("cold", false, "build in an empty cache, so that compile_ms is a whole build")
	fast := fs.Bool("fast-math", false, "compile with fast-math")
	vbits := fs.Int("vector-bits", 0, "SIMD width in bits: 128, 256 or 512 (0: the host's)")
	cpu := fs.String("mcpu", "", "target CPU, as llc -mcpu takes it (default: the host)")
	attrs := fs.String("mattr", "", "target features, as llc -mattr takes them")
	profile := profileFlag(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	stopProfile, err := profile()
	if err != nil {
		fmt.Fprintln(stderr, "loom bench:", err)
		return 1
	}
	defer stopProfile()
	if !noArgs(fs, stderr) || !threadsOK(fs, stderr, *threads) || !vectorBitsOK(fs, stderr, *vbits) ||
		!inRange(fs, stderr, "refine", *refine, 1, maxRefine) || !inRange(fs, stderr, "trials", *trials, 0, maxTrials) || !dbOK(fs, stderr, *dbPath) {
		return 2
	}
	// Each mode takes its own flags; one given to another is refused,
	// not ignored.
	suite, sweeping, graph := *suiteDir != "", *sweep != "", *graphPath != ""
	single := !suite && !sweeping && !graph // one workload, or all
	if !onlyWith(fs, stderr, suite, "with -suite", "cases", "trials", "results", "onednn") ||
		!onlyWith(fs, stderr, !suite, "without -suite (which times its own graphs)", "workload", "size", "graph", "onnx", "sweep", "any-size") ||
		!onlyWith(fs, stderr, sweeping, "with -sweep", "one-size") ||
		!onlyWith(fs, stderr, graph && !sweeping, "with -graph (a module's timing)", "input", "outputs") ||
		!onlyWith(fs, stderr, !graph, "without -graph (which names what to time)", "workload") ||
		!onlyWith(fs, stderr, single, "to a -workload timed on its own (not -suite, -sweep or -graph)", "schedule", "trace", "cold", "fast-math", "vector-bits", "mcpu", "mattr") ||
		!onlyWith(fs, stderr, single && *sched == "refined", "with -schedule refined", "refine") ||
		!onlyWith(fs, stderr, single && *sched == "tuned", "with -schedule tuned", "any-size") ||
		!notBoth(fs, stderr, "schedule", "trace") {
		return 2
	}
	if err := checkTarget(*cpu, *attrs); err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 2
	}
	if have := []string{"hand", "default", "refined", "tuned", "none"}; !slices.Contains(have, *sched) {
		// A usage error, said before anything is built.
		fmt.Fprintf(stderr, "loom bench: unknown -schedule %q%s (have %s)\n", *sched, suggest.DidYouMean(*sched, have), strings.Join(have, ", "))
		return 2
	}
	if *suiteDir != "" {
		return runSuite(*suiteDir, *cases, *onednn, *threads, *trials, *dbPath, *results, stdout, stderr)
	}
	if *sweep != "" {
		src := source{workload: *name, graph: *graphPath, layout: *layout, size: size,
			symbolicDims: func() []string { return specNames(*sweep) },
			impliedSizes: func() map[string]int64 { return sweepImplied(*sweep, *oneSize) }}
		jobs, err := src.jobs()
		if err != nil {
			fmt.Fprintf(stderr, "loom bench: %v\n", err)
			return 2
		}
		return runSweep(jobs, *sweep, *oneSize, *threads, &recordFlags{db: *dbPath, warn: stderr, cmd: "bench"}, stdout, stderr)
	}
	if *graphPath != "" {
		return benchGraph(*graphPath, *layout, size.symbols, *threads, *dbPath, inputFiles, *outDir, stdout, stderr)
	}
	rf := recordFlags{db: *dbPath, threads: *threads, anySize: *anySize, warn: stderr, cmd: "bench"}
	tuned := func(name, shape string, c workload.Case) (*ast.Func, error) {
		r, err := rf.best(&job{Name: name, Shape: shape, Case: c})
		if err != nil {
			return nil, err
		}
		s, err := replayRecord(r, &job{Name: name, Shape: shape, Case: c})
		if err != nil {
			return nil, err
		}
		return s.Func(), nil
	}
	if *tracePath != "" {
		trace, err := readTrace(*tracePath)
		if err != nil {
			fmt.Fprintf(stderr, "loom bench: %v\n", err)
			return 1
		}
		*sched = "trace"
		tuned = func(_, _ string, c workload.Case) (*ast.Func, error) {
			s, err := autotune.Replay(c.Func, trace)
			if err != nil {
				return nil, fmt.Errorf("%s", schedule.Explain(err))
			}
			noteReplacedSteps(stderr, "bench", *tracePath, trace, s.Trace())
			return s.Func(), nil
		}
	}
	names := []string{*name}
	if *name == "all" {
		for sym := range size.symbols {
			if !slices.ContainsFunc(bench.Workloads, func(w bench.Workload) bool { _, ok := w.Defaults()[sym]; return ok }) {
				fmt.Fprintf(stderr, "loom bench: no workload has a size %s\n", sym)
				return 2
			}
		}
		names = nil
		for _, w := range bench.Workloads {
			names = append(names, w.Name)
		}
	}
	opts := llvm.Options{FastMath: *fast, VectorBits: *vbits}
	if *cpu != "" || *attrs != "" {
		opts.Target = llvm.Host()
		if *cpu != "" {
			opts.Target.CPU = *cpu
		}
		opts.Target.Features = *attrs
	}
	status := 0
	for _, n := range names {
		w, err := bench.Lookup(n)
		if err != nil {
			fmt.Fprintf(stderr, "loom bench: %v\n", err)
			return 2
		}
		square, sizes := int(size.n), bench.Sizes{}
		for name, v := range size.symbols {
			sizes[name] = int(v)
		}
		if *name == "all" {
			// The sizes apply to the workloads that have them.
			if !w.Square {
				square = 0
			}
			for name := range sizes {
				if _, ok := w.Defaults()[name]; !ok {
					delete(sizes, name)
				}
			}
		}
		bo := bench.Options{Workload: n, Size: square, Sizes: sizes, Threads: *threads, Schedule: *sched, Tuned: tuned, Cold: *cold, LLVM: opts}
		if *sched == "refined" {
			m, err := rf.model()
			if err != nil {
				fmt.Fprintf(stderr, "loom bench: %v\n", err)
				return 1
			}
			bo.Refine = autotune.RefineOptions{Candidates: *refine, Model: m}
		}
		r, err := bench.Run(bo)
		if err != nil {
			fmt.Fprintf(stderr, "loom bench: %v\n", err)
			status = 1
			if r == nil {
				continue
			}
		}
		if *asJSON {
			line, _ := json.Marshal(r)
			fmt.Fprintln(stdout, string(line))
		} else {
			gflops := "-"
			if r.GFlops != nil {
				gflops = fmt.Sprintf("%.1f GFLOP/s", *r.GFlops)
			}
			fmt.Fprintf(stdout, "%-15s %-22s %2d threads  %9.3f ms (median %.3f, slowest %.3f of %d, cv %.0f%%)  %14s  %6.1f GB/s  compile %6.1f ms  max rel err %.2g\n",
				r.Workload, r.Shape, r.Threads, r.Ms, r.MedianMs, r.WorstMs, r.Samples, 100*r.CV, gflops, r.GBps, r.CompileMs, r.MaxRelErr)
		}
		if r.CV > autotune.BusyVariation {
			fmt.Fprintf(stderr, "loom bench: %s: the samples vary by %.0f%% (coefficient of variation): the machine is busy, and the figures are not to be trusted to better than that\n", r.Workload, 100*r.CV)
		}
	}
	return status
}

// sweepImplied is the value a sweep gives its symbol where -size gives
// none (the kernels' functions are made at it): -one-size's when it names
// the symbol, else the sweep's first size.
func sweepImplied(sweep, oneSize string) map[string]int64 {
	name, lo, _, err := parseSweep(sweep)
	if err != nil {
		return nil
	}
	if n, v, ok := strings.Cut(oneSize, "="); ok && n == name {
		if x, err := strconv.ParseInt(v, 10, 64); err == nil && x > 0 {
			return map[string]int64{name: x}
		}
	}
	return map[string]int64{name: lo}
}
