// Command loomtime is loom's side of tools/modelbench: it compiles an
// operator graph (loom's JSON, or the graph.json section of a txtar) as a
// module with default schedules, times Module.Run, and prints one JSON
// line: the median per-call time with its spread (10th and 90th
// percentiles) over many calls.
//
//	loomtime -graph G [-size S=128,...] [-threads T] [-seconds 2] [-dir D] [-label L] [-profile F]
//
// With -profile it also writes F: one JSON line per kernel, in the order
// they run, with the kernel's median and 10th and 90th percentile time
// within whole calls (Module.RunProfiled, each kernel after the one
// before it, as a call runs them: the caches as a call leaves them, not
// as a kernel timed alone leaves them), and the schedule it ran.
//
// With -dir it writes each input and output there as raw little-endian
// float32 (NAME.bin) and their shapes in meta.json, so that ONNX Runtime
// runs on the same inputs and its outputs can be checked against loom's.
// Inputs are uniform in [-1, 1), drawn from a fixed seed.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/rawdata"
	"github.com/loom-go/loom/module"
	"github.com/loom-go/loom/onnx"
	"golang.org/x/tools/txtar"
)

// line is what loomtime prints.
type line struct {
	Engine  string           `json:"engine"`
	Label   string           `json:"label,omitempty"`
	Graph   string           `json:"graph"`
	Sizes   map[string]int64 `json:"sizes"`
	Threads int              `json:"threads"`
	Calls   int              `json:"calls"`
	Median  float64          `json:"median_ms"`
	P10     float64          `json:"p10_ms"`
	P90     float64          `json:"p90_ms"`
	Min     float64          `json:"min_ms"`
	// CPU is the process's CPU time per call (user + system, all its
	// threads) over the timed calls, in ms.
	CPU float64 `json:"cpu_ms_per_call"`
	// ReadMS reads the graph (an ONNX model: imports it); CompileMS
	// compiles it (module.Compile, in this process: cold when the cache
	// directory is empty, else from the disk cache).
	ReadMS    float64 `json:"read_ms"`
	CompileMS float64 `json:"compile_ms"`
	// PeakBytes is the arena of intermediates a call uses.
	PeakBytes int64 `json:"peak_bytes"`
}

// tensorMeta describes one tensor file of -dir.
type tensorMeta struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	File  string  `json:"file"`
}

// noCache is -no-cache.
var noCache bool

func main() {
	graph := flag.String("graph", "", "the graph: loom's JSON, or a txtar with a graph.json section")
	sizeFlag := flag.String("size", "", "symbol values, NAME=N separated by commas")
	threads := flag.Int("threads", 1, "threads (schedules and runtime)")
	seconds := flag.Float64("seconds", 2, "least time to spend on timed calls")
	minCalls := flag.Int("calls", 50, "least number of timed calls")
	dir := flag.String("dir", "", "write inputs, outputs and meta.json here")
	label := flag.String("label", "", "a label copied into the output line")
	compileOnly := flag.Bool("compile-only", false, "read and compile the graph, print the line (no calls), and stop")
	dbPath := flag.String("db", "", "a tuning database: each kernel runs its fastest record there (loom tune -model), the default schedule where it has none")
	profile := flag.String("profile", "", "also write each kernel's time within whole calls to this file (JSON lines)")
	flag.BoolVar(&noCache, "no-cache", false, "compile every kernel afresh, without the module cache (its key names the build of loom, so two builds never share it; this rules the cache out altogether, to time compilation)")
	flag.Parse()
	if *compileOnly {
		*minCalls = 0
	}
	if err := run(*graph, *sizeFlag, *threads, *seconds, *minCalls, *dir, *label, *dbPath, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "loomtime:", err)
		os.Exit(1)
	}
}

