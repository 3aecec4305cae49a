package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/bench"
	"github.com/loom-go/loom/schedule"
)

// runBench: loom bench -workload W [-size N] [-threads T] [-schedule hand]
// [-json] runs a built-in workload with a built-in schedule, checks its
// result, and prints the time.
func runBench(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("bench", "-workload W [-size N] [-threads T] [-schedule hand|tuned|none | -trace FILE] [flags]",
		`Compiles a built-in workload with a schedule, checks its result against
the workload's Go reference, and times it (the best of several runs). The
schedule is the hand-written one, the best record of the tuning database
for this machine and thread count (tuned: run loom tune first), a trace
from a file (-trace: JSON as records store it, or the text form loom tune
prints, for trying an edited schedule), or none.
-json prints the lines ../shared/peers prints, for side-by-side figures.`, stderr)
	name := fs.String("workload", "gemm", "workload: "+workloadNames()+", or all")
	size := fs.Int("size", 0, "M = N = K of gemm and gemm_bias_relu (default 1024)")
	threads := fs.Int("threads", 1, "threads for parallel loops (0: one per core)")
	sched := fs.String("schedule", "hand", "schedule: hand (built in), tuned (the tuning database's best) or none")
	dbPath := fs.String("db", "", "the tuning database for -schedule tuned (default: tuning.jsonl in loom's cache directory)")
	tracePath := fs.String("trace", "", "a trace file to apply (instead of -schedule)")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	cold := fs.Bool("cold", false, "build in an empty cache, so that compile_ms is a whole build")
	fast := fs.Bool("fast-math", false, "compile with fast-math")
	vbits := fs.Int("vector-bits", 0, "SIMD width in bits (0: the host's)")
	cpu := fs.String("mcpu", "", "target CPU, as llc -mcpu takes it (default: the host)")
	attrs := fs.String("mattr", "", "target features, as llc -mattr takes them")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	rf := recordFlags{db: *dbPath, threads: *threads}
	tuned := func(f *ast.Func) (*ast.Func, error) {
		r, err := rf.best(f)
		if err != nil {
			return nil, err
		}
		return r.Apply(f)
	}
	if *tracePath != "" {
		trace, err := readTrace(*tracePath)
		if err != nil {
			fmt.Fprintf(stderr, "loom bench: %v\n", err)
			return 1
		}
		*sched = "trace"
		tuned = func(f *ast.Func) (*ast.Func, error) {
			s, err := autotune.Replay(f, trace)
			if err != nil {
				return nil, fmt.Errorf("%s", schedule.Explain(err))
			}
			return s.Func(), nil
		}
	}
	names := []string{*name}
	if *name == "all" {
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
		r, err := bench.Run(bench.Options{Workload: n, Size: *size, Threads: *threads, Schedule: *sched, Tuned: tuned, Cold: *cold, LLVM: opts})
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
			continue
		}
		gflops := "-"
		if r.GFlops != nil {
			gflops = fmt.Sprintf("%.1f GFLOP/s", *r.GFlops)
		}
		fmt.Fprintf(stdout, "%-15s %-22s %2d threads  %9.3f ms  %14s  %6.1f GB/s  compile %6.1f ms  max rel err %.2g\n",
			r.Workload, r.Shape, r.Threads, r.Ms, gflops, r.GBps, r.CompileMs, r.MaxRelErr)
	}
	return status
}
