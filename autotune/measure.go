package autotune

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/cacheflush"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/errbound"
)

// LocalBuilder lowers candidates to LLVM IR and builds their shared
// objects in the compile cache, Parallel at a time, without loading them
// (the runner's worker process loads them).
type LocalBuilder struct {
	Cache    *native.Cache
	Options  llvm.Options
	Parallel int
}

func (b *LocalBuilder) Build(ctx context.Context, task *Task, cands []*Candidate) []BuildResult {
	out := make([]BuildResult, len(cands))
	sem := make(chan struct{}, max(b.Parallel, 1))
	var wg sync.WaitGroup
	for i, c := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				out[i].Err = ctx.Err()
				return
			}
			m, err := llvm.Lower(c.Func, b.Options)
			if err != nil {
				out[i].Err = err
				return
			}
			path, _, err := b.Cache.BuildFile(m)
			out[i] = BuildResult{Artifact: path, Err: err}
		}()
	}
	wg.Wait()
	return out
}

// ProcessRunner runs each candidate in a worker process of its own (the
// Command, which must serve ServeWorker: `loom worker`), so a candidate
// that crashes or hangs is recorded as failed, with the reason, and the
// tuner carries on. The first run of each candidate is checked against
// the task's reference outputs; then it is timed Repeats times.
type ProcessRunner struct {
	Command    []string
	Env        []string // added to the worker's environment
	CacheDir   string
	Options    llvm.Options
	Threads    int
	Timeout    time.Duration // per candidate; 0 means a minute
	Repeats    int           // timed samples; 0 means 5
	MinSeconds float64       // each sample repeats the kernel until it takes this long; 0 means 0.01
	// Target is where candidates run: "" on this CPU, "cuda" on the first
	// GPU (see Device and package autotune/cudatune). The reference outputs are computed there too
	// (on a GPU by the function's plainest kernel, see serveDevice).
	Target string

	mu   sync.Mutex
	refs map[string]string // task hash → reference file
	// refErrs: the tasks whose reference the worker could not make, with
	// why; each candidate of theirs fails with it, not after another run
	// of the reference.
	refErrs map[string]error
	best    map[string]float64 // task hash → fastest median measured
	dir     string
}

// timeBudget bounds the time a worker spends taking samples beyond the
// first.
const timeBudget = 2 * time.Second

// slowFactor: a candidate whose first warm runs take this many times the
// best median so far is not timed further; the faster of those two runs
// is its time.
const slowFactor = 4

// workRequest is what the runner sends a worker, as JSON on stdin.
type workRequest struct {
	Func       string           `json:"func"` // loom text
	Sizes      map[string]int64 `json:"sizes,omitempty"`
	Seed       uint64           `json:"seed"`
	CacheDir   string           `json:"cache_dir"`
	Options    llvm.Options     `json:"options"`
	Threads    int              `json:"threads"`
	Reference  string           `json:"reference"` // gob file of the expected outputs
	Write      bool             `json:"write"`     // write the reference instead of checking it
	Repeats    int              `json:"repeats"`
	MinSeconds float64          `json:"min_seconds"`
	// Target: "" runs the function on this CPU (LLVM), targetCUDA on
	// the GPU.
	Target string `json:"target,omitempty"`
	// Cutoff: a first run slower than this many seconds is the only
	// sample (0: none).
	Cutoff float64 `json:"cutoff,omitempty"`
	// Poison names the outputs whose data starts as NaN: those the
	// unscheduled function writes first (check.WrittenFirst), the same
	// for the reference and every candidate.
	Poison []string `json:"poison,omitempty"`
	// Flush names the buffers every timed run starts with out of the
	// caches (Task.Cold).
	Flush []string `json:"flush,omitempty"`
}

// coldNames names the parameters of task.Cold.
func coldNames(task *Task) []string {
	var out []string
	for _, i := range task.Cold {
		if i >= 0 && i < len(task.Func.Params) {
			out = append(out, task.Func.Params[i].Name)
		}
	}
	return out
}

// poisoned returns the outputs of task's function that its data starts
// with NaN in (see workRequest.Poison).
func poisoned(f *ast.Func) []string {
	return slices.Sorted(maps.Keys(check.WrittenFirst(f)))
}

