// Package workload holds the standard computations loom is tested and
// measured on (matrix multiply, softmax, RMSNorm, layer norm, conv2d, the
// symbolic element-wise/reduce chain, ...), each built with the ast builder
// and paired with a plain Go reference implementation.
//
// The references compute exactly what the unscheduled function computes, in
// the same order of floating-point operations, so the interpreter's results
// must match them bit for bit; schedules and generated kernels are then held
// to the interpreter.
package workload

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
)

// Case is a workload at concrete sizes, ready to run.
type Case struct {
	Name  string
	Func  *ast.Func
	Sizes map[string]int64 // a value for each symbolic size of Func
	// Ref computes the outputs from the inputs in args (the same map
	// Interpret takes), overwriting the output slices.
	Ref func(args map[string]any)
}

// Args returns data for every buffer parameter of c.Func at c.Sizes
// (check.Args: reproducible random inputs from seed, outputs poisoned).
func (c Case) Args(seed uint64) map[string]any { return check.Args(c.Func, c.Sizes, seed) }

// ArgsPoisoning is Args with the outputs named in poison poisoned, the
// others zeroed (check.ArgsPoisoning).
func (c Case) ArgsPoisoning(seed uint64, poison map[string]bool) map[string]any {
	return check.ArgsPoisoning(c.Func, c.Sizes, seed, poison)
}

// All returns the whole corpus at small sizes, suitable for the interpreter.
func All() []Case {
	return []Case{
		Matmul(24, 20, 16),
		MatmulBiasReLU(16, 24, 20),
		Conv2D(1, 4, 6, 6, 5),
		Softmax(6, 40),
		RMSNorm(6, 48),
		LayerNorm(5, 48),
		Chain(3, 4, 1024),
	}
}

// must is for the constructors' callers with constant sizes (tests and
// examples): sizes from users go through the New constructors.
func must(c Case, err error) Case {
	if err != nil {
		panic(err)
	}
	return c
}

// maxDim is the largest size of one dimension: shapes are int32.
const maxDim = math.MaxInt32

// checkDims checks sizes given as name, value pairs: each must be
// positive and fit an int32.
func checkDims(pairs ...any) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		name, v := pairs[i].(string), pairs[i+1].(int)
		if v <= 0 || v > maxDim {
			return fmt.Errorf("size %s = %d: want 1 to %d", name, v, maxDim)
		}
	}
	return nil
}

// checkSymbols checks values of symbolic sizes given as name, value
// pairs: each must be 0 (an empty run) or more and fit an int32.
func checkSymbols(pairs ...any) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		name, v := pairs[i].(string), pairs[i+1].(int)
		if v < 0 || v > maxDim {
			return fmt.Errorf("size %s = %d: want 0 to %d", name, v, maxDim)
		}
	}
	return nil
}

// extents are the extents of a constructor's dimensions: each a constant,
// or, for a dimension its caller names symbolic, the function's symbolic
// size of that name, whose value the Case's Sizes keep.
type extents struct {
	exprs map[string]ast.Expr
	sizes map[string]int64 // nil when none is symbolic
}

// newExtents makes the extents of the dimensions given as name, value
// pairs, those named in symbolic made symbolic sizes of b's function (in
// the order of pairs); a name in symbolic that is no dimension is an
// error naming the workload's dimensions.
func newExtents(b *ast.Builder, workload string, symbolic []string, pairs ...any) (*extents, error) {
	x := &extents{exprs: map[string]ast.Expr{}}
	var names []string
	for i := 0; i+1 < len(pairs); i += 2 {
		names = append(names, pairs[i].(string))
	}
	for _, s := range symbolic {
		if !slices.Contains(names, s) {
			return nil, fmt.Errorf("%s has no dimension %s to make symbolic (it has %s)", workload, s, strings.Join(names, ", "))
		}
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		name, v := pairs[i].(string), pairs[i+1].(int)
		if !slices.Contains(symbolic, name) {
			x.exprs[name] = ast.I32(int32(v))
			continue
		}
		if x.sizes == nil {
			x.sizes = map[string]int64{}
		}
		x.exprs[name], x.sizes[name] = b.Size(name), int64(v)
	}
	return x, nil
}

// of is the extent of dimension name.
func (x *extents) of(name string) ast.Expr { return x.exprs[name] }

// checked returns c, or an error when one of its buffers is larger than
// the interpreter (and the tests' references) can hold.
func checked(c Case) (Case, error) {
	for _, p := range c.Func.Params {
		if _, err := ast.DataSize(p, c.Sizes); err != nil {
			return Case{}, fmt.Errorf("%s: %v", c.Name, err)
		}
	}
	return c, nil
}

// Bytes returns the bytes of c's buffer parameters, the memory one set of
// its arguments takes.
func (c Case) Bytes() int64 { return check.Bytes(c.Func, c.Sizes) }

// parallelRows runs row(i) for i in [0, n) on all cores.
func parallelRows(n int, row func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				row(i)
			}
		}()
	}
	wg.Wait()
}
