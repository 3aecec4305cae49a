package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/tools/loom/internal/bench"
)

// suiteLine is what loom bench -suite prints per case: one JSON line.
type suiteLine struct {
	Case     string `json:"case"`
	Kernels  int    `json:"kernels"`
	Threads  int    `json:"threads"`
	Trials   int    `json:"trials"` // per kernel
	Failed   int    `json:"failed"` // trials that failed, over the kernels
	Distinct int    `json:"distinct"`
	// LoomMs is the sum of the tuned kernels' times, each the best
	// per-call time of the kernel compiled in this process and run warm
	// (bench.Time, as loom bench, ../shared/peers and oneDNN's side take
	// them); KernelMs lists them. SearchMs is the sum of the search's
	// own figures (the medians its worker processes measured), which
	// for a memory-bound kernel can be several times its warm time.
	LoomMs   float64   `json:"loom_ms"`
	KernelMs []float64 `json:"kernel_ms"`
	// LoomCV is the largest coefficient of variation of the kernels'
	// timed samples: above 0.1 the machine was too busy for LoomMs (and
	// the ratio) to be trusted to better than that.
	LoomCV   float64 `json:"loom_cv"`
	SearchMs float64 `json:"search_ms"`
	// OneDNNMs is the same computation's time with oneDNN, measured in
	// the same run by the harness -onednn names: the faster of its plain
	// layouts (OneDNNPlainMs: the graph's, NCHW and row-major) and its
	// best layout (OneDNNAnyMs: format_tag::any, reorders outside the
	// timed loop; convolutions, matmuls and pools only); null without
	// the harness, or where oneDNN has no primitive for the case.
	OneDNNMs      *float64 `json:"onednn_ms"`
	OneDNNPlainMs *float64 `json:"onednn_plain_ms,omitempty"`
	OneDNNAnyMs   *float64 `json:"onednn_any_ms,omitempty"`
	OneDNNAnyImpl string   `json:"onednn_any_impl,omitempty"`
	Ratio         *float64 `json:"ratio"`                 // onednn_ms / loom_ms: above 1 is faster than oneDNN at its best
	RatioPlain    *float64 `json:"ratio_plain,omitempty"` // onednn_plain_ms / loom_ms
	// DefaultMs is the sum of the kernels' default schedules' times
	// (autotune.Default), and UnscheduledMs the sum of their nests as
	// written, timed as LoomMs: null where a kernel's did not run.
	DefaultMs     *float64 `json:"default_ms"`
	UnscheduledMs *float64 `json:"unscheduled_ms"`
	// Layout is where loom puts the channels of the case's convolutions
	// and poolings: NCHW (empty) where loom's own choice keeps every one
	// of them there (fusion.KeepsChannelsFirst: a grouped convolution of
	// narrow groups), else NHWC, as oneDNN's best layout may, with the
	// graph's NCHW input and output converted by kernels of their own, timed
	// apart in ConvertMs (on default schedules) and left out of LoomMs and
	// DefaultMs, as oneDNN's side leaves its reorders out of its timed
	// loop. The weights stay inputs; a convolution's filters are moved
	// into loom's panels by such a conversion (fusion's runtimePanels and,
	// for a 1x1 convolution made a matrix product, runtimeMatrixPanels), as
	// oneDNN reorders its weights outside its loop.
	Layout    string  `json:"layout,omitempty"`
	ConvertMs float64 `json:"convert_ms,omitempty"`
	TuneS     float64 `json:"tune_s"`
	CPU       string  `json:"cpu"` // the machine's CPU model, as /proc/cpuinfo names it
	Error     string  `json:"error,omitempty"`
}

// sameRun reports whether l measured what a line for case name with these
// settings on this CPU would, successfully: a suite run resumed with
// -results skips it.
func (l suiteLine) sameRun(name string, threads, trials int, cpu string) bool {
	return l.Case == name && l.Threads == threads && l.Trials == trials && l.CPU == cpu && l.Error == ""
}

