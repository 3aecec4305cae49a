// Package bench runs loom's benchmark workloads: it builds a workload,
// schedules it, compiles it with the LLVM code generator, checks the
// kernel's result, and times it the way reference libraries are timed
// when loom is compared with them (best per-call time over repeated
// samples), so that the figures can be set side by side.
package bench

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/hand"
	"github.com/loom-go/loom/internal/suggest"
	"github.com/loom-go/loom/internal/sysmem"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// Workload is a benchmark: a function with named sizes, and how much work
// it does at given sizes.
type Workload struct {
	Name string
	// Dims are its sizes, as -size NAME=VALUE names them, with their
	// defaults (the benchmark sizes).
	Dims []Dim
	// Square tells that -size N sets every dimension (the matrix
	// multiplies: M = N = K).
	Square bool
	// build makes the case at d, the dimensions named in symbolic made
	// symbolic sizes of its function (at their values in d).
	build func(d Sizes, symbolic ...string) (workload.Case, error)
	shape func(d Sizes) string
	// flops is the standard operation count (nil for the bandwidth-bound
	// workloads, whose speed is in bytes).
	flops func(d Sizes) float64
	// Hand is the hand-written CPU schedule.
	Hand func(s *schedule.Schedule, c hand.Config) error
}

// Dim is one named size of a workload.
type Dim struct {
	Name    string
	Default int
	About   string
}

// Sizes gives a value to each dimension of a workload, by name.
type Sizes map[string]int

// Workloads lists the benchmarks, as named on the command line.
var Workloads = []Workload{
	{
		Name: "gemm", Square: true,
		Dims: mnk,
		build: func(d Sizes, sym ...string) (workload.Case, error) {
			return workload.NewMatmul(d["M"], d["N"], d["K"], sym...)
		},
		shape: func(d Sizes) string { return fmt.Sprintf("%dx%dx%d", d["M"], d["N"], d["K"]) },
		flops: func(d Sizes) float64 { return 2 * float64(d["M"]) * float64(d["N"]) * float64(d["K"]) },
		Hand:  hand.Gemm,
	},
	{
		Name: "gemm_bias_relu", Square: true,
		Dims: mnk,
		build: func(d Sizes, sym ...string) (workload.Case, error) {
			return workload.NewMatmulBiasReLU(d["M"], d["N"], d["K"], sym...)
		},
		shape: func(d Sizes) string { return fmt.Sprintf("%dx%dx%d", d["M"], d["N"], d["K"]) },
		flops: func(d Sizes) float64 { return 2 * float64(d["M"]) * float64(d["N"]) * float64(d["K"]) },
		Hand:  hand.GemmBiasReLU,
	},
	{
		Name: "rmsnorm",
		Dims: rowsCols(16384, 768),
		build: func(d Sizes, sym ...string) (workload.Case, error) {
			return workload.NewRMSNorm(d["R"], d["D"], sym...)
		},
		shape: func(d Sizes) string { return fmt.Sprintf("%dx%d", d["R"], d["D"]) },
		Hand:  hand.RMSNorm,
	},
	{
		Name: "softmax",
		Dims: rowsCols(8192, 1024),
		build: func(d Sizes, sym ...string) (workload.Case, error) {
			return workload.NewSoftmax(d["R"], d["D"], sym...)
		},
		shape: func(d Sizes) string { return fmt.Sprintf("%dx%d", d["R"], d["D"]) },
		Hand:  hand.Softmax,
	},
	{
		Name: "chain",
		Dims: []Dim{
			{"S1", 64, "the first symbolic dimension"},
			{"S2", 128, "the second symbolic dimension"},
			{"D", 1024, "the reduced last dimension, a constant of the function"},
		},
		build: func(d Sizes, sym ...string) (workload.Case, error) {
			if err := symbolicAlready("chain", sym, "S1", "S2"); err != nil {
				return workload.Case{}, err
			}
			return workload.NewChain(d["S1"], d["S2"], d["D"])
		},
		shape: func(d Sizes) string { return fmt.Sprintf("%dx%dx%d", d["S1"], d["S2"], d["D"]) },
		Hand:  hand.Chain,
	},
	{
		Name: "conv2d",
		Dims: []Dim{
			{"B", 1, "batch"},
			{"C", 64, "input channels"},
			{"H", 56, "height"},
			{"W", 56, "width"},
			{"K", 64, "output channels; 3x3 filters, padding 1, stride 1"},
		},
		build: func(d Sizes, sym ...string) (workload.Case, error) {
			if err := symbolicAlready("conv2d", sym); err != nil {
				return workload.Case{}, err
			}
			return workload.NewConv2D(d["B"], d["C"], d["H"], d["W"], d["K"])
		},
		shape: func(d Sizes) string {
			return fmt.Sprintf("%dx%dx%dx%d,%dx%dx3x3", d["B"], d["C"], d["H"], d["W"], d["K"], d["C"])
		},
		flops: func(d Sizes) float64 {
			return 2 * float64(d["B"]) * float64(d["K"]) * float64(d["C"]) * 9 * float64(d["H"]) * float64(d["W"])
		},
		Hand: hand.Conv2D,
	},
}