func run(path, sizeFlag string, threads int, seconds float64, minCalls int, dir, label, dbPath, profile string) error {
	if threads < 1 {
		return fmt.Errorf("-threads %d: want at least 1", threads)
	}
	if seconds <= 0 || minCalls < 0 {
		return fmt.Errorf("-seconds %g, -calls %d: want both positive", seconds, minCalls)
	}
	t0 := time.Now()
	g, onnxNames, err := readGraph(path)
	if err != nil {
		return err
	}
	readMS := float64(time.Since(t0).Microseconds()) / 1000
	sizes, err := parseSizes(sizeFlag)
	if err != nil {
		return err
	}
	for _, s := range g.Symbols() {
		if _, ok := sizes[s]; !ok {
			return fmt.Errorf("-size: give symbol %s a value", s)
		}
	}
	if err := native.SetThreads(threads); err != nil {
		return err
	}
	t1 := time.Now()
	opts := module.Options{Threads: threads, NoCache: noCache}
	if dbPath != "" {
		if opts.Database, err = autotune.OpenDatabase(dbPath); err != nil {
			return err
		}
	}
	m, err := module.Compile(g, opts)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	compileMS := float64(time.Since(t1).Microseconds()) / 1000
	if minCalls == 0 {
		b, _ := json.Marshal(line{Engine: "loom", Label: label, Graph: g.Name, Sizes: sizes, Threads: threads, ReadMS: readMS, CompileMS: compileMS})
		fmt.Println(string(b))
		return nil
	}
	rng := rand.New(rand.NewPCG(1, 2))
	inputs := map[string]module.Tensor{}
	var metaIn []tensorMeta
	for _, x := range m.Inputs() {
		d, err := fusion.NewData(x, sizes)
		if err != nil {
			return fmt.Errorf("input %s: %v", x.Name, err)
		}
		// Floats uniform in [-1, 1); integers (token ids, indices) in
		// [0, 100), valid indices of any vocabulary.
		switch v := d.(type) {
		case []float32:
			for i := range v {
				v[i] = rng.Float32()*2 - 1
			}
		case []int64:
			for i := range v {
				v[i] = rng.Int64N(100)
			}
		case []int32:
			for i := range v {
				v[i] = rng.Int32N(100)
			}
		default:
			return fmt.Errorf("input %s: only float32, int32 and int64 inputs are supported, not %T", x.Name, d)
		}
		shape := make([]int64, len(x.Shape))
		for k, dim := range x.Shape {
			if shape[k], err = dim.Eval(sizes); err != nil {
				return fmt.Errorf("input %s: %v", x.Name, err)
			}
		}
		inputs[x.Name] = module.Tensor{Shape: shape, Data: d}
		metaIn = append(metaIn, tensorMeta{Name: nameIn(onnxNames, x.Name), DType: x.DType.String(), Shape: shape, File: x.Name + ".bin"})
	}
	outputs, err := m.NewOutputs(inputs)
	if err != nil {
		return err
	}
	for i := 0; i < 3; i++ { // warm-up
		if err := m.Run(inputs, outputs); err != nil {
			return err
		}
	}
	if dir != "" {
		if err := write(dir, g.Name, inputs, outputs, metaIn, onnxNames); err != nil {
			return err
		}
		// The same files by position, as the C library takes its
		// tensors: input_K.bin and output_K.bin.
		for k, x := range m.Inputs() {
			if err := copyFile(filepath.Join(dir, x.Name+".bin"), filepath.Join(dir, fmt.Sprintf("input_%d.bin", k))); err != nil {
				return err
			}
		}
		for k, x := range m.Outputs() {
			if err := copyFile(filepath.Join(dir, "out_"+x.Name+".bin"), filepath.Join(dir, fmt.Sprintf("output_%d.bin", k))); err != nil {
				return err
			}
		}
	}
	var times []float64
	cpu0 := cpuTime()
	start := time.Now()
	for len(times) < minCalls || time.Since(start).Seconds() < seconds {
		t := time.Now()
		if err := m.Run(inputs, outputs); err != nil {
			return err
		}
		times = append(times, float64(time.Since(t).Nanoseconds())/1e6)
		if len(times) >= 100000 {
			break
		}
	}
	cpu := cpuTime() - cpu0
	peak, _, err := m.Memory(inputs)
	if err != nil {
		return err
	}
	slices.Sort(times)
	pct := func(p float64) float64 { return times[min(len(times)-1, int(p*float64(len(times))))] }
	out := line{
		Engine: "loom", Label: label, Graph: g.Name, Sizes: sizes, Threads: threads, Calls: len(times),
		Median: pct(0.5), P10: pct(0.1), P90: pct(0.9), Min: times[0],
		CPU:    cpu.Seconds() * 1000 / float64(len(times)),
		ReadMS: readMS, CompileMS: compileMS, PeakBytes: peak,
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	if profile != "" {
		return writeProfile(profile, m, inputs, outputs, len(times))
	}
	return nil
}

// kernelLine is one line of -profile's file.
type kernelLine struct {
	Kernel   string  `json:"kernel"`
	Schedule string  `json:"schedule"`
	Median   float64 `json:"median_ms"`
	P10      float64 `json:"p10_ms"`
	P90      float64 `json:"p90_ms"`
}

// writeProfile times each kernel within calls calls of m (at least 20)
// and writes their lines to path.
func writeProfile(path string, m *module.Module, inputs, outputs map[string]module.Tensor, calls int) error {
	calls = max(calls, 20)
	kernels := m.Kernels()
	per := make([][]float64, len(kernels))
	for range calls {
		ts, err := m.RunProfiled(inputs, outputs)
		if err != nil {
			return err
		}
		for k, t := range ts {
			per[k] = append(per[k], float64(t.Nanoseconds())/1e6)
		}
	}
	var b strings.Builder
	for k, ts := range per {
		slices.Sort(ts)
		pct := func(p float64) float64 { return ts[min(len(ts)-1, int(p*float64(len(ts))))] }
		l, _ := json.Marshal(kernelLine{Kernel: kernels[k][0], Schedule: kernels[k][1], Median: pct(0.5), P10: pct(0.1), P90: pct(0.9)})
		b.Write(l)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// write writes the inputs and outputs as raw float32 files and meta.json.
func write(dir, graph string, inputs, outputs map[string]module.Tensor, metaIn []tensorMeta, onnxNames map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var metaOut []tensorMeta
	names := make([]string, 0, len(outputs))
	for name := range outputs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		metaOut = append(metaOut, tensorMeta{Name: nameIn(onnxNames, name), DType: "float32", Shape: outputs[name].Shape, File: "out_" + name + ".bin"})
	}
	for _, set := range []struct {
		meta []tensorMeta
		data map[string]module.Tensor
	}{{metaIn, inputs}, {metaOut, outputs}} {
		for _, t := range set.meta {
			loomName := strings.TrimSuffix(strings.TrimPrefix(t.File, "out_"), ".bin")
			buf, err := rawdata.Append(nil, set.data[loomName].Data)
			if err != nil {
				return fmt.Errorf("%s: %v", t.Name, err)
			}

			if err := os.WriteFile(filepath.Join(dir, t.File), buf, 0o644); err != nil {
				return err
			}
		}
	}
	b, err := json.MarshalIndent(map[string]any{"graph": graph, "inputs": metaIn, "outputs": metaOut}, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "meta.json"), b, 0o644)
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

// readGraph reads loom's JSON graph (with its weights file), the
// graph.json section of a txtar, or an ONNX model; for a model it also
// returns the model's names of the graph's tensors.
func readGraph(path string) (*fusion.Graph, map[string]string, error) {
	switch {
	case path == "":
		return nil, nil, fmt.Errorf("-graph: give a graph file")
	case strings.HasSuffix(path, ".onnx"):
		m, err := onnx.ImportFile(path, onnx.Options{})
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %v", path, err)
		}
		return m.Graph, m.ONNXNames, nil
	case !strings.HasSuffix(path, ".txtar"):
		g, err := fusion.ReadJSONFile(path)
		return g, nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	ar := txtar.Parse(data)
	data = nil
	for _, f := range ar.Files {
		if f.Name == "graph.json" {
			data = f.Data
		}
	}
	if data == nil {
		return nil, nil, fmt.Errorf("%s: no graph.json section", path)
	}
	g, err := fusion.ParseJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", path, err)
	}
	return g, nil, nil
}

// nameIn is a tensor's name in the model it came from (its own without
// one).
func nameIn(onnxNames map[string]string, name string) string {
	if n, ok := onnxNames[name]; ok {
		return n
	}
	return name
}

// parseSizes parses NAME=N,NAME=N.
func parseSizes(s string) (map[string]int64, error) {
	sizes := map[string]int64{}
	if s == "" {
		return sizes, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(val, 10, 64)
		if !ok || name == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("-size %q: want NAME=N with N >= 0, separated by commas", kv)
		}
		if _, dup := sizes[name]; dup {
			return nil, fmt.Errorf("-size: %s given twice", name)
		}
		sizes[name] = n
	}
	return sizes, nil
}
