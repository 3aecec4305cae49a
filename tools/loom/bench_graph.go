package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/npy"
	"github.com/loom-go/loom/module"
	"github.com/loom-go/loom/tools/loom/internal/bench"
)

// graphLine is loom bench -graph's result.
type graphLine struct {
	Graph   string           `json:"graph"`
	Sizes   map[string]int64 `json:"sizes"`
	Threads int              `json:"threads"`
	Kernels int              `json:"kernels"`
	// Schedules counts the kernels by where their schedule came from.
	Schedules map[string]int `json:"schedules"`
	// MS is the best time of a whole call (Module.Run); KernelMS the sum
	// of each kernel's best call alone; Overhead the difference (the
	// runtime: shapes, checks, arena, argument packing), in ms and as a
	// fraction of MS, and per call in microseconds.
	MS            float64 `json:"ms"`
	KernelMS      float64 `json:"kernel_ms"`
	OverheadMS    float64 `json:"overhead_ms"`
	OverheadFrac  float64 `json:"overhead_frac"`
	OverheadMicro float64 `json:"overhead_us"`
	// RuntimeMicro is the least time, in microseconds, that one call
	// spent outside its kernels (shapes, checks, arena, argument
	// packing; timed around the kernels of the same call): the overhead
	// without what the kernels' best calls gain from each other's noise
	// and from running alone (the minimum of each kernel's own samples
	// sums to less than any one call's kernels).
	RuntimeMicro float64 `json:"runtime_us"`
	PeakBytes    int64   `json:"peak_bytes"`
	NaiveBytes   int64   `json:"naive_bytes"`
	// GraphOrderPeak is the peak had the kernels run in the graph's
	// order (before the exec-order pass).
	GraphOrderPeak int64 `json:"graph_order_peak_bytes"`
	// CompileColdMS compiles in empty caches (every kernel built);
	// CompileMS decides the schedules again with the kernels cached;
	// CompileCachedMS compiles the same graph again (a lookup).
	CompileColdMS   float64 `json:"compile_cold_ms"`
	CompileMS       float64 `json:"compile_ms"`
	CompileCachedMS float64 `json:"compile_cached_ms"`
	Samples         int     `json:"samples"`
	// MedianMS is the median sample's time a call, and CV the samples'
	// coefficient of variation: above 0.1 the machine was too busy for
	// the figures to be trusted to better than that.
	MedianMS float64 `json:"median_ms"`
	CV       float64 `json:"cv"`
	// EachKernel is each kernel's best call alone, in the order they run:
	// where the time goes.
	EachKernel []kernelTime `json:"each_kernel"`
}

// kernelTime is one kernel's best time in loom bench -graph's line.
type kernelTime struct {
	Kernel   string  `json:"kernel"`
	Schedule string  `json:"schedule"` // where its schedule came from (see Module.Kernels)
	MS       float64 `json:"ms"`
}

