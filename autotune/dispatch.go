package autotune

import (
	"errors"
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
)

// Dispatch is one function compiled for every size: the schedule tuned
// for each bucket of its symbolic sizes (loom tune -buckets; see
// Database.Buckets), each compiled, and a fallback (the default schedule)
// for sizes no bucket holds. At run time it takes the first bucket whose
// ranges hold the sizes: a few comparisons, no allocation (Pick).
//
// Every bucket's schedule is valid at every size (a schedule's legality
// holds for all values of the sizes; its tiles' tails are guarded), so a
// choice only ever changes the speed.
type Dispatch struct {
	f        *ast.Func
	names    []string // f's sizes, in order: the order Pick takes them in
	buckets  []dispatchBucket
	fallback *native.Kernel
}

// dispatchBucket is a bucket's ranges over names (a size it does not
// range over: any value) and its kernel.
type dispatchBucket struct {
	lo, hi []int64
	bucket map[string][2]int64
	kernel *native.Kernel
}

// NewDispatch compiles f's bucket choices (Database.Buckets; each Func
// built from f) and the fallback, a schedule of f for the sizes no
// bucket holds (nil: f as written), with cache (nil: native's default
// cache) and opts.
func NewDispatch(f *ast.Func, choices []BucketChoice, fallback *ast.Func, cache *native.Cache, opts llvm.Options) (*Dispatch, error) {
	if cache == nil {
		var err error
		if cache, err = native.DefaultCache(); err != nil {
			return nil, err
		}
	}
	d := &Dispatch{f: f}
	for _, v := range f.Sizes {
		d.names = append(d.names, v.Name)
	}
	if fallback == nil {
		fallback = f
	}
	var err error
	if d.fallback, err = cache.Compile(fallback, opts); err != nil {
		return nil, fmt.Errorf("dispatch %s: the fallback: %w", f.Name, err)
	}
	for _, c := range choices {
		b := dispatchBucket{bucket: c.Bucket}
		for name := range c.Bucket {
			if f.Size(name) == nil {
				return nil, fmt.Errorf("dispatch %s: a bucket of %s, which is no size of it", f.Name, name)
			}
		}
		for _, name := range d.names {
			r, ok := c.Bucket[name]
			if !ok {
				r = [2]int64{-1 << 62, 1 << 62}
			}
			b.lo, b.hi = append(b.lo, r[0]), append(b.hi, r[1])
		}
		if b.kernel, err = cache.Compile(c.Func, opts); err != nil {
			return nil, fmt.Errorf("dispatch %s: bucket %s: %w", f.Name, bucketKey(c.Bucket), err)
		}
		d.buckets = append(d.buckets, b)
	}
	return d, nil
}

// Sizes are the names of the function's sizes in the order Pick takes
// their values.
func (d *Dispatch) Sizes() []string { return d.names }

// Pick returns the index of the first bucket that holds sizes (the
// function's sizes' values, in Sizes' order), or -1: the fallback.
func (d *Dispatch) Pick(sizes []int64) int {
next:
	for i := range d.buckets {
		b := &d.buckets[i]
		for k, v := range sizes {
			if v < b.lo[k] || v > b.hi[k] {
				continue next
			}
		}
		return i
	}
	return -1
}

// Kernel returns the kernel for sizes (a value for each of the
// function's sizes) and the bucket it was tuned for (nil: the fallback).
func (d *Dispatch) Kernel(sizes map[string]int64) (*native.Kernel, map[string][2]int64, error) {
	vals := make([]int64, len(d.names))
	for i, name := range d.names {
		v, ok := sizes[name]
		if !ok {
			return nil, nil, fmt.Errorf("dispatch %s: no value for size %s", d.f.Name, name)
		}
		vals[i] = v
	}
	if i := d.Pick(vals); i >= 0 {
		return d.buckets[i].kernel, d.buckets[i].bucket, nil
	}
	return d.fallback, nil, nil
}

// Run runs the kernel for sizes on args (as native.Kernel.Run takes
// them).
func (d *Dispatch) Run(sizes map[string]int64, args map[string]any) error {
	k, _, err := d.Kernel(sizes)
	if err != nil {
		return err
	}
	return k.Run(sizes, args)
}

// DispatchFromDatabase is NewDispatch with the buckets f was tuned for
// on target in db (Database.Buckets) and, for the sizes none holds, the
// default schedule for t.
func DispatchFromDatabase(f *ast.Func, db *Database, target string, t Target, cache *native.Cache, opts llvm.Options) (*Dispatch, error) {
	choices, err := db.Buckets(f, target)
	if err != nil {
		return nil, err
	}
	s, err := Default(f, t)
	if err != nil {
		return nil, err
	}
	return NewDispatch(f, choices, s.Func(), cache, opts)
}

// Close closes d's kernels (native.Kernel.Close): a run after it fails
// with native.ErrClosed. It must not run while a run of d does.
func (d *Dispatch) Close() error {
	errs := []error{d.fallback.Close()}
	for _, b := range d.buckets {
		errs = append(errs, b.kernel.Close())
	}
	return errors.Join(errs...)
}

// Buckets is the number of buckets d picks among (the fallback aside).
func (d *Dispatch) Buckets() int { return len(d.buckets) }

// Fallback is the kernel d runs at the sizes no bucket holds (the
// default schedule, for a dispatch from a database).
func (d *Dispatch) Fallback() *native.Kernel { return d.fallback }