// args returns the data req's function runs on.
func (req *workRequest) args(f *ast.Func) map[string]any {
	poison := map[string]bool{}
	for _, name := range req.Poison {
		poison[name] = true
	}
	return check.ArgsPoisoning(f, req.Sizes, req.Seed, poison)
}

// workResponse is what a worker answers, as JSON on stdout.
type workResponse struct {
	Seconds   []float64 `json:"seconds,omitempty"`
	MaxRelErr float64   `json:"max_rel_err"`
	Err       string    `json:"error,omitempty"`
}

func init() {
	for _, v := range []any{[]float32{}, []float64{}, []int32{}, []int64{}, []bool{}, []uint16{}} {
		gob.Register(v)
	}
}

func (r *ProcessRunner) Run(ctx context.Context, task *Task, cands []*Candidate, builds []BuildResult) []RunResult {
	out := make([]RunResult, len(cands))
	ref, err := r.reference(ctx, task)
	for i, c := range cands {
		switch {
		case err != nil:
			out[i].Err = fmt.Errorf("reference: %w", err)
		case builds[i].Err != nil:
			out[i].Err = builds[i].Err
		default:
			resp, werr := r.work(ctx, workRequest{Func: ast.Print(c.Func), Sizes: task.Sizes, Reference: ref, Cutoff: r.cutoff(task), Target: r.Target, Poison: poisoned(task.Func), Flush: coldNames(task)})
			if werr != nil {
				out[i].Err = werr
			} else {
				out[i].Seconds = resp.Seconds
				r.measured(task, resp.Seconds)
			}
		}
	}
	return out
}

// Close removes the files the runner keeps while it tunes (the tasks'
// reference outputs, in a temporary directory of its own); a runner
// used again afterwards makes them anew.
func (r *ProcessRunner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dir == "" {
		return nil
	}
	err := os.RemoveAll(r.dir)
	r.dir, r.refs, r.refErrs = "", nil, nil
	return err
}

// cutoff is the time beyond which a candidate of task is not worth more
// than one run.
func (r *ProcessRunner) cutoff(task *Task) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slowFactor * r.best[taskKey(task)]
}

// taskKey names a task's function at its sizes: what a reference and a
// best time belong to (one function measured at two sizes has two).
func taskKey(task *Task) string {
	return ast.Hash(task.Func).String() + fmt.Sprint(sortedSizes(task.Sizes))
}

func (r *ProcessRunner) measured(task *Task, seconds []float64) {
	m, _ := Summarize(seconds)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.best == nil {
		r.best = map[string]float64{}
	}
	key := taskKey(task)
	if b, ok := r.best[key]; !ok || m < b {
		r.best[key] = m
	}
}

// reference computes the task's expected outputs once: the unscheduled
// function (on a GPU, its plainest kernel), built and run in a worker;
// when the function is small enough those outputs are first checked
// against the interpreter.
func (r *ProcessRunner) reference(ctx context.Context, task *Task) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := taskKey(task)
	if p, ok := r.refs[key]; ok {
		return p, nil
	}
	if err, ok := r.refErrs[key]; ok {
		return "", err
	}
	if r.dir == "" {
		d, err := os.MkdirTemp("", "loom-tune-")
		if err != nil {
			return "", err
		}
		r.dir, r.refs = d, map[string]string{}
	}
	path := filepath.Join(r.dir, fmt.Sprintf("%s-%d.gob", key[:16], len(r.refs)))
	req := workRequest{Func: ast.Print(task.Func), Sizes: task.Sizes, Reference: path, Write: true, Poison: poisoned(task.Func), Target: r.Target}
	if _, err := r.work(ctx, req); err != nil {
		// Kept only when the worker reported it: a crash or a timeout
		// (a busy GPU, a signal) may not recur, and the next candidate
		// tries the reference again.
		var we *workerError
		if errors.As(err, &we) {
			if r.refErrs == nil {
				r.refErrs = map[string]error{}
			}
			r.refErrs[key] = err
		}
		return "", err
	}
	if Iterations(task.Func, task.Sizes) <= interpretLimit {
		if err := checkAgainstInterpreter(task, path); err != nil {
			return "", err
		}
	}
	r.refs[key] = path
	return path, nil
}

