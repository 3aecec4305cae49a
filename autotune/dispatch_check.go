package autotune

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/errbound"
)

// maxCheckBytes bounds the memory of one set of a function's arguments at
// the sizes CheckSizes returns (Check holds three sets).
const maxCheckBytes = 256 << 20

// CheckSizes are the sizes Check runs a dispatch at: each bucket's bounds
// and n values drawn inside it (log-uniformly; the first of them moved to
// an odd value that is no multiple of three, which no tile factor
// divides), and one value past the widest bucket's end, where the
// fallback runs. A size no bucket ranges over takes its value in others.
// Sizes whose arguments would take more than maxCheckBytes are left out
// (a bucket up to 2^31 rows).
func (d *Dispatch) CheckSizes(others map[string]int64, n int, seed uint64) ([]map[string]int64, error) {
	rng := rand.New(rand.NewPCG(seed, 0x10a4))
	var out []map[string]int64
	seen := map[string]bool{}
	add := func(vals map[string]int64) error {
		sizes := maps.Clone(others)
		if sizes == nil {
			sizes = map[string]int64{}
		}
		maps.Copy(sizes, vals)
		for _, name := range d.names {
			if _, ok := sizes[name]; !ok {
				return fmt.Errorf("dispatch %s: no value for size %s to check the buckets at", d.f.Name, name)
			}
		}
		if !fitsCheck(d.f, sizes) {
			return nil
		}
		if key := sizesKey(sizes); !seen[key] {
			seen[key] = true
			out = append(out, sizes)
		}
		return nil
	}
	past := map[string]int64{}
	for _, b := range d.buckets {
		names := slices.Sorted(maps.Keys(b.bucket))
		corner := func(pick func(r [2]int64) int64) map[string]int64 {
			m := map[string]int64{}
			for _, name := range names {
				m[name] = pick(b.bucket[name])
			}
			return m
		}
		if err := add(corner(func(r [2]int64) int64 { return r[0] })); err != nil {
			return nil, err
		}
		if err := add(corner(func(r [2]int64) int64 { return r[1] })); err != nil {
			return nil, err
		}
		for i := range n {
			vals := corner(func(r [2]int64) int64 {
				v := drawLogUniform(rng, r[0], r[1])
				if i == 0 {
					v = untiled(v, r)
				}
				return v
			})
			if err := add(vals); err != nil {
				return nil, err
			}
		}
		for _, name := range names {
			past[name] = max(past[name], b.bucket[name][1])
		}
	}
	if len(past) > 0 {
		vals := map[string]int64{}
		for name, hi := range past {
			vals[name] = min(hi+1, math.MaxInt32)
		}
		if d.Pick(d.values(vals, others)) < 0 {
			if err := add(vals); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// values orders vals (over others) as Pick takes them; a size in
// neither is 0.
func (d *Dispatch) values(vals, others map[string]int64) []int64 {
	out := make([]int64, len(d.names))
	for i, name := range d.names {
		v, ok := vals[name]
		if !ok {
			v = others[name]
		}
		out[i] = v
	}
	return out
}

// fitsCheck reports whether one set of f's arguments at sizes can be
// made and takes at most maxCheckBytes.
func fitsCheck(f *ast.Func, sizes map[string]int64) bool {
	var total int64
	for _, p := range f.Params {
		n, err := ast.DataSize(p, sizes)
		if err != nil || n > maxCheckBytes {
			return false
		}
		total += n * int64(max(p.DType.Bytes(), 1))
	}
	return total <= maxCheckBytes
}

// drawLogUniform draws a value of lo..hi whose logarithm is uniform.
func drawLogUniform(rng *rand.Rand, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	a, b := math.Log(float64(max(lo, 1))), math.Log(float64(hi)+1)
	v := int64(math.Exp(a + rng.Float64()*(b-a)))
	return min(max(v, lo), hi)
}

// untiled moves v, within r, to the next value that is odd and no
// multiple of three (tile factors are powers of two and three times
// them), when r has one near.
func untiled(v int64, r [2]int64) int64 {
	for w := v; w <= r[1] && w < v+6; w++ {
		if w%2 != 0 && w%3 != 0 {
			return w
		}
	}
	return v
}

func sizesKey(sizes map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sizes)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, sizes[k]))
	}
	return strings.Join(parts, ",")
}

// Check runs d from its entry point (Run) at each of sizes and compares
// every output with a reference run on the same inputs: the interpreter's
// where it runs within its budget (about a second: interpretLimit block
// instances), else the function as written, compiled with cache (the
// tuner's reference, itself checked against the interpreter at the sizes
// it can run). An output beyond the fixed tolerance of its type is still
// right within the error bound of its rounding (package errbound: a long
// reduction summed in another order). The first disagreement is returned,
// naming the sizes and the bucket that ran them.
func (d *Dispatch) Check(sizes []map[string]int64, cache *native.Cache, opts llvm.Options) error {
	if cache == nil {
		var err error
		if cache, err = native.DefaultCache(); err != nil {
			return err
		}
	}
	var plain *native.Kernel
	for i, s := range sizes {
		seed := uint64(i + 1)
		want := check.Args(d.f, s, seed)
		if Iterations(d.f, s) <= interpretLimit {
			if err := ast.Interpret(d.f, s, want); err != nil {
				return fmt.Errorf("dispatch %s at %s: the interpreter: %w", d.f.Name, sizesKey(s), err)
			}
		} else {
			if plain == nil {
				var err error
				if plain, err = cache.Compile(d.f, opts); err != nil {
					return fmt.Errorf("dispatch %s: the reference: %w", d.f.Name, err)
				}
				defer plain.Close()
			}
			if err := plain.Run(s, want); err != nil {
				return fmt.Errorf("dispatch %s at %s: the reference: %w", d.f.Name, sizesKey(s), err)
			}
		}
		got := check.Args(d.f, s, seed)
		_, bucket, err := d.Kernel(s)
		if err != nil {
			return err
		}
		which := "the fallback"
		if bucket != nil {
			which = "bucket " + bucketKey(bucket)
		}
		if err := d.Run(s, got); err != nil {
			return fmt.Errorf("dispatch %s at %s (%s): %w", d.f.Name, sizesKey(s), which, err)
		}
		var variances map[string][]float64
		for _, p := range d.f.Params {
			e := check.MaxRelErr(got[p.Name], want[p.Name])
			tol := check.Tolerance(p.DType)
			if opts.FastMath {
				tol *= 100
			}
			if e <= tol {
				continue
			}
			if variances == nil {
				variances = errorVariances(cache, d.f, &workRequest{Sizes: s, Seed: seed})
			}
			v, ok := variances[p.Name]
			if ok {
				if ex, _ := errbound.Excess(p.DType, got[p.Name], want[p.Name], v); ex <= 1 {
					continue
				}
			}
			return fmt.Errorf("dispatch %s at %s (%s): %s differs from the reference by %g (tolerance %g)", d.f.Name, sizesKey(s), which, p.Name, e, tol)
		}
	}
	return nil
}
