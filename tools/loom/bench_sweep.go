package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/tools/loom/internal/bench"
)

// sweepLine is one size of loom bench -sweep: each kernel's time at it,
// per way of choosing its schedule (null where there is none).
type sweepLine struct {
	Kernel  string           `json:"kernel"`
	Sizes   map[string]int64 `json:"sizes"`
	Threads int              `json:"threads"`
	// Bucketed is the dispatch's kernel (the bucket holding the sizes,
	// else the default), Bucket the bucket it took ("" for the default).
	BucketedMs *float64 `json:"bucketed_ms"`
	Bucket     string   `json:"bucket"`
	// ExactMs is the best record tuned at exactly these sizes, OneSizeMs
	// the best record tuned at -one-size, run at these sizes (one size's
	// schedule used everywhere), DefaultMs the default schedule's.
	ExactMs   *float64 `json:"exact_ms"`
	OneSizeMs *float64 `json:"one_size_ms"`
	DefaultMs *float64 `json:"default_ms"`
	// MaxRelErr compares the bucketed kernel's outputs with the default
	// kernel's on the same inputs.
	MaxRelErr float64 `json:"max_rel_err"`
}

// sweepSizes are the values a sweep over lo..hi times: lo, the powers of
// two and three times them between, and hi.
func sweepSizes(lo, hi int64) []int64 {
	out := []int64{lo}
	for p := int64(1); p <= hi; p *= 2 {
		for _, v := range []int64{p, p / 2 * 3} {
			if v > out[len(out)-1] && v < hi {
				out = append(out, v)
			}
		}
	}
	if hi > out[len(out)-1] {
		out = append(out, hi)
	}
	return out
}

// parseSweep reads -sweep NAME=LO..HI.
func parseSweep(spec string) (string, int64, int64, error) {
	name, rng, ok := strings.Cut(spec, "=")
	los, his, ok2 := strings.Cut(rng, "..")
	lo, err1 := strconv.ParseInt(los, 10, 64)
	hi, err2 := strconv.ParseInt(his, 10, 64)
	if !ok || !ok2 || name == "" || err1 != nil || err2 != nil || lo < 1 || hi < lo || hi > math.MaxInt32 {
		return "", 0, 0, fmt.Errorf("-sweep %q: want NAME=LO..HI, 1 <= LO <= HI <= %d", spec, math.MaxInt32)
	}
	return name, lo, hi, nil
}

