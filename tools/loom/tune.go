package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/bench"
	"github.com/loom-go/loom/schedule"
)

// version is written into every tuning record.
const version = "loom-dev"

// runTune searches schedules of a built-in workload, measuring every
// candidate in an isolated worker process, appends the records to the
// database and writes the best kernel out.
func runTune(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("workload", "gemm", "the workload to tune: "+workloadNames())
	size := fs.Int("size", 0, "problem size of the sized workloads (0: the default)")
	threads := fs.Int("threads", 0, "threads the kernel runs on (0: one per core)")
	trials := fs.Int("trials", 64, "candidates to measure")
	seed := fs.Uint64("seed", 1, "random seed; the same seed gives the same search")
	dbPath := fs.String("db", "", "the tuning database, JSON lines (default: loom's cache directory)")
	out := fs.String("out", "", "write the best kernel here as NAME.ll, NAME.o and NAME.h")
	timeout := fs.Duration("timeout", time.Minute, "per-candidate limit: a slower candidate is recorded as failed")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	w, err := bench.Lookup(*name)
	if err != nil {
		fmt.Fprintln(stderr, "loom tune:", err)
		return 2
	}
	n := *size
	if n == 0 {
		n = w.DefaultSize
	}
	c := w.Case(n)
	nt := *threads
	if nt <= 0 {
		nt = runtime.NumCPU()
	}
	cache, err := native.DefaultCache()
	if err != nil {
		fmt.Fprintln(stderr, "loom tune:", err)
		return 1
	}
	if *dbPath == "" {
		*dbPath = filepath.Join(cache.Dir, "tuning.jsonl")
	}
	db, err := autotune.OpenDatabase(*dbPath)
	if err != nil {
		fmt.Fprintln(stderr, "loom tune:", err)
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "loom tune:", err)
		return 1
	}
	host := llvm.Host()
	lanes := host.VectorBits() / 32
	task := &autotune.Task{
		Name: w.Name, Func: c.Func, Sizes: c.Sizes,
		Target: fmt.Sprintf("%s/%s/%dbit/%dT", host.Triple, host.CPU, host.VectorBits(), nt),
		Space:  &autotune.Space{Rules: autotune.DefaultRules(), Target: autotune.Target{VectorLanes: lanes, Threads: nt}},
	}
	builder := &autotune.LocalBuilder{Cache: cache, Parallel: runtime.NumCPU()}
	runner := &autotune.ProcessRunner{Command: []string{exe, "worker"}, CacheDir: cache.Dir, Threads: nt, Timeout: *timeout}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// The starting schedule: the function as written.
	start, err := schedule.New(c.Func)
	if err != nil {
		fmt.Fprintln(stderr, "loom tune:", err)
		return 1
	}
	base := &autotune.Candidate{Sched: start, Func: c.Func}
	baseRun := runner.Run(ctx, task, []*autotune.Candidate{base}, builder.Build(ctx, task, []*autotune.Candidate{base}))[0]
	baseSeconds := math.Inf(1)
	if baseRun.Err == nil {
		baseSeconds = median(baseRun.Seconds)
	}
	begin := time.Now()
	res, err := autotune.Tune(ctx, task, builder, runner, autotune.Options{
		Trials: *trials, Seed: *seed, Population: 32, Batch: 8, DB: db, Version: version,
		Progress: func(p autotune.Progress) { progressBar(stderr, p, w, n) },
	})
	fmt.Fprintln(stderr)
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "loom tune:", err)
		return 1
	}
	if res == nil || res.Best == nil {
		fmt.Fprintln(stderr, "loom tune: no candidate ran correctly")
		return 1
	}
	speed := func(sec float64) string {
		if w.Flops != nil {
			return fmt.Sprintf("%.1f GFLOP/s", w.Flops(n)/sec/1e9)
		}
		return fmt.Sprintf("%.1f GB/s", float64(bench.Traffic(c))/sec/1e9)
	}
	summary := map[string]any{
		"workload": w.Name, "size": n, "threads": nt, "trials": len(res.Records),
		"best_ms": res.Best.Median * 1e3, "start_ms": baseSeconds * 1e3, "speedup": baseSeconds / res.Best.Median,
		"best": speed(res.Best.Median), "db": *dbPath, "seconds": time.Since(begin).Seconds(),
	}
	if *out != "" {
		files, err := writeKernel(*out, w.Name, c.Func, res.Best)
		if err != nil {
			fmt.Fprintln(stderr, "loom tune:", err)
			return 1
		}
		summary["files"] = files
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(summary)
		return 0
	}
	fmt.Fprintf(stdout, "%s %s, %d threads: best %.3f ms (%s) after %d trials in %.0f s; the starting schedule took %.3f ms (%s): %.1fx\n",
		w.Name, w.Shape(n), nt, res.Best.Median*1e3, speed(res.Best.Median), len(res.Records), time.Since(begin).Seconds(),
		baseSeconds*1e3, speed(baseSeconds), baseSeconds/res.Best.Median)
	fmt.Fprintf(stdout, "record appended to %s\n", *dbPath)
	if files, ok := summary["files"].([]string); ok {
		fmt.Fprintf(stdout, "kernel written to %s\n", strings.Join(files, ", "))
	}
	fmt.Fprintf(stdout, "best schedule:\n%s", res.Best.Trace)
	return 0
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

