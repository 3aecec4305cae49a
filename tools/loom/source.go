package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/bench"
	"github.com/loom-go/loom/internal/workload"
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

// parseFlags parses args; when it returns false the command returns
// code: 0 after -h, 2 for a bad flag.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	case err != nil:
		return 2, false
	}
	return 0, true
}

// sizeValue is -size: a problem size N for a built-in workload, or
// NAME=VALUE for a symbol of a graph (repeatable).
type sizeValue struct {
	n       int
	symbols sizeFlags
}

func (s *sizeValue) String() string {
	if s == nil || len(s.symbols) == 0 {
		return ""
	}
	return s.symbols.String()
}

func (s *sizeValue) Set(v string) error {
	if strings.Contains(v, "=") {
		if s.symbols == nil {
			s.symbols = sizeFlags{}
		}
		return s.symbols.Set(v)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return fmt.Errorf("want a positive size N or NAME=VALUE, got %q", v)
	}
	s.n = n
	return nil
}

// source is what tune, lower, replay, plot and bench act on: a built-in
// workload, or the fused kernels of a JSON operator graph.
type source struct {
	workload string
	graph    string
	size     sizeValue
}

func (src *source) register(fs *flag.FlagSet) {
	fs.StringVar(&src.workload, "workload", "gemm", "a built-in workload: "+workloadNames())
	fs.StringVar(&src.graph, "graph", "", "a JSON operator graph (see fusion/doc.go): act on each of its fused kernels instead of -workload")
	fs.Var(&src.size, "size", "N, the size of a sized workload (gemm: M = N = K; 0 or absent: its default), or NAME=VALUE for a symbol of -graph (repeatable)")
}

// parse parses a command's flags and returns the jobs they name; when ok
// is false the command returns code (0 after -h, 2 for bad flags or an
// unknown workload or graph).
func (src *source) parse(fs *flag.FlagSet, args []string, stderr io.Writer) (jobs []*job, code int, ok bool) {
	if code, ok := parseFlags(fs, args); !ok {
		return nil, code, false
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
}

// rate is how fast a run of seconds is, in the job's unit.
func (j *job) rate(seconds float64) float64 {
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
	if src.graph == "" {
		w, err := bench.Lookup(src.workload)
		if err != nil {
			return nil, err
		}
		if len(src.size.symbols) > 0 {
			return nil, fmt.Errorf("-size NAME=VALUE is for -graph; workload %s takes -size N", w.Name)
		}
		n := src.size.n
		if n == 0 || !w.Sized {
			n = w.DefaultSize
		}
		c := w.Case(n)
		j := &job{Name: w.Name, Shape: w.Shape(n), Case: c}
		if w.Flops != nil {
			j.Flops = w.Flops(n)
		}
		return []*job{j}, nil
	}
	f, err := os.Open(src.graph)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g, err := fusion.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", src.graph, err)
	}
	var missing []string
	for _, s := range g.Symbols() {
		if _, ok := src.size.symbols[s]; !ok {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("%s: give every symbol a value: -size %s=N", src.graph, strings.Join(missing, "=N -size "))
	}
	p, err := fusion.Compile(g, fusion.Options{})
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
		out = append(out, &job{Name: k.Name, Shape: strings.Join(dims, ","), Case: workload.Case{Name: k.Name, Func: k.Func, Sizes: sizes}})
	}
	return out, nil
}