// interpretLimit bounds the block instances the interpreter runs to check
// a reference (about a second).
const interpretLimit = 2e6

// Iterations estimates the block instances f runs at sizes: for each
// block the product of its loops' extents (an extent that depends on an
// outer loop counts as 16). It is what interpreting f costs.
func Iterations(f *ast.Func, sizes map[string]int64) float64 {
	total := 0.0
	eachBlock(f, func(_ *ast.ScheduleBlock, loops []*ast.For) {
		n := 1.0
		for _, l := range loops {
			n *= extentOf(l.Extent, sizes)
		}
		total += n
	})
	return total
}

func checkAgainstInterpreter(task *Task, refPath string) error {
	want, err := readReference(refPath)
	if err != nil {
		return err
	}
	got := check.Args(task.Func, task.Sizes, 1)
	if err := ast.Interpret(task.Func, task.Sizes, got); err != nil {
		return err
	}
	for name, w := range want {
		p := paramOf(task.Func, name)
		if e := check.MaxRelErr(w, got[name]); p != nil && e > check.Tolerance(p.DType) {
			return fmt.Errorf("the compiled reference differs from the interpreter in %s by %g", name, e)
		}
	}
	return nil
}

func paramOf(f *ast.Func, name string) *ast.Buffer {
	for _, p := range f.Params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func readReference(path string) (map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var m map[string]any
	return m, gob.NewDecoder(f).Decode(&m)
}

// work runs one worker process.
func (r *ProcessRunner) work(ctx context.Context, req workRequest) (*workResponse, error) {
	if len(r.Command) == 0 {
		return nil, errors.New("no worker command")
	}
	req.CacheDir, req.Options, req.Threads, req.Seed = r.CacheDir, r.Options, r.Threads, 1
	req.Repeats, req.MinSeconds = r.Repeats, r.MinSeconds
	if req.Repeats <= 0 {
		req.Repeats = 5
	}
	if req.MinSeconds <= 0 {
		req.MinSeconds = 0.01
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, r.Command[0], r.Command[1:]...)
	cmd.Env = append(os.Environ(), r.Env...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("timed out after %v", timeout)
	case runErr != nil:
		return nil, fmt.Errorf("worker failed (%s)%s", exitReason(runErr), tail(stderr.String()))
	}
	var resp workResponse
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return nil, fmt.Errorf("worker answered %q: %v%s", tail(stdout.String()), err, tail(stderr.String()))
	}
	if resp.Err != "" {
		return nil, &workerError{resp.Err}
	}
	return &resp, nil
}

// workerError is a failure the worker reported itself (it could not build,
// run or check the function), as opposed to one that ended it (a crash, a
// timeout): the same request fails the same way again.
type workerError struct{ msg string }

func (e *workerError) Error() string { return e.msg }

// exitReason says how a worker ended: the signal that killed it, by
// name, or its exit status.
func exitReason(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Sprintf("killed by signal %s (%s)", signalName(ws.Signal()), ws.Signal())
		}
	}
	return err.Error()
}

// signalName is the conventional name of a signal: SIGSEGV, SIGKILL.
func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGSEGV: "SIGSEGV", syscall.SIGBUS: "SIGBUS", syscall.SIGILL: "SIGILL", syscall.SIGFPE: "SIGFPE",
		syscall.SIGABRT: "SIGABRT", syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM",
	}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// tail is what of a failed worker's stderr goes into its record.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	// A fault in the kernel (a signal the Go runtime reports before its
	// goroutine and register dump): the signal, its address and what the
	// runtime said, not the registers.
	var fault []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "fatal error:") || strings.HasPrefix(line, "[signal ") ||
			strings.HasPrefix(line, "SIG") && strings.Contains(line, ":") && !strings.HasPrefix(line, "SIGQUIT") {
			fault = append(fault, line)
		}
		if len(fault) == 3 {
			break
		}
	}
	if len(fault) > 0 && !strings.Contains(s, "panic: ") {
		return ": " + strings.Join(fault, "; ")
	}
	// A Go panic: its message, and the frame that panicked.
	if i := strings.Index(s, "panic: "); i >= 0 {
		lines := strings.Split(s[i:], "\n")
		return ": " + strings.Join(lines[:min(len(lines), 8)], "\n")
	}
	if len(s) > 400 {
		s = "..." + s[len(s)-400:]
	}
	return ": " + s
}