func workloadNames() string {
	var names []string
	for _, w := range bench.Workloads {
		names = append(names, w.Name)
	}
	return strings.Join(names, ", ")
}

// progressBar redraws one line on stderr: trials, best so far, elapsed
// time and the estimated time left.
func progressBar(w io.Writer, p autotune.Progress, wl *bench.Workload, n int) {
	const width = 24
	done := width * p.Trials / max(p.Total, 1)
	bar := strings.Repeat("#", done) + strings.Repeat(".", width-done)
	best := "-"
	if !math.IsInf(p.Best, 0) {
		best = fmt.Sprintf("%.3f ms", p.Best*1e3)
		if wl.Flops != nil {
			best += fmt.Sprintf(" (%.1f GFLOP/s)", wl.Flops(n)/p.Best/1e9)
		}
	}
	eta := time.Duration(0)
	if p.Trials > 0 {
		eta = time.Duration(float64(p.Elapsed) * float64(p.Total-p.Trials) / float64(p.Trials))
	}
	fmt.Fprintf(w, "\r[%s] %d/%d trials, %d failed, best %s, elapsed %s, ETA %s   ", bar, p.Trials, p.Total, p.Failed, best, p.Elapsed.Round(time.Second), eta.Round(time.Second))
}

// writeKernel replays the record and writes the kernel's LLVM IR, object
// file and C header.
func writeKernel(dir, name string, f *ast.Func, r *autotune.Record) ([]string, error) {
	s, err := schedule.Replay(f, r.Trace, nil)
	if err != nil {
		return nil, err
	}
	m, err := llvm.Lower(autotune.Finish(s), llvm.Options{})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ll, obj, h := filepath.Join(dir, name+".ll"), filepath.Join(dir, name+".o"), filepath.Join(dir, name+".h")
	if err := os.WriteFile(ll, []byte(m.String()), 0o644); err != nil {
		return nil, err
	}
	if err := native.WriteObject(m, obj); err != nil {
		return nil, err
	}
	if err := os.WriteFile(h, []byte(m.Header()), 0o644); err != nil {
		return nil, err
	}
	return []string{ll, obj, h}, nil
}

// runWorker serves one candidate measurement for loom tune (internal).
func runWorker(_ []string, stdout, stderr io.Writer) int {
	if err := autotune.ServeWorker(os.Stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "loom worker:", err)
		return 1
	}
	return 0
}
