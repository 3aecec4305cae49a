package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/sysmem"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/tools/loom/internal/bench"

	"golang.org/x/tools/txtar"
)

// newFlags returns the flag set of a command: -h prints the usage line,
// what the command does, and every flag with its default.
func newFlags(name, usageLine, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: loom %s %s\n\n%s\n\nflags:\n", name, usageLine, about)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, flags before or after the positional
// arguments (loom fuse g.json -size T=4; "--" ends the flags); when it
// returns false the command returns code: 0 after -h (the help printed),
// 2 for a bad flag (one line saying which, not the whole help).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	help, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := parseInterspersed(fs, args)
	fs.Usage = help
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		help()
		return 0, false
	case err != nil:
		fmt.Fprintf(out, "loom %s: %v (see loom %s -h)\n", fs.Name(), err, fs.Name())
		return 2, false
	}
	return 0, true
}

// parseInterspersed is fs.Parse with the positional arguments allowed
// between and before flags: it parses up to each positional argument,
// sets it aside and goes on; fs.Args() are then the positional arguments
// in order.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		ended := len(args) > len(rest) && args[len(args)-len(rest)-1] == "--"
		if len(rest) == 0 || ended {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

// noArgs reports whether the command was given no positional arguments,
// and says so on stderr when it was: an extra word is an error, never
// ignored.
func noArgs(fs *flag.FlagSet, stderr io.Writer) bool {
	if fs.NArg() == 0 {
		return true
	}
	fmt.Fprintf(stderr, "loom %s: unexpected argument %q (see loom %s -h)\n", fs.Name(), fs.Arg(0), fs.Name())
	return false
}

// wrongArgs says that the command takes want as its arguments and
// returns the exit code of a usage error.
func wrongArgs(fs *flag.FlagSet, stderr io.Writer, want string) int {
	fmt.Fprintf(stderr, "loom %s: want %s as arguments, got %d (see loom %s -h)\n", fs.Name(), want, fs.NArg(), fs.Name())
	return 2
}

// sizeValue is -size: N for every dimension of a square workload (the
// matrix multiplies), or NAME=VALUE for a named dimension of a workload or
// a symbol of a graph (repeatable, or comma-separated: R=256,D=1024).
type sizeValue struct {
	n       int64
	symbols sizeFlags
}

// String prints the sizes as -size takes them: "64", "M=8,N=16", or
// both ("64,M=8"); "" for none.
func (s *sizeValue) String() string {
	if s == nil {
		return ""
	}
	var parts []string
	if s.n != 0 {
		parts = append(parts, strconv.FormatInt(s.n, 10))
	}
	if len(s.symbols) > 0 {
		parts = append(parts, s.symbols.String())
	}
	return strings.Join(parts, ",")
}

func (s *sizeValue) Set(v string) error {
	if strings.Contains(v, "=") {
		if s.symbols == nil {
			s.symbols = sizeFlags{}
		}
		return s.symbols.Set(v)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt32 {
		return fmt.Errorf("want a size N from 1 to %d, or NAME=VALUE", math.MaxInt32)
	}
	if s.n != 0 {
		return fmt.Errorf("size N given twice (%d and %d); give it once", s.n, n)
	}
	s.n = n
	return nil
}

// source is what tune, lower, replay, plot and bench act on: a built-in
// workload, or the fused kernels of a JSON operator graph.
type source struct {
	workload string
	graph    string
	layout   layoutChoice
	fn       string
	size     sizeValue
	// wholeGraph: the command takes -graph as a whole (its symbols stay
	// symbolic), not as one job per kernel at -size.
	wholeGraph bool
	// symbolic: -func's sizes may go without values (the command
	// compiles the function for every value: loom build).
	symbolic bool
	// symbolicDims, when set, names the dimensions of a built-in
	// workload the command takes as symbolic sizes (those loom tune
	// -sizes or loom bench -sweep range over), known once the flags are
	// parsed: the workload's function has them symbolic, at -size's
	// values.
	symbolicDims func() []string
	// impliedSizes, when set, are values of a graph's symbols that other
	// flags give (loom bench -sweep T=1..4096 -one-size T=64: T), used
	// where -size gives none.
	impliedSizes func() map[string]int64
}

func (src *source) register(fs *flag.FlagSet) {
	fs.StringVar(&src.workload, "workload", "gemm", "a built-in workload: "+workloadNames())
	graphFlags(fs, &src.graph, &src.layout, "act on each of its fused kernels instead of -workload")
	fs.StringVar(&src.fn, "func", "", "a function of your own in loom's text form (a .loom file, see loom fmt): act on it instead of -workload, with -size NAME=VALUE for each of its symbolic sizes")
	fs.Var(&src.size, "size", "the sizes: `NAME=VALUE` for a dimension of the workload or a symbol of -graph or -func (repeatable, or comma-separated), or N for M = N = K of gemm and gemm_bias_relu; the workloads' dimensions and defaults:\n"+workloadDims())
}

// parse parses a command's flags and returns the jobs they name; when ok
// is false the command returns code (0 after -h, 2 for bad flags or an
// unknown workload or graph).
func (src *source) parse(fs *flag.FlagSet, args []string, stderr io.Writer) (jobs []*job, code int, ok bool) {
	if code, ok := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	if !noArgs(fs, stderr) {
		return nil, 2, false
	}
	if src.graph != "" || src.fn != "" {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "workload" })
		if set {
			fmt.Fprintf(stderr, "loom %s: -workload and %s name two sources; give one\n", fs.Name(), map[bool]string{true: "-graph", false: "-func"}[src.graph != ""])
			return nil, 2, false
		}
	}
	if src.graph != "" && src.wholeGraph {
		return nil, 0, true
	}
	jobs, err := src.jobs()
	if err != nil {
		fmt.Fprintf(stderr, "loom %s: %v\n", fs.Name(), err)
		return nil, 2, false
	}
	return jobs, 0, true
}

