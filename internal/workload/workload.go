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
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/loom-go/loom/ast"
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

// Args returns data for every buffer parameter of c.Func: inputs filled with
// reproducible random values in [-1, 1) (from seed), outputs zeroed. Which
// parameters are inputs is told by the function: a parameter some block
// writes is an output.
func (c Case) Args(seed uint64) map[string]any {
	rng := rand.New(rand.NewPCG(seed, 0x10037))
	written := map[string]bool{}
	for _, b := range c.Func.Blocks() {
		for _, w := range b.Writes {
			written[w.Buffer.Name] = true
		}
	}
	args := map[string]any{}
	for _, p := range c.Func.Params {
		data, err := ast.NewData(p, c.Sizes)
		if err != nil {
			panic(fmt.Sprintf("workload %s: %v", c.Name, err))
		}
		if !written[p.Name] {
			FillRandom(data, rng)
		}
		args[p.Name] = data
	}
	return args
}

// FillRandom fills a Go slice of any element type Interpret accepts with
// values from rng: floats in [-1, 1), integers in [-100, 100], random bools.
// Float16 and bfloat16 data ([]uint16) gets the encodings of values in
// [-1, 1) for float16; use ast.BFloat16Bits for bfloat16 data.
func FillRandom(data any, rng *rand.Rand) {
	switch d := data.(type) {
	case []float32:
		for i := range d {
			d[i] = rng.Float32()*2 - 1
		}
	case []float64:
		for i := range d {
			d[i] = rng.Float64()*2 - 1
		}
	case []int32:
		for i := range d {
			d[i] = rng.Int32N(201) - 100
		}
	case []int64:
		for i := range d {
			d[i] = rng.Int64N(201) - 100
		}
	case []bool:
		for i := range d {
			d[i] = rng.IntN(2) == 1
		}
	case []uint16:
		for i := range d {
			d[i] = ast.Float16Bits(rng.Float64()*2 - 1)
		}
	}
}

// Clone returns a deep copy of args, so one set of inputs can feed two runs.
func Clone(args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		switch d := v.(type) {
		case []float32:
			out[k] = append([]float32(nil), d...)
		case []float64:
			out[k] = append([]float64(nil), d...)
		case []int32:
			out[k] = append([]int32(nil), d...)
		case []int64:
			out[k] = append([]int64(nil), d...)
		case []bool:
			out[k] = append([]bool(nil), d...)
		case []uint16:
			out[k] = append([]uint16(nil), d...)
		default:
			panic(fmt.Sprintf("workload.Clone: %T", v))
		}
	}
	return out
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

func must(f *ast.Func, err error) *ast.Func {
	if err != nil {
		panic(err)
	}
	return f
}

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
