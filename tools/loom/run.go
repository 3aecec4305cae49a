package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

// sizeFlags collects -size NAME=VALUE flags.
type sizeFlags map[string]int64

func (s sizeFlags) String() string { return fmt.Sprint(map[string]int64(s)) }

func (s sizeFlags) Set(v string) error {
	name, val, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	n, err := strconv.ParseInt(val, 10, 64)
	if err != nil {
		return fmt.Errorf("size %s: %v", name, err)
	}
	s[name] = n
	return nil
}

// runRun interprets a function on reproducible random inputs and prints a
// summary of every buffer parameter afterwards.
func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "[-size NAME=VALUE]... [-seed N] FILE", "Interprets a .loom function on reproducible random inputs and prints a\nsummary of every buffer parameter afterwards.", stderr)
	sizes := sizeFlags{}
	fs.Var(sizes, "size", "value of a symbolic size, as NAME=VALUE (repeatable)")
	seed := fs.Uint64("seed", 1, "seed of the random inputs")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	f, err := parseFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, err)
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
		workload.FillRandom(d, rng)
		data[p.Name] = d
	}
	if err := ast.Interpret(f, sizes, data); err != nil {
		fmt.Fprintln(stderr, ast.Explain(f, err))
		return 1
	}
	for _, p := range f.Params {
		fmt.Fprintf(stdout, "%s: %s\n", p.Name, summary(data[p.Name]))
	}
	return 0
}

// summary returns the element count, sum and first elements of data.
func summary(data any) string {
	var vals []float64
	switch d := data.(type) {
	case []float32:
		for _, v := range d {
			vals = append(vals, float64(v))
		}
	case []float64:
		vals = d
	case []int32:
		for _, v := range d {
			vals = append(vals, float64(v))
		}
	case []int64:
		for _, v := range d {
			vals = append(vals, float64(v))
		}
	case []bool:
		for _, v := range d {
			if v {
				vals = append(vals, 1)
			} else {
				vals = append(vals, 0)
			}
		}
	default:
		return fmt.Sprintf("%T", data)
	}
	var sum float64
	for _, v := range vals {
		sum += v
	}
	head := vals[:min(len(vals), 4)]
	return fmt.Sprintf("%d elements, sum %.6g, first %v", len(vals), sum, head)
}