// checkOutputs compares the parameters in args, after a run, with the
// reference outputs and returns the largest relative error, or an error
// when it is beyond the tolerance.
func checkOutputs(req *workRequest, f *ast.Func, args map[string]any) (float64, error) {
	want, err := readReference(req.Reference)
	if err != nil {
		return 0, err
	}
	worst := 0.0
	for _, p := range f.Params {
		w, ok := want[p.Name]
		if !ok {
			continue
		}
		e := check.MaxRelErr(args[p.Name], w)
		worst = max(worst, e)
		tol := check.Tolerance(p.DType)
		if req.Options.FastMath {
			tol *= 100
		}
		if e <= tol {
			continue
		}
		variance, ok := want[varianceKey(p.Name)].([]float64)
		if !ok && want[normKey] != nil {
			// A reference without the rounding's variances (made on a
			// GPU): the error over the whole output, in the 2-norm.
			if n := check.NormRelErr(p.DType, args[p.Name], w); n > tol {
				return worst, fmt.Errorf("wrong result: %s differs from the reference by %g in the 2-norm (tolerance %g; by %g at worst)", p.Name, n, tol, e)
			}
			continue
		}
		if !ok {
			return worst, fmt.Errorf("wrong result: %s differs from the reference by %g (tolerance %g)", p.Name, e, tol)
		}
		// Beyond the fixed tolerance, within what rounding alone explains
		// (a long reduction in another order) is right.
		if ex, at := errbound.Excess(p.DType, args[p.Name], w, variance); ex > 1 {
			return worst, fmt.Errorf("wrong result: %s differs from the reference by %g (tolerance %g), and at element %d by %.3g times the error bound of its rounding", p.Name, e, tol, at, ex)
		}
	}
	return worst, nil
}

// normKey marks a reference file without the variances of the rounding
// error (one made on a GPU, see writeDeviceReference): an output beyond the
// fixed tolerance element by element is then checked by its error in the
// 2-norm, ‖got − want‖ / ‖want‖. A NaN (an element never written) fails
// either way; one wrong element among n shows as about 1/√n of the norm.
const normKey = "check:norm"

// varianceKey names, in a reference file, the variances of the rounding
// error of parameter name's elements (see package errbound).
func varianceKey(name string) string { return "variance:" + name }

// errorVariances runs f's error twin (see package errbound) compiled, on
// the inputs of req's seed, and returns the variances of the rounding
// error of each float output, or nil when the twin cannot be made or
// run: then a result is checked against the fixed tolerance alone.
func errorVariances(cache *native.Cache, f *ast.Func, req *workRequest) map[string][]float64 {
	g, shadows, err := errbound.Twin(f)
	if err != nil {
		return nil
	}
	k, err := cache.Compile(g, llvm.Options{})
	if err != nil {
		return nil
	}
	args := check.Args(g, req.Sizes, req.Seed)
	in := check.Args(f, req.Sizes, req.Seed)
	maps.Copy(args, in) // the function's own inputs, whatever Args gives the twin's extra parameters
	if err := k.Run(req.Sizes, args); err != nil {
		return nil
	}
	out := map[string][]float64{}
	for name, sh := range shadows {
		if v, ok := args[sh[1]].([]float64); ok {
			out[name] = v
		}
	}
	return out
}

// ServeWorker is the worker process's body: it reads one request from
// in, builds (or finds in the cache) and runs the kernel, checks or
// writes the reference outputs, times it, and writes the response to
// out. A crash of the kernel kills only this process.
func ServeWorker(in io.Reader, out io.Writer) error {
	var req workRequest
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return err
	}
	resp := serve(&req)
	return json.NewEncoder(out).Encode(resp)
}

