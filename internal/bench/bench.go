// Package bench runs loom's benchmark workloads: it builds a workload,
// schedules it, compiles it with the LLVM code generator, checks the
// kernel's result, and times it the way ../shared/peers times the
// reference libraries (best per-call time over repeated samples), so that
// the figures can be set side by side.
package bench

import (
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/hand"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// Workload is a benchmark: a function at benchmark sizes and how much
// work it does.
type Workload struct {
	Name string
	// Sized tells whether -size applies (the matrix multiplies); the
	// others have fixed shapes.
	Sized       bool
	DefaultSize int
	Case        func(size int) workload.Case
	Shape       func(size int) string
	// Flops is the standard operation count (0 for the bandwidth-bound
	// workloads, whose speed is in bytes).
	Flops func(size int) float64
	// Hand is the hand-written CPU schedule.
	Hand func(s *schedule.Schedule, c hand.Config) error
}

// Workloads lists the benchmarks, as named on the command line.
var Workloads = []Workload{
	{
		Name: "gemm", Sized: true, DefaultSize: 1024,
		Case:  func(n int) workload.Case { return workload.Matmul(n, n, n) },
		Shape: func(n int) string { return fmt.Sprintf("%dx%dx%d", n, n, n) },
		Flops: func(n int) float64 { return 2 * float64(n) * float64(n) * float64(n) },
		Hand:  hand.Gemm,
	},
	{
		Name: "gemm_bias_relu", Sized: true, DefaultSize: 1024,
		Case:  func(n int) workload.Case { return workload.MatmulBiasReLU(n, n, n) },
		Shape: func(n int) string { return fmt.Sprintf("%dx%dx%d", n, n, n) },
		Flops: func(n int) float64 { return 2 * float64(n) * float64(n) * float64(n) },
		Hand:  hand.GemmBiasReLU,
	},
	{
		Name:  "rmsnorm",
		Case:  func(int) workload.Case { return workload.RMSNorm(16384, 768) },
		Shape: func(int) string { return "16384x768" },
		Hand:  hand.RMSNorm,
	},
	{
		Name:  "softmax",
		Case:  func(int) workload.Case { return workload.Softmax(8192, 1024) },
		Shape: func(int) string { return "8192x1024" },
		Hand:  hand.Softmax,
	},
	{
		Name:  "chain",
		Case:  func(int) workload.Case { return workload.Chain(64, 128, 1024) },
		Shape: func(int) string { return "64x128x1024" },
		Hand:  hand.Chain,
	},
	{
		Name:  "conv2d",
		Case:  func(int) workload.Case { return workload.Conv2D(1, 64, 56, 56, 64) },
		Shape: func(int) string { return "1x64x56x56,64x64x3x3" },
		Flops: func(int) float64 { return 2 * 1 * 64 * 64 * 9 * 56 * 56 },
		Hand:  hand.Conv2D,
	},
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
	return nil, fmt.Errorf("unknown workload %q (have %v)", name, names)
}

// Options of one benchmark run.
type Options struct {
	Workload string
	Size     int    // 0: the workload's default
	Threads  int    // 0: one per core
	Schedule string // "hand", "tuned", "trace" or "none"
	// Tuned returns the scheduled function for an unscheduled one, for
	// Schedule "tuned" (the best record of a tuning database) and "trace"
	// (a trace from a file).
	Tuned func(f *ast.Func) (*ast.Func, error)
	// Cold builds the kernel in an empty cache, so that compile_ms is the
	// whole build.
	Cold bool
	// Lowering options (target, fast-math, vector width).
	LLVM llvm.Options
}

// Result is one benchmark's line of output, in the field names and units
// of ../shared/peers.
type Result struct {
	Workload  string   `json:"workload"`
	Size      int      `json:"size"`
	Shape     string   `json:"shape"`
	Threads   int      `json:"threads"`
	Schedule  string   `json:"schedule"`
	Ms        float64  `json:"ms"`
	GFlops    *float64 `json:"gflops"`
	GBps      float64  `json:"gbps"`
	CompileMs float64  `json:"compile_ms"`
	MaxRelErr float64  `json:"max_rel_err"`
}

// Run builds, checks and times one workload.
func Run(o Options) (*Result, error) {
	w, err := Lookup(o.Workload)
	if err != nil {
		return nil, err
	}
	size := o.Size
	if size == 0 {
		size = w.DefaultSize
	}
	if !w.Sized {
		size = 0
	}
	c := w.Case(size)
	threads := o.Threads
	if threads == 0 {
		threads = runtimeThreads()
	}
	opts := o.LLVM
	if opts.VectorBits == 0 {
		opts.VectorBits = opts.Target.VectorBits()
	}
	f := c.Func
	switch o.Schedule {
	case "", "hand":
		o.Schedule = "hand"
		s, err := schedule.New(c.Func)
		if err != nil {
			return nil, err
		}
		if err := w.Hand(s, hand.Config{Size: size, Threads: threads, VectorBits: opts.VectorBits}); err != nil {
			return nil, fmt.Errorf("hand schedule of %s: %s", w.Name, schedule.Explain(err))
		}
		f = s.Func()
	case "tuned", "trace":
		if o.Tuned == nil {
			return nil, fmt.Errorf("schedule %s needs a tuning database or a trace", o.Schedule)
		}
		if f, err = o.Tuned(c.Func); err != nil {
			return nil, err
		}
	case "none":
	default:
		return nil, fmt.Errorf("unknown schedule %q (have hand, tuned, trace, none)", o.Schedule)
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
	want := workload.Clone(args)
	c.Ref(want)
	maxErr := 0.0
	for _, p := range c.Func.Params {
		maxErr = math.Max(maxErr, workload.MaxRelErr(args[p.Name], want[p.Name]))
	}
	best, err := Time(call.Run)
	if err != nil {
		return nil, err
	}
	ms := best.Seconds() * 1e3
	r := &Result{
		Workload: w.Name, Size: size, Shape: w.Shape(size), Threads: threads, Schedule: o.Schedule,
		Ms: ms, GBps: float64(Traffic(c)) / best.Seconds() / 1e9,
		CompileMs: k.Stats.Total().Seconds() * 1e3, MaxRelErr: maxErr,
	}
	if w.Flops != nil {
		g := w.Flops(size) / best.Seconds() / 1e9
		r.GFlops = &g
	}
	if maxErr > workload.Tolerance(ast.Float32)*10 {
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

// Time returns the best per-call time of run: samples of enough calls to
// last at least 20 ms, at least 5 samples, more (up to 30) while they
// total under 0.3 s. The caller has already made a warm-up call.
func Time(run func() error) (time.Duration, error) {
	start := time.Now()
	if err := run(); err != nil {
		return 0, err
	}
	one := time.Since(start)
	reps := 1
	if one < 20*time.Millisecond {
		reps = int(20*time.Millisecond/max(one, time.Microsecond)) + 1
	}
	best := time.Duration(math.MaxInt64)
	var total time.Duration
	for s := 0; s < 30 && (s < 5 || total < 300*time.Millisecond); s++ {
		start := time.Now()
		for r := 0; r < reps; r++ {
			if err := run(); err != nil {
				return 0, err
			}
		}
		d := time.Since(start)
		total += d
		best = min(best, d/time.Duration(reps))
	}
	return best, nil
}
