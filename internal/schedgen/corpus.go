package schedgen

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/workload"
)

// Case is one function of the corpus with what it takes to run it.
type Case struct {
	Name string
	Func *ast.Func
	// Sizes are the bindings of the symbolic sizes to run the function
	// with, at least one (an empty map when it has none). A sequence runs
	// at one of them, chosen by its seed.
	Sizes []map[string]int64
	// Source is the file the case comes from, or "workload".
	Source string
}

// SizesFor returns the binding of the symbolic sizes a sequence with this
// seed runs at.
func (c Case) SizesFor(seed uint64) map[string]int64 {
	if len(c.Sizes) == 0 {
		return map[string]int64{}
	}
	return c.Sizes[seed%uint64(len(c.Sizes))]
}

// Args returns data for every buffer parameter of c.Func at the given
// sizes, filled with reproducible random values (from seed), but for the
// outputs that a block writes before any block reads them
// (check.WrittenFirst), which are poisoned (NaN): an element a
// schedule, or the function itself, leaves unwritten shows in the
// results. An in-place output starts from data.
func (c Case) Args(sizes map[string]int64, seed uint64) map[string]any {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	first := check.WrittenFirst(c.Func)
	args := map[string]any{}
	for _, p := range c.Func.Params {
		data, err := ast.NewData(p, sizes)
		if err != nil {
			panic(fmt.Sprintf("schedgen: case %s: %v", c.Name, err))
		}
		check.FillRandom(data, rng)
		if first[p.Name] {
			ast.Poison(p.DType, data)
		}
		args[p.Name] = data
	}
	return args
}

// Workloads returns the standard computations at sizes the interpreter runs
// in well under a millisecond or so each: matmul, its ReLU epilogue,
// conv2d, softmax, RMSNorm, layer norm and the symbolic chain.
func Workloads() []Case {
	var out []Case
	for _, w := range []workload.Case{
		workload.Matmul(6, 5, 4),
		workload.MatmulBiasReLU(4, 6, 5),
		workload.Conv2D(1, 2, 5, 5, 3),
		workload.Softmax(3, 12),
		workload.RMSNorm(2, 16),
		workload.LayerNorm(2, 16),
		workload.Chain(1, 2, 16),
	} {
		out = append(out, Case{Name: w.Name, Func: w.Func, Sizes: []map[string]int64{w.Sizes}, Source: "workload"})
	}
	return out
}

// Load reads every .loom file of dir (testdata/schedgen) as a case, in
// name order. A file holds one function in loom's text form; its comment
// lines "// sizes: N=5 M=3" give the bindings of its symbolic sizes (one
// line per binding; "// sizes: -" for a function without sizes).
func Load(dir string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.loom"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("schedgen: no .loom files in %s", dir)
	}
	slices.Sort(files)
	var out []Case
	for _, file := range files {
		c, err := LoadFile(file)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// LoadFile reads one case (see Load). A function with symbolic sizes also
// runs where each size in turn is 0 (an empty axis: a reduction over
// nothing, a loop of no iterations) and where every size is 1
// (edgeSizes), besides the bindings its file lists.
func LoadFile(file string) (Case, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return Case{}, err
	}
	f, err := ast.Parse(string(src))
	if err != nil {
		return Case{}, fmt.Errorf("%s: %w", file, err)
	}
	c := Case{Name: f.Name, Func: f, Source: filepath.ToSlash(file)}
	for n, line := range strings.Split(string(src), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "// sizes:")
		if !ok {
			continue
		}
		sizes := map[string]int64{}
		for _, kv := range strings.Fields(rest) {
			if kv == "-" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			x, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil || f.Size(k) == nil {
				return Case{}, fmt.Errorf("%s:%d: %q is not SIZE=VALUE for a size of %s", file, n+1, kv, f.Name)
			}
			sizes[k] = x
		}
		for _, s := range f.Sizes {
			if _, ok := sizes[s.Name]; !ok {
				return Case{}, fmt.Errorf("%s:%d: no value for size %s", file, n+1, s.Name)
			}
		}
		c.Sizes = append(c.Sizes, sizes)
	}
	if len(c.Sizes) == 0 {
		return Case{}, fmt.Errorf("%s: no \"// sizes:\" line", file)
	}
	c.Sizes = append(c.Sizes, edgeSizes(f, c.Sizes[0])...)
	return c, nil
}

// edgeSizes returns the bindings at the edges of f's sizes: first with
// each size in turn set to 0, then with all of them 1, those that give
// every buffer a shape. An empty axis is
// where a reduction's init must still write, and a schedule's tail logic
// is most often wrong.
func edgeSizes(f *ast.Func, first map[string]int64) []map[string]int64 {
	if len(f.Sizes) == 0 {
		return nil
	}
	var candidates []map[string]int64
	for _, s := range f.Sizes {
		b := maps.Clone(first)
		b[s.Name] = 0
		candidates = append(candidates, b)
	}
	ones := map[string]int64{}
	for _, s := range f.Sizes {
		ones[s.Name] = 1
	}
	candidates = append(candidates, ones)
	// A binding that makes a buffer's dimension negative (a convolution's
	// output of W - 4 at W = 0) is no size the function takes.
	var out []map[string]int64
next:
	for _, b := range candidates {
		for _, p := range f.Params {
			if _, err := ast.DataSize(p, b); err != nil {
				continue next
			}
		}
		out = append(out, b)
	}
	return out
}