func serve(req *workRequest) *workResponse {
	fail := func(err error) *workResponse { return &workResponse{Err: err.Error()} }
	f, err := ast.Parse(req.Func)
	if err != nil {
		return fail(err)
	}
	if req.Target != "" {
		return serveDevice(req, f)
	}
	cache, err := native.DefaultCache()
	if req.CacheDir != "" {
		cache, err = native.NewCache(req.CacheDir)
	}
	if err != nil {
		return fail(err)
	}
	if req.Threads > 0 {
		if err := native.SetThreads(req.Threads); err != nil {
			return fail(err)
		}
	}
	k, err := cache.Compile(f, req.Options)
	if err != nil {
		return fail(err)
	}
	args := req.args(f)
	if err := k.Run(req.Sizes, args); err != nil {
		return fail(err)
	}
	resp := &workResponse{}
	if req.Write {
		ref := maps.Clone(args)
		for name, v := range errorVariances(cache, f, req) {
			ref[varianceKey(name)] = v
		}
		file, err := os.Create(req.Reference)
		if err != nil {
			return fail(err)
		}
		defer file.Close()
		if err := gob.NewEncoder(file).Encode(ref); err != nil {
			return fail(err)
		}
		return resp
	}
	if resp.MaxRelErr, err = checkOutputs(req, f, args); err != nil {
		return fail(err)
	}
	call, err := k.Bind(req.Sizes, args)
	if err != nil {
		return fail(err)
	}
	defer call.Release()
	// The checked run is cold: it faults in the pages of the outputs
	// and of the heap temporaries (tens of milliseconds for a 50 MB
	// output), so it cannot say whether a candidate is slow. The next
	// run can.
	//
	// A first run slower than the cutoff is timed once more before it
	// counts as slow: a parallel kernel's first run after the check
	// wakes the runtime's sleeping threads, tens of microseconds that a
	// kernel of a few microseconds would be judged by (the default
	// schedule of a 128x768 transpose lost its tuning that way on two
	// threads, 0.066 ms measured for 0.003).
	var cold []any
	for _, name := range req.Flush {
		cold = append(cold, args[name])
	}
	timed := timer(call, cold)
	if req.Cutoff > 0 {
		slow := true
		var least float64
		for try := 0; try < 2 && slow; try++ {
			d, err := timed(1)
			if err != nil {
				return fail(err)
			}
			if try == 0 || d < least {
				least = d
			}
			slow = d > req.Cutoff
		}
		if slow {
			resp.Seconds = []float64{least} // slow: two runs say enough
			return resp
		}
	}
	// Calibrate: repeat the kernel until a sample takes MinSeconds.
	reps := 1
	for {
		d, err := timed(reps)
		if err != nil {
			return fail(err)
		}
		if d >= req.MinSeconds || reps >= 1<<20 {
			if reps == 1 && d > 1 {
				// A run of more than a second: this one is a sample too.
				resp.Seconds = append(resp.Seconds, d)
			}
			break
		}
		reps *= 2
	}
	// Samples until Repeats of them, or until they took timeBudget (a
	// slow kernel's few samples say enough).
	sampling := time.Now()
	for len(resp.Seconds) < req.Repeats && (len(resp.Seconds) == 0 || time.Since(sampling) < timeBudget) {
		d, _ := timed(reps)
		resp.Seconds = append(resp.Seconds, d/float64(reps))
	}
	return resp
}

// timer returns a function that runs the call n times and says how long
// the runs took. With cold buffers, each run is timed alone, after they
// are flushed from the caches (Task.Cold).
func timer(call *native.Call, cold []any) func(n int) (float64, error) {
	if len(cold) == 0 {
		return func(n int) (float64, error) {
			start := time.Now()
			for range n {
				if err := call.Run(); err != nil {
					return 0, err
				}
			}
			return time.Since(start).Seconds(), nil
		}
	}
	return func(n int) (float64, error) {
		var total time.Duration
		for range n {
			cacheflush.Slices(cold...)
			start := time.Now()
			err := call.Run()
			total += time.Since(start)
			if err != nil {
				return 0, err
			}
		}
		return total.Seconds(), nil
	}
}