// job is one function to act on.
type job struct {
	Name  string
	Shape string
	Case  workload.Case
	Flops float64 // its operation count, 0 when its speed is in bytes
	// flopsAt, for a workload that counts operations and has symbolic
	// sizes, is the count at other values of them (a bucket's sizes).
	flopsAt func(sizes map[string]int64) float64
	// fixed are the constant dimensions of a built-in workload with
	// symbolic ones, NAME=VALUE: a bucket's shape shows them.
	fixed []string
	// Bucket and SizeSets make the job a bucket's (loom tune -buckets):
	// the range of a symbolic size it is tuned for, and the sizes it is
	// measured at (Case.Sizes the first of them).
	Bucket   map[string][2]int64
	SizeSets []map[string]int64
	// conversion: the kernel only moves a graph input or output between
	// layouts (isConversion); the suite times it apart.
	conversion bool
	// weights are the positions of the graph's constants among the
	// kernel's parameters (fusion.Plan.Weights): a model's tuning times
	// the kernel with them out of the caches (autotune.Task.Cold).
	weights []int
}

// rate is how fast a run of seconds is, in the job's unit. A bucket's
// seconds are a geometric mean over its sizes, and so is the work its
// rate divides by them.
func (j *job) rate(seconds float64) float64 {
	if len(j.SizeSets) > 0 {
		logs := 0.0
		for _, sizes := range j.SizeSets {
			c := j.Case
			c.Sizes = sizes
			work := float64(bench.Traffic(c))
			if j.Flops > 0 && j.flopsAt != nil {
				work = j.flopsAt(sizes)
			}
			logs += math.Log(max(work, 1))
		}
		return math.Exp(logs/float64(len(j.SizeSets))) / seconds / 1e9
	}
	if j.Flops > 0 {
		return j.Flops / seconds / 1e9
	}
	return float64(bench.Traffic(j.Case)) / seconds / 1e9
}

// unit is GFLOP/s when the job counts operations, else GB/s over its
// parameters.
func (j *job) unit() string {
	if j.Flops > 0 {
		return "GFLOP/s"
	}
	return "GB/s"
}

func (j *job) speed(seconds float64) string {
	return fmt.Sprintf("%.1f %s", j.rate(seconds), j.unit())
}

