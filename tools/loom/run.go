package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/sysmem"
)

// sizeFlags collects -size NAME=VALUE flags; a name given twice is an
// error.
// fileFlags holds NAME=FILE flags (repeatable, or comma-separated).
type fileFlags map[string]string

func (f fileFlags) String() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(f)) {
		parts = append(parts, name+"="+f[name])
	}
	return strings.Join(parts, ",")
}

func (f fileFlags) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		name, file, ok := strings.Cut(part, "=")
		if !ok || name == "" || file == "" {
			return fmt.Errorf("want NAME=FILE, got %q", part)
		}
		if _, dup := f[name]; dup {
			return fmt.Errorf("%s given twice", name)
		}
		f[name] = file
	}
	return nil
}

type sizeFlags map[string]int64

// String prints the sizes as -size takes them: "S=3,T=8", by name.
func (s sizeFlags) String() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, fmt.Sprintf("%s=%d", name, s[name]))
	}
	return strings.Join(parts, ",")
}

func (s sizeFlags) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		name, val, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return fmt.Errorf("want NAME=VALUE, got %q", part)
		}
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt32 {
			return fmt.Errorf("size %s: want a whole number from 0 to %d, got %q", name, math.MaxInt32, val)
		}
		if old, ok := s[name]; ok {
			// Not the last one silently: which was meant?
			return fmt.Errorf("size %s given twice (%d and %d); give each size once", name, old, n)
		}
		s[name] = n
	}
	return nil
}

// defaultIterations is loom run's default work limit: a few seconds of
// the interpreter, more than a function at the sizes a check runs at
// takes, and an end to a loop of 2^62 iterations.
const defaultIterations = 50_000_000

// runRun interprets a function on reproducible random inputs and prints a
// summary of every buffer parameter afterwards.
func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "[-size NAME=VALUE]... [-seed N] [-max-iterations N] FILE", "Interprets a .loom function on reproducible random inputs and prints a\nsummary of every buffer parameter afterwards. It stops with an error after\n-max-iterations loop iterations.", stderr)
	sizes := sizeFlags{}
	fs.Var(sizes, "size", "value of a symbolic size, as NAME=VALUE (repeatable)")
	seed := fs.Uint64("seed", 1, "seed of the random inputs")
	asJSON := fs.Bool("json", false, "print one JSON object per buffer: buffer, elements, sum, first")
	maxIter := fs.Int64("max-iterations", defaultIterations, fmt.Sprintf("stop with an error after this many loop iterations in all, 1 to %d (the interpreter runs about ten million a second)", maxIterations))
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return wrongArgs(fs, stderr, "one FILE")
	}
	if !inRange(fs, stderr, "max-iterations", *maxIter, 1, maxIterations) {
		return 2
	}
	f, err := parseFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// The arguments are checked against the memory available before one
	// is allocated (the interpreter keeps its own buffers under its
	// limit).
	var need int64
	for _, p := range f.Params {
		n, err := ast.DataSize(p, sizes)
		if err != nil {
			fmt.Fprintln(stderr, ast.Explain(f, err))
			return 1
		}
		need += n * int64(max(p.DType.Bytes(), 1))
	}
	if err := sysmem.Check("the arguments of "+f.Name+" (twice their size, with room for the interpreter)", 2*need); err != nil {
		fmt.Fprintf(stderr, "loom run: %v\n", err)
		return 1
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	data := map[string]any{}
	for _, p := range f.Params {
		d, err := ast.NewData(p, sizes)
		if err != nil {
			fmt.Fprintln(stderr, ast.Explain(f, err))
			return 1
		}
		check.FillRandom(d, rng)
		data[p.Name] = d
	}
	if _, err := ast.InterpretWithin(f, sizes, data, *maxIter); err != nil {
		if errors.Is(err, ast.ErrBudget) {
			fmt.Fprintf(stderr, "loom run: %s: %v; raise -max-iterations to run it further\n", f.Name, err)
			return 1
		}
		fmt.Fprintln(stderr, ast.Explain(f, err))
		return 1
	}
	for _, p := range f.Params {
		if *asJSON {
			json.NewEncoder(stdout).Encode(summarize(p.Name, p.DType, data[p.Name]))
			continue
		}
		fmt.Fprintf(stdout, "%s: %s\n", p.Name, summarize(p.Name, p.DType, data[p.Name]))
	}
	return 0
}

// bufferSummary is what loom run prints of a buffer.
type bufferSummary struct {
	Buffer   string    `json:"buffer"`
	Elements int       `json:"elements"`
	Sum      float64   `json:"sum"`
	First    []float64 `json:"first"` // up to 4
}

func (b bufferSummary) String() string {
	first := make([]string, len(b.First))
	for i, v := range b.First {
		first[i] = strconv.FormatFloat(v, 'g', 6, 64)
	}
	return fmt.Sprintf("%d elements, sum %.6g, first [%s]", b.Elements, b.Sum, strings.Join(first, " "))
}

// summarize returns the element count, sum and first elements of data.
func summarize(name string, t ast.DType, data any) bufferSummary {
	out := bufferSummary{Buffer: name, First: []float64{}}
	add := func(v float64) {
		if out.Elements < 4 {
			out.First = append(out.First, v)
		}
		out.Elements++
		out.Sum += v
	}
	switch d := data.(type) {
	case []float32:
		for _, v := range d {
			add(float64(v))
		}
	case []float64:
		for _, v := range d {
			add(v)
		}
	case []int32:
		for _, v := range d {
			add(float64(v))
		}
	case []int64:
		for _, v := range d {
			add(float64(v))
		}
	case []bool:
		for _, v := range d {
			if v {
				add(1)
			} else {
				add(0)
			}
		}
	case []uint16:
		value := ast.Float16Value
		if t == ast.BFloat16 {
			value = ast.BFloat16Value
		}
		for _, v := range d {
			add(value(v))
		}
	}
	return out
}