// benchGraph compiles a graph as a module and times it (loom bench
// -graph), on random inputs or on the arrays of inputFiles (.npy files
// by input name); with outDir it writes the outputs there as .npy files.
func benchGraph(path string, layout layoutChoice, sizes map[string]int64, threads int, dbPath string, inputFiles map[string]string, outDir string, stdout, stderr io.Writer) int {
	g, err := readGraph(path)
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	given, err := readInputs(g, inputFiles)
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 2
	}
	for _, s := range g.Symbols() {
		if _, ok := sizes[s]; !ok && given == nil {
			fmt.Fprintf(stderr, "loom bench: give every symbol a value: -size %s=N (or give the inputs: -input NAME=FILE.npy)\n", s)
			return 2
		}
	}
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	if err := native.SetThreads(threads); err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	opts := module.Options{Threads: threads, Layout: layout.channels, PlainWeights: layout.plainWeights}
	if dbPath != "" {
		db, err := openDatabase(dbPath, "bench", stderr)
		if err != nil {
			fmt.Fprintf(stderr, "loom bench: %v\n", err)
			return 1
		}
		opts.Database = db
	} else if cache, err := native.DefaultCache(); err == nil {
		if db, err := openDatabase(defaultDB(cache), "bench", stderr); err == nil {
			opts.Database = db
		}
	}
	if sizes == nil {
		sizes = map[string]int64{} // {} in the JSON, not null
	}
	line := graphLine{Graph: g.Name, Sizes: sizes, Threads: threads, Schedules: map[string]int{}}

	// Cold: empty caches.
	tmp, err := os.MkdirTemp("", "loom-bench-graph-")
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	coldCache, err := native.NewCache(tmp)
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	cold := opts
	cold.Cache, cold.NoCache = coldCache, true
	start := time.Now()
	if _, err := module.Compile(g, cold); err != nil {
		fmt.Fprintf(stderr, "loom bench: %s: %v\n", path, err)
		return 1
	}
	line.CompileColdMS = ms(time.Since(start))
	// Warm kernels, schedules decided again.
	warm := opts
	warm.NoCache = true
	start = time.Now()
	if _, err := module.Compile(g, warm); err != nil {
		fmt.Fprintf(stderr, "loom bench: %s: %v\n", path, err)
		return 1
	}
	line.CompileMS = ms(time.Since(start))
	m, err := module.Compile(g, opts) // fills the cache
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %s: %v\n", path, err)
		return 1
	}
	start = time.Now()
	if m, err = module.Compile(g, opts); err != nil {
		fmt.Fprintf(stderr, "loom bench: %s: %v\n", path, err)
		return 1
	}
	line.CompileCachedMS = ms(time.Since(start))
	for _, k := range m.Kernels() {
		line.Schedules[k[1]]++
	}
	line.Kernels = len(m.Kernels())

	inputs := given
	if given != nil {
		if sizes, err = m.Sizes(given); err != nil {
			fmt.Fprintf(stderr, "loom bench: the inputs: %v\n", err)
			return 1
		}
		line.Sizes = sizes
	} else if inputs, err = randomInputs(g, m, sizes); err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	outputs, err := m.NewOutputs(inputs)
	if err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	if line.PeakBytes, line.NaiveBytes, err = m.Memory(inputs); err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	if line.GraphOrderPeak, err = m.GraphOrderPeak(inputs); err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	// Samples, as ../shared/peers takes them: a warm-up call, then
	// samples of reps calls (each sample at least 20 ms), at least 5 and
	// more while they total under 0.3 s (at most 30); the best counts.
	if _, err := m.RunProfiled(inputs, outputs); err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	start = time.Now()
	if err := m.Run(inputs, outputs); err != nil {
		fmt.Fprintf(stderr, "loom bench: %v\n", err)
		return 1
	}
	reps := max(1, int(20*time.Millisecond/max(time.Since(start), time.Microsecond)))
	best := time.Duration(1 << 62)
	bestKernel := make([]time.Duration, line.Kernels)
	for i := range bestKernel {
		bestKernel[i] = 1 << 62
	}
	var total time.Duration
	var samples []time.Duration
	runtime := time.Duration(1 << 62)
	for line.Samples < 5 || (total < 300*time.Millisecond && line.Samples < 30) {
		start := time.Now()
		for range reps {
			if err := m.Run(inputs, outputs); err != nil {
				fmt.Fprintf(stderr, "loom bench: %v\n", err)
				return 1
			}
		}
		d := time.Since(start)
		total += d
		best = min(best, d/time.Duration(reps))
		samples = append(samples, d/time.Duration(reps))
		// The kernels alone, in separate calls; and the time of each
		// such call outside its kernels.
		for range reps {
			start := time.Now()
			times, err := m.RunProfiled(inputs, outputs)
			wall := time.Since(start)
			if err != nil {
				fmt.Fprintf(stderr, "loom bench: %v\n", err)
				return 1
			}
			for i, t := range times {
				bestKernel[i] = min(bestKernel[i], t)
				wall -= t
			}
			runtime = min(runtime, wall)
		}
		line.Samples++
	}
	line.MS = ms(best)
	slices.Sort(samples)
	line.MedianMS, line.CV = ms(samples[len(samples)/2]), bench.Variation(samples)
	if line.CV > autotune.BusyVariation {
		fmt.Fprintf(stderr, "loom bench: %s: the samples vary by %.0f%% (coefficient of variation): the machine is busy, and the figures are not to be trusted to better than that\n", line.Graph, 100*line.CV)
	}
	names := m.Kernels()
	for i, t := range bestKernel {
		line.KernelMS += ms(t)
		line.EachKernel = append(line.EachKernel, kernelTime{Kernel: names[i][0], Schedule: names[i][1], MS: ms(t)})
	}
	if outDir != "" {
		if err := writeOutputs(g, outDir, outputs); err != nil {
			fmt.Fprintf(stderr, "loom bench: %v\n", err)
			return 1
		}
	}
	line.OverheadMS = line.MS - line.KernelMS
	line.OverheadFrac = line.OverheadMS / line.MS
	line.OverheadMicro = line.OverheadMS * 1e3
	line.RuntimeMicro = float64(runtime) / 1e3
	out, _ := json.Marshal(line)
	fmt.Fprintln(stdout, string(out))
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// randomInputs makes the module's inputs at sizes: random values, and
// integers that index a gather in its axis's range (else from 0 to 3).
func randomInputs(g *fusion.Graph, m *module.Module, sizes map[string]int64) (map[string]module.Tensor, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := map[string]module.Tensor{}
	for _, x := range m.Inputs() {
		d, err := fusion.NewData(x, sizes)
		if err != nil {
			return nil, fmt.Errorf("input %s: %v", x.Name, err)
		}
		check.FillRandom(d, rng)
		n := int64(4)
		if b, ok := gatherBound(g, x.Name, sizes); ok {
			n = b
		}
		switch v := d.(type) {
		case []int32:
			for i := range v {
				v[i] = int32(rng.Int64N(max(n, 1)))
			}
		case []int64:
			for i := range v {
				v[i] = rng.Int64N(max(n, 1))
			}
		}
		shape := make([]int64, len(x.Shape))
		for k, dim := range x.Shape {
			shape[k], _ = dim.Eval(sizes)
		}
		inputs[x.Name] = module.Tensor{Shape: shape, Data: d}
	}
	return inputs, nil
}

