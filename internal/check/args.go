package check

import (
	"fmt"
	"math/rand/v2"

	"github.com/loom-go/loom/ast"
)

// Args returns data for every buffer parameter of f at sizes: inputs filled with
// reproducible random values in [-1, 1) (from seed), integer indices of a
// gather in the range of what they index, outputs poisoned (NaN, see
// ast.Poison) so that an element left unwritten shows, or zeroed where a
// block reads them before any writes them (an in-place update). Which
// parameters are inputs is told by the function: a parameter some block
// writes is an output.
func Args(f *ast.Func, sizes map[string]int64, seed uint64) map[string]any {
	return ArgsPoisoning(f, sizes, seed, WrittenFirst(f))
}

// ArgsPoisoning is Args with the outputs named in poison poisoned, the
// others zeroed. A scheduled function takes the data of the function it
// was scheduled from, whose WrittenFirst may differ from its own (a
// cache's fill reads an output before the cached block writes it).
func ArgsPoisoning(f *ast.Func, sizes map[string]int64, seed uint64, poison map[string]bool) map[string]any {
	rng := rand.New(rand.NewPCG(seed, 0x10037))
	written := map[string]bool{}
	for _, b := range f.Blocks() {
		for _, w := range b.Writes {
			written[w.Buffer.Name] = true
		}
	}
	args := map[string]any{}
	bounds := indexBounds(f, sizes)
	for _, p := range f.Params {
		data, err := ast.NewData(p, sizes)
		if err != nil {
			panic(fmt.Sprintf("check.Args of %s: %v", f.Name, err))
		}
		switch {
		case !written[p.Name]:
			FillRandom(data, rng)
			if n, ok := bounds[p.Name]; ok {
				fillIndices(data, rng, n)
			}
		case poison[p.Name]:
			ast.Poison(p.DType, data)
		}
		args[p.Name] = data
	}
	return args
}

// WrittenFirst returns the parameters of f that a block writes before any
// block reads them, the blocks taken in the order f lists them: a
// reduction with an init that writes a parameter reads it only after its
// init. Their values on entry do not matter, so a check may poison them.
func WrittenFirst(f *ast.Func) map[string]bool {
	params := map[string]bool{}
	for _, p := range f.Params {
		params[p.Name] = true
	}
	out, seen := map[string]bool{}, map[string]bool{}
	for _, b := range f.Blocks() {
		if b.HoldsBlock() {
			continue
		}
		writes := map[string]bool{}
		for _, w := range b.Writes {
			writes[w.Buffer.Name] = true
		}
		for _, r := range b.Reads {
			name := r.Buffer.Name
			if seen[name] || !params[name] {
				continue
			}
			seen[name] = true // read first, unless its own init writes it
			if b.Init != nil && writes[name] && initWrites(b.Init, name) {
				out[name] = true
			}
		}
		for name := range writes {
			if !seen[name] && params[name] {
				seen[name] = true
				out[name] = true
			}
		}
	}
	return out
}

// initWrites reports whether an init statement stores to the buffer named
// name and loads nothing from it.
func initWrites(init ast.Stmt, name string) bool {
	stores, loads := false, false
	ast.Inspect(init, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Store:
			stores = stores || n.Buffer.Name == name
		case *ast.Load:
			loads = loads || n.Buffer.Name == name
		}
		return true
	})
	return stores && !loads
}

// indexBounds returns, for each integer parameter of f whose values index
// a buffer (a gather's indices), the smallest extent of a dimension they
// index: data for it must lie in [0, extent), or the interpreter reports
// the access out of bounds.
func indexBounds(f *ast.Func, sizes map[string]int64) map[string]int64 {
	out := map[string]int64{}
	ast.Inspect(f.Body, func(n ast.Node) bool {
		l, ok := n.(*ast.Load)
		if !ok {
			return true
		}
		for d, e := range l.Indices {
			ast.Inspect(e, func(m ast.Node) bool {
				inner, ok := m.(*ast.Load)
				if !ok || f.Param(inner.Buffer.Name) == nil || !inner.Buffer.DType.IsInt() || d >= len(l.Buffer.Shape) {
					return true
				}
				ext, err := ast.DataSize(&ast.Buffer{Name: "extent", DType: ast.Int32, Shape: []ast.Expr{l.Buffer.Shape[d]}}, sizes)
				if err != nil || ext < 1 {
					return true
				}
				if old, seen := out[inner.Buffer.Name]; !seen || ext < old {
					out[inner.Buffer.Name] = ext
				}
				return true
			})
		}
		return true
	})
	return out
}

// fillIndices fills integer data with values in [0, n).
func fillIndices(data any, rng *rand.Rand, n int64) {
	switch d := data.(type) {
	case []int32:
		for i := range d {
			d[i] = int32(rng.Int64N(n))
		}
	case []int64:
		for i := range d {
			d[i] = rng.Int64N(n)
		}
	}
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
			panic(fmt.Sprintf("check.Clone: %T", v))
		}
	}
	return out
}

// Bytes returns the bytes of f's buffer parameters at sizes, the memory
// one set of its arguments takes.
func Bytes(f *ast.Func, sizes map[string]int64) int64 {
	var total int64
	for _, p := range f.Params {
		n, err := ast.DataSize(p, sizes)
		if err == nil {
			total += n * int64(max(p.DType.Bytes(), 1))
		}
	}
	return total
}