// readResults reads the suite lines of a -results file (none if it does
// not exist yet). A line cut short by a killed run is skipped: that case
// runs again.
func readResults(path string) ([]suiteLine, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var lines []suiteLine
	for _, text := range strings.Split(string(data), "\n") {
		var l suiteLine
		if strings.TrimSpace(text) == "" || json.Unmarshal([]byte(text), &l) != nil {
			continue
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// summarizeSuite writes the geometric means of the ratios (against
// oneDNN's faster layout, and against its plain layouts) and the cases
// below 0.7 of oneDNN's speed, per thread count, over the lines with a
// ratio.
func summarizeSuite(w io.Writer, lines []suiteLine) {
	byThreads := map[int][]suiteLine{}
	var threads []int
	for _, l := range lines {
		if l.Ratio == nil || *l.Ratio <= 0 {
			continue
		}
		if byThreads[l.Threads] == nil {
			threads = append(threads, l.Threads)
		}
		byThreads[l.Threads] = append(byThreads[l.Threads], l)
	}
	sort.Ints(threads)
	for _, t := range threads {
		ls := byThreads[t]
		sort.Slice(ls, func(i, j int) bool { return *ls[i].Ratio < *ls[j].Ratio })
		logSum, plainSum, nAny := 0.0, 0.0, 0
		var below []string
		for _, l := range ls {
			logSum += math.Log(*l.Ratio)
			plain := *l.Ratio
			if l.RatioPlain != nil {
				plain = *l.RatioPlain
				nAny++
			}
			plainSum += math.Log(plain)
			if *l.Ratio < 0.7 {
				below = append(below, fmt.Sprintf("%s %.2f", l.Case, *l.Ratio))
			}
		}
		fmt.Fprintf(w, "loom bench -suite: %d threads: %d cases against oneDNN, geometric mean of oneDNN ms / loom ms %.3f (oneDNN at its best layout where faster, %d cases have one; at its plain layouts %.3f), worst %s %.2f, best %s %.2f\n",
			t, len(ls), math.Exp(logSum/float64(len(ls))), nAny, math.Exp(plainSum/float64(len(ls))), ls[0].Case, *ls[0].Ratio, ls[len(ls)-1].Case, *ls[len(ls)-1].Ratio)
		if len(below) > 0 {
			fmt.Fprintf(w, "  below 0.7: %s\n", strings.Join(below, ", "))
		}
	}
	summarizeDefaults(w, lines)
}

// summarizeDefaults writes, per thread count, the geometric means of the
// default schedule's speed against the tuned one's and oneDNN's, and the
// cases whose default is slower than their unscheduled nests.
func summarizeDefaults(w io.Writer, lines []suiteLine) {
	type sums struct {
		tuned, onednn         float64
		nTuned, nOneDNN       int
		slowerThanUnscheduled []string
	}
	by := map[int]*sums{}
	var threads []int
	for _, l := range lines {
		if l.DefaultMs == nil || *l.DefaultMs <= 0 || l.Error != "" {
			continue
		}
		s := by[l.Threads]
		if s == nil {
			s = &sums{}
			by[l.Threads] = s
			threads = append(threads, l.Threads)
		}
		s.tuned += math.Log(l.LoomMs / *l.DefaultMs)
		s.nTuned++
		if l.OneDNNMs != nil {
			s.onednn += math.Log(*l.OneDNNMs / *l.DefaultMs)
			s.nOneDNN++
		}
		if l.UnscheduledMs != nil && *l.DefaultMs > *l.UnscheduledMs {
			s.slowerThanUnscheduled = append(s.slowerThanUnscheduled, fmt.Sprintf("%s %.2fx", l.Case, *l.UnscheduledMs / *l.DefaultMs))
		}
	}
	sort.Ints(threads)
	for _, t := range threads {
		s := by[t]
		fmt.Fprintf(w, "loom bench -suite: %d threads: the default schedule, geometric mean of tuned ms / default ms %.3f over %d cases", t, math.Exp(s.tuned/float64(s.nTuned)), s.nTuned)
		if s.nOneDNN > 0 {
			fmt.Fprintf(w, ", of oneDNN ms / default ms %.3f over %d", math.Exp(s.onednn/float64(s.nOneDNN)), s.nOneDNN)
		}
		fmt.Fprintln(w)
		if len(s.slowerThanUnscheduled) > 0 {
			fmt.Fprintf(w, "  default slower than unscheduled: %s\n", strings.Join(s.slowerThanUnscheduled, ", "))
		}
	}
}

// runSuite tunes every graph of dir (whose file name matches the cases
// pattern) and prints one JSON line per case. With a results file it
// appends each line there too (synced, so that a killed run loses at most
// the case it was on), and a case that file already has a good line for,
// at the same threads and trials on this CPU, is not run again: its line
// is printed as it was. A summary of the ratios goes to stderr.
func runSuite(dir, cases, onednn string, threads, trials int, dbPath, results string, stdout, stderr io.Writer) int {
	re, err := regexp.Compile(cases)
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: -cases: %v\n", err)
		return 2
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		fmt.Fprintf(stderr, "loom bench: -suite %s: no graph files (NAME.json) there\n", dir)
		return 1
	}
	sort.Strings(files)
	t, err := newCPUTuner(threads, trials, 1, &dbPath, 6, time.Minute, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	defer t.close()
	// The kernels timed in process (warmCall) run on the tuner's threads.
	if err := native.SetThreads(t.threads); err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	cpu := native.HostCPU()
	var done []suiteLine
	var resultsFile *os.File
	if results != "" {
		if done, err = readResults(results); err != nil {
			fmt.Fprintf(stderr, "loom bench: -results: %v\n", err)
			return 1
		}
		if resultsFile, err = os.OpenFile(results, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
			fmt.Fprintf(stderr, "loom bench: -results: %v\n", err)
			return 1
		}
		defer resultsFile.Close()
	}
	var printed []suiteLine
	defer func() { summarizeSuite(stderr, printed) }()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	status := 0
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		if !re.MatchString(name) {
			continue
		}
		if ctx.Err() != nil {
			return 130
		}
		if i := slices.IndexFunc(done, func(l suiteLine) bool { return l.sameRun(name, t.threads, trials, cpu) }); i >= 0 {
			data, _ := json.Marshal(done[i])
			fmt.Fprintln(stdout, string(data))
			printed = append(printed, done[i])
			continue
		}
		line := suiteCase(ctx, t, file, name)
		line.CPU = cpu
		if onednn != "" && line.Error == "" {
			res, ok, err := oneDNNCase(onednn, file, t.threads)
			switch {
			case err != nil:
				line.Error = "onednn: " + err.Error()
			case ok:
				line.setOneDNN(res)
			}
		}
		if line.Error != "" {
			status = 1
		}
		data, _ := json.Marshal(line)
		fmt.Fprintln(stdout, string(data))
		if line.LoomCV > autotune.BusyVariation {
			fmt.Fprintf(stderr, "loom bench: %s: loom's samples vary by %.0f%% (coefficient of variation): the machine is busy, and the figures are not to be trusted to better than that\n", line.Case, 100*line.LoomCV)
		}
		printed = append(printed, line)
		if resultsFile != nil && ctx.Err() == nil { // an interrupted case's line is partial
			if _, err := resultsFile.Write(append(data, '\n')); err == nil {
				err = resultsFile.Sync()
			}
			if err != nil {
				fmt.Fprintf(stderr, "loom bench: -results: %v\n", err)
				return 1
			}
		}
	}
	return status
}

// suiteCase tunes the kernels of one graph.
func suiteCase(ctx context.Context, t *tuner, file, name string) suiteLine {
	line := suiteLine{Case: name, Threads: t.threads, Trials: t.opts.Trials}
	begin := time.Now()
	defer func() { line.TuneS = time.Since(begin).Seconds() }()
	src := source{graph: file}
	g, err := readGraph(file)
	if err != nil {
		line.Error = err.Error()
		return line
	}
	if slices.ContainsFunc(g.Nodes, func(n *fusion.Node) bool {
		return (n.Op == "conv2d" || n.Op == "max_pool2d" || n.Op == "avg_pool2d") && !fusion.KeepsChannelsFirst(n)
	}) {
		line.Layout = fusion.LayoutChannelsLast
		src.layout.channels = line.Layout
	}
	jobs, err := src.jobs()
	if err != nil {
		line.Error = err.Error()
		return line
	}
	dflt, unscheduled := 0.0, 0.0
	for _, j := range jobs {
		if j.conversion {
			ms := defaultCall(t, j)
			if ms == nil {
				line.Error = fmt.Sprintf("%s: the layout conversion has no default schedule or did not run in process", j.Name)
				return line
			}
			line.ConvertMs += *ms
			continue
		}
		line.Kernels++
		if t.opts.Trials == 0 {
			// No search: the kernel on its default schedule is the result.
			timing := defaultTiming(t, j)
			if timing == nil {
				line.Error = fmt.Sprintf("%s: the default schedule did not compile or run in process", j.Name)
				return line
			}
			ms := float64(timing.Best) / 1e6
			line.KernelMs = append(line.KernelMs, ms)
			line.LoomMs += ms
			line.LoomCV = max(line.LoomCV, timing.CV)
			dflt += ms
			unscheduled = math.NaN() // not timed: the point of -trials 0 is a quick run
			continue
		}
		sum, best, err := t.tune(ctx, j)
		if err != nil {
			line.Error = fmt.Sprintf("%s: %v", j.Name, err)
			return line
		}
		line.Failed += sum.Failed
		line.Distinct += sum.Distinct
		line.SearchMs += sum.BestMs
		timing := warmTiming(best, j)
		if timing == nil {
			line.Error = fmt.Sprintf("%s: the tuned kernel did not run in process", j.Name)
			return line
		}
		ms := float64(timing.Best) / 1e6
		line.KernelMs = append(line.KernelMs, ms)
		line.LoomMs += ms
		line.LoomCV = max(line.LoomCV, timing.CV)
		d := math.NaN()
		if ms := defaultCall(t, j); ms != nil {
			d = *ms
		}
		dflt += d
		u := math.NaN()
		if ms := warmCall(j.Case.Func, j); ms != nil {
			u = *ms
		}
		unscheduled += u
	}
	if !math.IsNaN(dflt) {
		line.DefaultMs = &dflt
	}
	if !math.IsNaN(unscheduled) {
		line.UnscheduledMs = &unscheduled
	}
	line.TuneS = time.Since(begin).Seconds()
	return line
}

// defaultCall is warmCall of job j's kernel on its default schedule (nil
// where there is none or it does not run).
func defaultCall(t *tuner, j *job) *float64 {
	timing := defaultTiming(t, j)
	if timing == nil {
		return nil
	}
	ms := float64(timing.Best) / 1e6
	return &ms
}

// defaultTiming is defaultCall's measurement with its spread.
func defaultTiming(t *tuner, j *job) *bench.Timing {
	s, err := (&autotune.Space{Rules: t.rules, Target: t.target}).Decide(j.Case.Func)
	if err != nil {
		return nil
	}
	return warmTiming(s.Func(), j)
}

// warmCall compiles f and returns its best per-call time on job j's
// inputs, in ms, run warm in this process (timeCall); nil when it does not
// compile or run.
func warmCall(f *ast.Func, j *job) *float64 {
	t := warmTiming(f, j)
	if t == nil {
		return nil
	}
	ms := float64(t.Best) / 1e6
	return &ms
}

// warmTiming is warmCall's measurement with its spread.
func warmTiming(f *ast.Func, j *job) *bench.Timing {
	cache, err := native.DefaultCache()
	if err != nil {
		return nil
	}
	k, err := cache.Compile(f, llvm.Options{})
	if err != nil {
		return nil
	}
	return timeSamples(k, j.Case.Sizes, j.Case.Args(1))
}

// oneDNNResult is what oneDNN's side of a case prints: the best per-call
// time, and where it ran the case at its best layout too, both times
// (Ms is the faster).
type oneDNNResult struct {
	Ms      float64 `json:"ms"`
	PlainMs float64 `json:"ms_plain"`
	AnyMs   float64 `json:"ms_any"`
	AnyImpl string  `json:"impl_any"`
}

// setOneDNN fills the line's oneDNN figures and ratios from res.
func (l *suiteLine) setOneDNN(res oneDNNResult) {
	ms, ratio := res.Ms, res.Ms/l.LoomMs
	l.OneDNNMs, l.Ratio = &ms, &ratio
	if res.AnyMs > 0 {
		plain, anyMs, rp := res.PlainMs, res.AnyMs, res.PlainMs/l.LoomMs
		l.OneDNNPlainMs, l.OneDNNAnyMs, l.OneDNNAnyImpl, l.RatioPlain = &plain, &anyMs, res.AnyImpl, &rp
	}
}

// oneDNNCase runs the case's oneDNN side (tools/onednn/suite.cpp, built
// as bin) on inputs it shares with loom, checks its result against loom's
// (the graph's kernels as written, compiled; the harness checks its best
// layout's against its plain one's) and returns its times. ok is false
// where the case has no oneDNN line (NAME.onednn).
func oneDNNCase(bin, file string, threads int) (res oneDNNResult, ok bool, err error) {
	spec, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".onednn")
	if err != nil {
		return res, false, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return res, false, err
	}
	g, err := fusion.ReadJSON(bytes.NewReader(data))
	if err != nil {
		return res, false, err
	}
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		return res, false, err
	}
	dir, err := os.MkdirTemp("", "loom-onednn-")
	if err != nil {
		return res, false, err
	}
	defer os.RemoveAll(dir)
	r := rand.New(rand.NewPCG(1, 2))
	inputs := map[string]any{}
	for _, x := range g.Inputs {
		d, err := fusion.NewData(x, nil)
		if err != nil {
			return res, false, err
		}
		f, isFloat := d.([]float32)
		if !isFloat {
			return res, false, fmt.Errorf("input %s is %s: the oneDNN side takes float32 inputs", x.Name, x.DType)
		}
		for i := range f {
			f[i] = r.Float32()*2 - 1
		}
		inputs[x.Name] = d
		if err := os.WriteFile(filepath.Join(dir, x.Name+".bin"), floatBytes(f), 0o644); err != nil {
			return res, false, err
		}
	}
	cmd := exec.Command(bin, append([]string{dir}, strings.Fields(string(spec))...)...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("OMP_NUM_THREADS=%d", threads))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return res, false, fmt.Errorf("%s: %v: %s", bin, err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, false, fmt.Errorf("%s printed %q: %v", bin, out, err)
	}
	// The check: loom's kernels as written, compiled, on the same inputs.
	cache, err := native.DefaultCache()
	if err != nil {
		return res, false, err
	}
	want, err := p.Execute(nil, inputs, func(f *ast.Func, sizes map[string]int64, args map[string]any) error {
		k, err := cache.Compile(f, llvm.Options{})
		if err != nil {
			return err
		}
		return k.Run(sizes, args)
	})
	if err != nil {
		return res, false, err
	}
	got, err := os.ReadFile(filepath.Join(dir, "out.bin"))
	if err != nil {
		return res, false, err
	}
	name := g.Outputs[0].Name
	w, _ := want[name].([]float32)
	gotF := bytesFloat(got)
	if e := check.MaxRelErr(gotF, w); e > 1e-3 {
		return res, false, fmt.Errorf("oneDNN's result differs from loom's by %g (max relative error; tolerance 1e-3)", e)
	}
	return res, true, nil
}

func floatBytes(f []float32) []byte {
	out := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

func bytesFloat(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