func (src *source) jobs() ([]*job, error) {
	if src.fn != "" {
		if src.graph != "" {
			return nil, fmt.Errorf("-func and -graph name two sources; give one")
		}
		return src.funcJob()
	}
	if src.graph == "" {
		w, err := bench.Lookup(src.workload)
		if err != nil {
			return nil, err
		}
		d, err := w.Sizes(src.size.n, src.size.symbols)
		if err != nil {
			return nil, err
		}
		var symbolic []string
		if src.symbolicDims != nil {
			symbolic = src.symbolicDims()
		}
		c, err := w.Case(d, symbolic...)
		if err != nil {
			return nil, err
		}
		j := &job{Name: w.Name, Shape: w.Shape(d), Case: c, Flops: w.Flops(d)}
		if len(symbolic) > 0 {
			var shape []string
			for _, dim := range w.Dims {
				if _, ok := c.Sizes[dim.Name]; ok {
					shape = append(shape, dim.Name+" (symbolic)")
				} else {
					j.fixed = append(j.fixed, fmt.Sprintf("%s=%d", dim.Name, d[dim.Name]))
					shape = append(shape, j.fixed[len(j.fixed)-1])
				}
			}
			j.Shape = strings.Join(shape, ", ")
		}
		if len(c.Sizes) > 0 && j.Flops > 0 {
			j.flopsAt = func(sizes map[string]int64) float64 {
				at := maps.Clone(d)
				for name, v := range sizes {
					at[name] = int(v)
				}
				return w.Flops(at)
			}
		}
		return []*job{j}, nil
	}
	if src.size.n != 0 {
		return nil, fmt.Errorf("-graph takes its symbols' values as -size NAME=VALUE, not -size %d", src.size.n)
	}
	g, err := readGraph(src.graph)
	if err != nil {
		return nil, err
	}
	var missing []string
	symbols := map[string]bool{}
	var implied map[string]int64
	if src.impliedSizes != nil {
		implied = src.impliedSizes()
	}
	for _, s := range g.Symbols() {
		symbols[s] = true
		if _, ok := src.size.symbols[s]; !ok {
			if v, ok := implied[s]; ok {
				if src.size.symbols == nil {
					src.size.symbols = map[string]int64{}
				}
				src.size.symbols[s] = v
				continue
			}
			missing = append(missing, s)
		}
	}
	for name, v := range src.size.symbols {
		if !symbols[name] {
			return nil, fmt.Errorf("%s has no symbol %s (it has %s)", src.graph, name, strings.Join(g.Symbols(), ", "))
		}
		if v <= 0 || v > math.MaxInt32 {
			return nil, fmt.Errorf("-size %s=%d: want 1 to %d", name, v, math.MaxInt32)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("%s: give every symbol a value: -size %s=N", src.graph, strings.Join(missing, "=N -size "))
	}
	p, err := fusion.Compile(g, src.layout.options())
	if err != nil {
		return nil, fmt.Errorf("%s: %v", src.graph, err)
	}
	var out []*job
	for _, k := range p.Kernels {
		sizes := map[string]int64{}
		for _, s := range k.Func.Sizes {
			sizes[s.Name] = src.size.symbols[s.Name]
		}
		var dims []string
		for _, s := range k.Func.Sizes {
			dims = append(dims, fmt.Sprintf("%s=%d", s.Name, sizes[s.Name]))
		}
		c := workload.Case{Name: k.Name, Func: k.Func, Sizes: sizes}
		if err := checkCase(c); err != nil {
			return nil, fmt.Errorf("%s: kernel %s at %s: %v", src.graph, k.Name, strings.Join(dims, ","), err)
		}
		out = append(out, &job{Name: k.Name, Shape: strings.Join(dims, ","), Case: c, conversion: isConversion(p, k), weights: p.Weights(k)})
	}
	return out, nil
}

// isConversion reports whether kernel k of plan p only moves the graph's
// input or output between layouts: the layout pass's transposes (at a
// chain's ends) and reshapes alone, reading only graph inputs or writing
// only graph outputs. A transpose of another permutation is work of the
// computation (a convolution's patches, see fusion's layout pass).
func isConversion(p *fusion.Plan, k *fusion.Kernel) bool {
	transposes := 0
	for _, name := range k.Nodes {
		t := p.Graph.Tensor(name)
		if t == nil || t.Producer == nil {
			return false
		}
		switch n := t.Producer; {
		case fusion.IsLayoutConversion(n):
			transposes++
		case n.Op != "reshape":
			return false
		}
	}
	atInputs := !slices.ContainsFunc(k.Inputs, func(name string) bool {
		t := p.Graph.Tensor(name)
		return t == nil || t.Producer != nil
	})
	atOutputs := !slices.ContainsFunc(k.Outputs, func(name string) bool {
		t := p.Graph.Tensor(name)
		return t == nil || !p.Graph.IsOutput(t)
	})
	return transposes > 0 && (atInputs || atOutputs)
}

func workloadDims() string {
	var lines []string
	for i := range bench.Workloads {
		w := &bench.Workloads[i]
		lines = append(lines, fmt.Sprintf("    %s: %s", w.Name, w.DimsHelp()))
	}
	return strings.Join(lines, "\n")
}

// funcJob is the job of -func: a function parsed from a .loom file, at the
// sizes -size gives its symbols.
func (src *source) funcJob() ([]*job, error) {
	if src.size.n != 0 {
		return nil, fmt.Errorf("-func takes its symbols' values as -size NAME=VALUE, not -size %d", src.size.n)
	}
	f, err := parseFile(src.fn)
	if err != nil {
		return nil, err
	}
	sizes := map[string]int64{}
	var missing, dims []string
	for _, s := range f.Sizes {
		v, ok := src.size.symbols[s.Name]
		if !ok {
			missing = append(missing, s.Name)
			continue
		}
		sizes[s.Name] = v
		dims = append(dims, fmt.Sprintf("%s=%d", s.Name, v))
	}
	if len(missing) > 0 && !src.symbolic {
		return nil, fmt.Errorf("%s: give every symbolic size a value: -size %s=N", src.fn, strings.Join(missing, "=N -size "))
	}
	for name := range src.size.symbols {
		if f.Size(name) == nil {
			return nil, fmt.Errorf("%s: function %s has no symbolic size %s", src.fn, f.Name, name)
		}
	}
	c := workload.Case{Name: f.Name, Func: f, Sizes: sizes}
	if len(missing) > 0 {
		return []*job{{Name: f.Name, Shape: paramShapes(f), Case: c}}, nil
	}
	if err := checkCase(c); err != nil {
		return nil, fmt.Errorf("%s: %v", src.fn, err)
	}
	shape := strings.Join(dims, ",")
	if shape == "" {
		shape = paramShapes(f)
	}
	return []*job{{Name: f.Name, Shape: shape, Case: c}}, nil
}

// checkCase refuses a function at sizes whose buffers the interpreter
// cannot hold, or whose arguments (with the reference's copy and a
// candidate's run) do not fit in the memory available.
func checkCase(c workload.Case) error {
	for _, p := range c.Func.Params {
		if _, err := ast.DataSize(p, c.Sizes); err != nil {
			return err
		}
	}
	return sysmem.Check("function "+c.Func.Name, 3*c.Bytes())
}

// paramShapes describes a function without symbolic sizes by its
// parameters' shapes: "A[64,64] B[64,64] C[64,64]".
func paramShapes(f *ast.Func) string {
	var parts []string
	for _, p := range f.Params {
		var dims []string
		for _, d := range p.Shape {
			dims = append(dims, ast.Print(d))
		}
		parts = append(parts, p.Name+"["+strings.Join(dims, ",")+"]")
	}
	return strings.Join(parts, " ")
}

// profileFlag registers -cpuprofile on fs; the function it returns starts
// the profile the flag asked for (none: nothing) and returns the one that
// stops it and writes the file.
func profileFlag(fs *flag.FlagSet) func() (stop func(), err error) {
	path := fs.String("cpuprofile", "", "write a Go CPU profile of this process (candidates' sampling, checks, cost model; not the llc and worker processes) to `FILE`")
	return func() (func(), error) {
		if *path == "" {
			return func() {}, nil
		}
		f, err := os.Create(*path)
		if err != nil {
			return nil, fmt.Errorf("-cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("-cpuprofile: %v", err)
		}
		return func() { pprof.StopCPUProfile(); f.Close() }, nil
	}
}

// startsAsJSON reports whether a file is not an ONNX model: its first
// byte is not 0x08, with which a model (ir_version, field 1) starts. An
// unreadable file counts as JSON, whose reader says why.
func startsAsJSON(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	var first [1]byte
	n, _ := f.Read(first[:])
	return n == 0 || first[0] != 0x08
}

// graphFlags registers -graph and -onnx, which both name the graph a
// command acts on (what: what the command does with it), and the layout
// flags (layoutFlag).
func graphFlags(fs *flag.FlagSet, graph *string, layout *layoutChoice, what string) {
	set := func(name string) func(string) error {
		return func(v string) error {
			if *graph != "" {
				return fmt.Errorf("-graph and -onnx name one graph: give one of them, once")
			}
			if v == "" {
				return fmt.Errorf("-%s: give a file", name)
			}
			*graph = v
			return nil
		}
	}
	fs.Func("graph", "an operator graph `G.json` (see fusion/doc.go; its weights file beside it), or an ONNX model: "+what, set("graph"))
	fs.Func("onnx", "an ONNX model `M.onnx` (see loom import), as -graph takes it", set("onnx"))
	layoutFlag(fs, layout)
}

// layoutChoice is how a graph's tensors are laid out: where the channels
// of its convolutions go, and whether its weight matrices are packed.
type layoutChoice struct {
	channels     string // fusion.Options.Layout
	plainWeights bool   // fusion.Options.PlainWeights
}

// options returns the fusion options of the choice.
func (l layoutChoice) options() fusion.Options {
	return fusion.Options{Layout: l.channels, PlainWeights: l.plainWeights}
}

// layoutFlag registers -layout, where the channels of a graph's 2-d
// convolutions and poolings go, and -pack-weights.
func layoutFlag(fs *flag.FlagSet, layout *layoutChoice) {
	fs.Func("layout", "where the channels of the graph's 2-d convolutions and poolings go: NCHW (as the graph says), NHWC (channels last, converted at the graph's ends) or auto (loom's choice, the default)", func(v string) error {
		switch v {
		case "auto":
			layout.channels = fusion.LayoutAuto
		case fusion.LayoutChannelsFirst, fusion.LayoutChannelsLast:
			layout.channels = v
		default:
			return fmt.Errorf("-layout %q: want NCHW, NHWC or auto", v)
		}
		return nil
	})
	fs.BoolFunc("pack-weights", "store large constant weight matrices in panels of 16 columns, and the filters of convolutions in NHWC in panels of 16 filters, when the graph is compiled (the default; -pack-weights=false keeps them as the graph gives them)", func(v string) error {
		pack, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("-pack-weights %q: want true or false", v)
		}
		layout.plainWeights = !pack
		return nil
	})
}

// readGraph reads an operator graph: loom's JSON (a file, with the
// weights file it names, or - for the standard input), the graph.json
// section of a .txtar file (as in testdata/graphs and testdata/fusion), or
// an ONNX model (a .onnx file, or any other file that does not start as
// JSON does). Errors name the file.
func readGraph(path string) (*fusion.Graph, error) {
	switch {
	case strings.HasSuffix(path, ".onnx") || (path != "-" && !strings.HasSuffix(path, ".json") && !strings.HasSuffix(path, ".txtar") && !startsAsJSON(path)):
		g, _, err := importONNX(path, nil, "")
		return g, err
	case path != "-" && !strings.HasSuffix(path, ".txtar"):
		g, err := fusion.ReadJSONFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		return g, nil
	}
	data, err := readInput(path)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".txtar") && path != "-" {
		ar := txtar.Parse(data)
		data = nil
		for _, f := range ar.Files {
			if f.Name == "graph.json" {
				data = f.Data
			}
		}
		if data == nil {
			return nil, fmt.Errorf("%s: no graph.json section", path)
		}
	}
	g, err := fusion.ReadJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return g, nil
}