// runSweep times each job's kernel at every size of the sweep: the
// bucketed dispatch, the record tuned at exactly that size, the record
// tuned at oneSize, and the default; one JSON line per kernel and size.
func runSweep(jobs []*job, spec, oneSize string, threads int, rf *recordFlags, stdout, stderr io.Writer) int {
	name, lo, hi, err := parseSweep(spec)
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 2
	}
	var one int64
	if oneSize != "" {
		n, v, ok := strings.Cut(oneSize, "=")
		if one, err = strconv.ParseInt(v, 10, 64); !ok || n != name || err != nil || one < 1 {
			fmt.Fprintf(stderr, "loom bench: -one-size %q: want %s=VALUE\n", oneSize, name)
			return 2
		}
	}
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	rf.threads = threads
	if err := native.SetThreads(threads); err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	db, err := rf.open()
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	cache, err := native.DefaultCache()
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	target := rf.target()
	status := 0
	swept := false
	for _, j := range jobs {
		f := j.Case.Func
		if f.Size(name) == nil {
			continue
		}
		swept = true
		d, err := autotune.DispatchFromDatabase(f, db, target, autotune.HostTarget(threads), cache, llvm.Options{})
		if err != nil {
			fmt.Fprintf(stderr, "loom bench: %s: %v\n", j.Name, err)
			status = 1
			continue
		}
		dflt := d.Fallback() // the default schedule
		var oneKernel *native.Kernel
		if one > 0 {
			at := maps.Clone(j.Case.Sizes)
			at[name] = one
			if _, g, err := db.BestFor(f, at, target); err == nil && g != nil {
				oneKernel, _ = cache.Compile(g, llvm.Options{})
			}
		}
		for _, v := range sweepSizes(lo, hi) {
			sizes := maps.Clone(j.Case.Sizes)
			if sizes == nil {
				sizes = map[string]int64{}
			}
			sizes[name] = v
			line := sweepLine{Kernel: j.Name, Sizes: sizes, Threads: threads}
			c := workload.Case{Name: j.Name, Func: f, Sizes: sizes}
			if err := checkCase(c); err != nil {
				fmt.Fprintf(stderr, "loom bench: %s at %s=%d: skipped: %v\n", j.Name, name, v, err)
				status = 1
				continue
			}
			k, bucket, err := d.Kernel(sizes)
			if err != nil {
				fmt.Fprintf(stderr, "loom bench: %s: %v\n", j.Name, err)
				status = 1
				break
			}
			if bucket != nil {
				line.Bucket = bucketText(bucket)
			}
			got, want := c.Args(1), c.Args(1)
			if err := k.Run(sizes, got); err != nil {
				fmt.Fprintf(stderr, "loom bench: %s at %v: %v\n", j.Name, sizes, err)
				status = 1
				continue
			}
			if err := dflt.Run(sizes, want); err != nil {
				fmt.Fprintf(stderr, "loom bench: %s at %v: %v\n", j.Name, sizes, err)
				status = 1
				continue
			}
			for _, p := range f.Params {
				e := check.MaxRelErr(got[p.Name], want[p.Name])
				line.MaxRelErr = max(line.MaxRelErr, e)
				if tol := 100 * check.Tolerance(p.DType); e > tol {
					// Beyond what summing in another order explains at
					// the sweep's sizes: the dispatch check of loom tune
					// (with error bounds) says more.
					fmt.Fprintf(stderr, "loom bench: %s at %s=%d: the bucketed kernel's %s differs from the default's by %g (more than %g)\n", j.Name, name, v, p.Name, e, tol)
					status = 1
				}
			}
			line.BucketedMs = timeCall(k, sizes, got)
			line.DefaultMs = timeCall(dflt, sizes, want)
			if _, g, err := db.BestFor(f, sizes, target); err == nil && g != nil {
				if ek, err := cache.Compile(g, llvm.Options{}); err == nil {
					line.ExactMs = timeCall(ek, sizes, got)
				}
			}
			if oneKernel != nil {
				line.OneSizeMs = timeCall(oneKernel, sizes, got)
			}
			out, _ := json.Marshal(line)
			fmt.Fprintln(stdout, string(out))
		}
	}
	if !swept {
		fmt.Fprintf(stderr, "loom bench: -sweep: no kernel has a size %s\n", name)
		return 2
	}
	return status
}

// bucketText prints a bucket as loom tune -buckets names it.
func bucketText(b map[string][2]int64) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(b)) {
		parts = append(parts, fmt.Sprintf("%s=%d..%d", n, b[n][0], b[n][1]))
	}
	return strings.Join(parts, ",")
}

// timeCall is the best per-call time of k on args, in ms, as bench.Time
// takes it (and ../shared/peers); nil when it does not run.
func timeCall(k *native.Kernel, sizes map[string]int64, args map[string]any) *float64 {
	t := timeSamples(k, sizes, args)
	if t == nil {
		return nil
	}
	ms := float64(t.Best) / 1e6
	return &ms
}

// timeSamples is timeCall's measurement with its spread: nil where the
// kernel does not run.
func timeSamples(k *native.Kernel, sizes map[string]int64, args map[string]any) *bench.Timing {
	c, err := k.Bind(sizes, args)
	if err != nil {
		return nil
	}
	defer c.Release()
	if c.Run() != nil {
		return nil
	}
	t, err := bench.Measure(c.Run)
	if err != nil {
		return nil
	}
	return &t
}