// readInputs reads the graph's inputs from .npy files, by the graph's or
// the model's name of each input; nil when none are given. Either every
// input is given or none.
func readInputs(g *fusion.Graph, files map[string]string) (map[string]module.Tensor, error) {
	if len(files) == 0 {
		return nil, nil
	}
	byName := map[string]*fusion.Tensor{}
	for _, x := range g.Inputs {
		byName[x.Name] = x
		if n, ok := g.ModelNames[x.Name]; ok {
			byName[n] = x
		}
	}
	inputs := map[string]module.Tensor{}
	for name, path := range files {
		x := byName[name]
		if x == nil {
			return nil, fmt.Errorf("-input %s: the graph has no input %q (it has %s)", name, name, tensorList(g.Inputs))
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("-input %s: %v", name, err)
		}
		a, err := npy.Read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("-input %s: %s: %v", name, path, err)
		}
		if a.DType != x.DType || len(a.Shape) != len(x.Shape) {
			return nil, fmt.Errorf("-input %s: %s holds %s%v; the graph's input %s is %s%s", name, path, a.DType, a.Shape, x.Name, x.DType, x.Shape)
		}
		if _, dup := inputs[x.Name]; dup {
			return nil, fmt.Errorf("-input %s: input %s is given twice", name, x.Name)
		}
		inputs[x.Name] = module.Tensor{Shape: a.Shape, Data: a.Data}
	}
	for _, x := range g.Inputs {
		if _, ok := inputs[x.Name]; !ok {
			return nil, fmt.Errorf("-input: give every input (or none, for random ones): %s is missing", x.Name)
		}
	}
	return inputs, nil
}

// writeOutputs writes each output as DIR/NAME.npy, NAME the model's name
// of it with / and other characters no file name takes as _.
func writeOutputs(g *fusion.Graph, dir string, outputs map[string]module.Tensor) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range g.Outputs {
		name := t.Name
		if n, ok := g.ModelNames[t.Name]; ok {
			name = n
		}
		name = strings.Map(func(r rune) rune {
			if r == '/' || r == '\\' || r == 0 {
				return '_'
			}
			return r
		}, name)
		if name == "." || name == ".." || name == "" {
			name = t.Name
		}
		out := outputs[t.Name]
		f, err := os.Create(filepath.Join(dir, name+".npy"))
		if err != nil {
			return err
		}
		err = npy.Write(f, &npy.Array{DType: t.DType, Shape: out.Shape, Data: out.Data})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("output %s: %v", name, err)
		}
	}
	return nil
}

// gatherBound returns the smallest size, at sizes, of an axis that the
// input named x indexes as a gather's indices; ok is false when it indexes
// none (or a size is unknown).
func gatherBound(g *fusion.Graph, x string, sizes map[string]int64) (n int64, ok bool) {
	for _, node := range g.Nodes {
		if node.Op != "gather" || len(node.Inputs) != 2 || node.Inputs[1].Name != x {
			continue
		}
		shape := node.Inputs[0].Shape
		axis := 0
		if node.Attrs.Axis != nil {
			axis = *node.Attrs.Axis
		}
		if axis < 0 {
			axis += len(shape)
		}
		if axis < 0 || axis >= len(shape) {
			continue
		}
		size, err := shape[axis].Eval(sizes)
		if err != nil {
			continue
		}
		if !ok || size < n {
			n, ok = size, true
		}
	}
	return n, ok
}