var mnk = []Dim{{"M", 1024, "rows of A and C"}, {"N", 1024, "columns of B and C"}, {"K", 1024, "the reduced dimension"}}

func rowsCols(r, d int) []Dim {
	return []Dim{{"R", r, "rows"}, {"D", d, "the row length, reduced"}}
}

// symbolicAlready refuses a dimension named symbolic that is not one of
// the workload's own symbolic sizes (have), which are symbolic anyway.
func symbolicAlready(workload string, symbolic []string, have ...string) error {
	for _, s := range symbolic {
		if !slices.Contains(have, s) {
			if len(have) == 0 {
				return fmt.Errorf("%s has constant dimensions only: %s cannot be symbolic", workload, s)
			}
			return fmt.Errorf("%s's %s is a constant of its function: only %s are symbolic", workload, s, strings.Join(have, " and "))
		}
	}
	return nil
}

// Lookup returns the workload called name.
func Lookup(name string) (*Workload, error) {
	for i := range Workloads {
		if Workloads[i].Name == name {
			return &Workloads[i], nil
		}
	}
	var names []string
	for _, w := range Workloads {
		names = append(names, w.Name)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("unknown workload %q%s (have %s)", name, suggest.DidYouMean(name, names), strings.Join(names, ", "))
}

// Defaults returns the workload's benchmark sizes.
func (w *Workload) Defaults() Sizes {
	d := Sizes{}
	for _, dim := range w.Dims {
		d[dim.Name] = dim.Default
	}
	return d
}

// DimsHelp describes the dimensions for -h: "M=1024 (rows of A and C), ...".
func (w *Workload) DimsHelp() string {
	var parts []string
	for _, d := range w.Dims {
		parts = append(parts, fmt.Sprintf("%s=%d (%s)", d.Name, d.Default, d.About))
	}
	return strings.Join(parts, ", ")
}

// Sizes returns the workload's sizes from the command line: all the
// defaults, with square (if not 0) setting every dimension of a Square
// workload and named setting the ones it names. Values must be positive
// and fit an int32.
func (w *Workload) Sizes(square int64, named map[string]int64) (Sizes, error) {
	d := w.Defaults()
	if square != 0 {
		if !w.Square {
			return nil, fmt.Errorf("workload %s takes named sizes, -size %s", w.Name, w.example())
		}
		if err := setDim(d, w, "N", square); err != nil {
			return nil, err
		}
		for name := range d {
			d[name] = int(square)
		}
	}
	names := make([]string, 0, len(named))
	for name := range named {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := d[name]; !ok {
			return nil, fmt.Errorf("workload %s has no size %s (it has %s)", w.Name, name, w.DimsHelp())
		}
		if err := setDim(d, w, name, named[name]); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func setDim(d Sizes, w *Workload, name string, v int64) error {
	if v <= 0 || v > math.MaxInt32 {
		return fmt.Errorf("workload %s: size %s = %d: want 1 to %d", w.Name, name, v, int64(math.MaxInt32))
	}
	d[name] = int(v)
	return nil
}

// example is the -size flag that sets the defaults, "R=8192,D=1024".
func (w *Workload) example() string {
	var parts []string
	for _, d := range w.Dims {
		parts = append(parts, fmt.Sprintf("%s=%d", d.Name, d.Default))
	}
	return strings.Join(parts, ",")
}

// Case builds the workload at sizes d, refusing sizes whose buffers (with
// the reference's copy and the kernel's run) do not fit in the memory
// available. The dimensions named in symbolic are symbolic sizes of its
// function (loom tune -sizes, loom bench -sweep), at their values in d;
// a workload that cannot make one symbolic says so.
func (w *Workload) Case(d Sizes, symbolic ...string) (workload.Case, error) {
	c, err := w.build(d, symbolic...)
	if err != nil {
		return workload.Case{}, fmt.Errorf("workload %s at %s: %v", w.Name, w.shape(d), err)
	}
	if err := sysmem.Check(fmt.Sprintf("workload %s at %s", w.Name, w.shape(d)), 3*c.Bytes()); err != nil {
		return workload.Case{}, err
	}
	return c, nil
}

// Shape prints sizes d the way the benchmark lines show them.
func (w *Workload) Shape(d Sizes) string { return w.shape(d) }

// Flops is the operation count at sizes d, 0 for a workload whose speed is
// in bytes.
func (w *Workload) Flops(d Sizes) float64 {
	if w.flops == nil {
		return 0
	}
	return w.flops(d)
}

// Options of one benchmark run.
type Options struct {
	Workload string
	Sizes    Sizes  // absent dimensions: the defaults
	Size     int    // M = N = K of a Square workload, if not 0
	Threads  int    // 0: one per core
	Schedule string // "hand", "default", "refined", "tuned", "trace" or "none"
	// Refine configures Schedule "refined" (autotune.Refine: the default
	// refined by the cost model, nothing run); Sizes and Seed are set
	// from the case.
	Refine autotune.RefineOptions
	// Tuned returns the scheduled function for the workload's case (the
	// unscheduled function at its sizes; name and shape are the
	// workload's, as records name them), for
	// Schedule "tuned" (the best record of a tuning database) and "trace"
	// (a trace from a file).
	Tuned func(name, shape string, c workload.Case) (*ast.Func, error)
	// Cold builds the kernel in an empty cache, so that compile_ms is the
	// whole build.
	Cold bool
	// Lowering options (target, fast-math, vector width).
	LLVM llvm.Options
}

// Result is one benchmark's line of output, in the field names and units
// of the comparison with reference libraries (see the README).
type Result struct {
	Workload string  `json:"workload"`
	Size     int     `json:"size"`
	Shape    string  `json:"shape"`
	Threads  int     `json:"threads"`
	Schedule string  `json:"schedule"`
	Ms       float64 `json:"ms"` // the fastest sample's per-call time
	// MedianMs and WorstMs are the median and slowest samples' (Samples
	// of them): the spread a busy machine widens.
	MedianMs  float64  `json:"median_ms"`
	WorstMs   float64  `json:"worst_ms"`
	CV        float64  `json:"cv"` // the samples' coefficient of variation
	Samples   int      `json:"samples"`
	GFlops    *float64 `json:"gflops"`
	GBps      float64  `json:"gbps"`
	CompileMs float64  `json:"compile_ms"`
	// ScheduleMs is the time Default took to decide the schedule
	// (schedule "default" only).
	ScheduleMs float64 `json:"schedule_ms,omitempty"`
	MaxRelErr  float64 `json:"max_rel_err"`
}

// Run builds, checks and times one workload.
func Run(o Options) (*Result, error) {
	w, err := Lookup(o.Workload)
	if err != nil {
		return nil, err
	}
	named := map[string]int64{}
	for name, v := range o.Sizes {
		named[name] = int64(v)
	}
	d, err := w.Sizes(int64(o.Size), named)
	if err != nil {
		return nil, err
	}
	c, err := w.Case(d)
	if err != nil {
		return nil, err
	}
	size := 0
	if w.Square {
		size = d["N"]
	}
	threads := o.Threads
	if threads == 0 {
		threads = runtimeThreads()
	}
	opts := o.LLVM
	if opts.VectorBits == 0 {
		opts.VectorBits = opts.Target.VectorBits()
	}
	f := c.Func
	var scheduleMs float64
	switch o.Schedule {
	case "", "hand":
		o.Schedule = "hand"
		s, err := schedule.New(c.Func)
		if err != nil {
			return nil, err
		}
		if err := w.Hand(s, hand.Config{Threads: threads, VectorBits: opts.VectorBits}); err != nil {
			return nil, fmt.Errorf("the hand-written schedule of %s, written for sizes like its defaults (%s), does not apply at %s (try -schedule none, or tune it): %s", w.Name, w.example(), w.Shape(d), schedule.Explain(err))
		}
		f = s.Func()
	case "default":
		start := time.Now()
		s, err := autotune.Default(c.Func, autotune.Target{VectorLanes: opts.VectorBits / 32, Threads: threads, Caches: autotune.HostCaches()})
		if err != nil {
			return nil, fmt.Errorf("the default schedule of %s: %s", w.Name, schedule.Explain(err))
		}
		scheduleMs = float64(time.Since(start).Microseconds()) / 1000
		f = s.Func()
	case "refined":
		start := time.Now()
		ro := o.Refine
		ro.Sizes = c.Sizes
		r, err := autotune.Refine(c.Func, autotune.Target{VectorLanes: opts.VectorBits / 32, Threads: threads, Caches: autotune.HostCaches()}, ro)
		if err != nil {
			return nil, fmt.Errorf("the refined default schedule of %s: %s", w.Name, schedule.Explain(err))
		}
		scheduleMs = float64(time.Since(start).Microseconds()) / 1000
		f = r.Schedule.Func()
	case "tuned", "trace":
		if o.Tuned == nil {
			return nil, fmt.Errorf("schedule %s needs a tuning database or a trace", o.Schedule)
		}
		if f, err = o.Tuned(w.Name, w.Shape(d), c); err != nil {
			return nil, err
		}
	case "none":
	default:
		return nil, fmt.Errorf("unknown schedule %q (have hand, default, refined, tuned, trace, none)", o.Schedule)
	}
	if err := native.SetThreads(threads); err != nil {
		return nil, err
	}
	cache, err := native.DefaultCache()
	if err != nil {
		return nil, err
	}
	if o.Cold {
		dir, err := os.MkdirTemp("", "loom-bench-cache")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if cache, err = native.NewCache(dir); err != nil {
			return nil, err
		}
	}
	k, err := cache.Compile(f, opts)
	if err != nil {
		return nil, err
	}
	args := c.Args(1)
	call, err := k.Bind(c.Sizes, args)
	if err != nil {
		return nil, err
	}
	defer call.Release()
	if err := call.Run(); err != nil { // warm-up, and the result to check
		return nil, err
	}
	want := check.Clone(args)
	c.Ref(want)
	maxErr := 0.0
	for _, p := range c.Func.Params {
		maxErr = math.Max(maxErr, check.MaxRelErr(args[p.Name], want[p.Name]))
	}
	timing, err := Measure(call.Run)
	if err != nil {
		return nil, err
	}
	best := timing.Best
	ms := best.Seconds() * 1e3
	r := &Result{
		Workload: w.Name, Size: size, Shape: w.Shape(d), Threads: threads, Schedule: o.Schedule,
		Ms: ms, MedianMs: timing.Median.Seconds() * 1e3, WorstMs: timing.Worst.Seconds() * 1e3, Samples: timing.Samples, CV: timing.CV,
		GBps:      float64(Traffic(c)) / best.Seconds() / 1e9,
		CompileMs: k.Stats.Total().Seconds() * 1e3, MaxRelErr: maxErr, ScheduleMs: scheduleMs,
	}
	if w.flops != nil {
		g := w.Flops(d) / best.Seconds() / 1e9
		r.GFlops = &g
	}
	if maxErr > check.Tolerance(ast.Float32)*10 {
		return r, fmt.Errorf("%s: the kernel's result differs from the reference by %g", w.Name, maxErr)
	}
	return r, nil
}

// Traffic is the bytes of every parameter buffer (inputs read once, the
// output written once).
func Traffic(c workload.Case) int64 {
	var n int64
	for _, p := range c.Func.Params {
		data, err := ast.NewData(p, c.Sizes)
		if err == nil {
			length, _ := ast.DataLen(p.DType, data)
			n += int64(length) * int64(p.DType.Bytes())
		}
	}
	return n
}

func runtimeThreads() int {
	n, err := native.Threads()
	if err != nil || n <= 0 {
		return 1
	}
	return n
}

// Timing is what Measure measured: the per-call time of each sample's
// calls, as the fastest, median and slowest sample give it.
type Timing struct {
	Best, Median, Worst time.Duration
	Samples             int
	// CV is the samples' coefficient of variation (standard deviation
	// over mean): above autotune.BusyVariation the machine was too busy
	// for the figures to be trusted to better than that.
	CV float64
}

// SampleTime and MeasureTime set Measure's clock: each sample lasts at
// least SampleTime, and samples are taken while they total under
// MeasureTime. loom's own tests (package main's TestMain) shorten both:
// what they check is that times are measured and reported, never how
// precisely, and at the full lengths timing was most of their time (a
// sweep times every size three ways).
var (
	SampleTime  = 20 * time.Millisecond
	MeasureTime = 300 * time.Millisecond
)

// Measure times run: samples of enough calls to last at least SampleTime
// (20 ms), at least 5 samples, more (up to 30) while they total under
// MeasureTime (0.3 s). The caller has already made a warm-up call.
func Measure(run func() error) (Timing, error) {
	start := time.Now()
	if err := run(); err != nil {
		return Timing{}, err
	}
	one := time.Since(start)
	reps := 1
	if one < SampleTime {
		reps = int(SampleTime/max(one, time.Microsecond)) + 1
	}
	var per []time.Duration
	var total time.Duration
	for s := 0; s < 30 && (s < 5 || total < MeasureTime); s++ {
		start := time.Now()
		for r := 0; r < reps; r++ {
			if err := run(); err != nil {
				return Timing{}, err
			}
		}
		d := time.Since(start)
		total += d
		per = append(per, d/time.Duration(reps))
	}
	slices.Sort(per)
	return Timing{Best: per[0], Median: per[len(per)/2], Worst: per[len(per)-1], Samples: len(per), CV: Variation(per)}, nil
}

// Variation is the coefficient of variation of samples (standard
// deviation over mean).
func Variation(samples []time.Duration) float64 {
	var sum, sq float64
	for _, d := range samples {
		sum += d.Seconds()
	}
	mean := sum / float64(len(samples))
	for _, d := range samples {
		sq += (d.Seconds() - mean) * (d.Seconds() - mean)
	}
	if mean == 0 || len(samples) < 2 {
		return 0
	}
	return math.Sqrt(sq/float64(len(samples)-1)) / mean
}

// Time returns the best per-call time Measure measures.
func Time(run func() error) (time.Duration, error) {
	t, err := Measure(run)
	return t.Best, err
}
