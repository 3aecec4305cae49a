// Package module compiles a whole operator graph into one callable
// module: loom as a compiler's back end.
//
// Compile fuses the graph (package fusion: its passes, fusion, views and
// the exec-order pass that orders the kernels for the least peak memory),
// gives every kernel a schedule (the fastest tuning record of its
// structure on the target when a database holds one, the default schedule
// of package autotune otherwise), compiles each with codegen/llvm, and
// returns a Module. A kernel tuned by buckets of its sizes (loom tune
// -buckets) also gets each bucket's schedule: a call runs the schedule of
// the first bucket that holds its sizes, chosen once per binding of the
// symbols (in the C library by a test on the sizes before the call). Compiling the same graph again is a lookup (cache.go):
// in memory within a process, and the schedules on disk across processes.
//
// Run (Go slices) and RunPointers (raw addresses, for embedders) execute
// the whole graph natively:
//
//  1. the shape function binds the graph's symbols from the inputs'
//     shapes and checks every dimension against the graph (a wrong shape
//     is an error naming the input, the dimension and both values; nothing
//     runs);
//  2. the intermediates are placed in one arena, planned once per binding
//     of the symbols (fusion.Plan.Memory: buffers whose live ranges do not
//     meet share bytes; a reshape's output is its input's memory) and
//     reused by later calls;
//  3. the kernels' entry points are called in order with the addresses
//     worked out once per binding (call.go).
//
// Build writes the same module as a C library (clib.go): the kernels, the
// shape function, the planner and the runtime behind one entry point, and
// entry points on DLPack-style tensor descriptors that also describe the
// inputs and outputs (clib_tensors.go). Every call returns a status in the
// kernels' convention (llvm.StatusCodesC): LOOM_OK, or the sum of the
// faults met, LOOM_BAD_ARGUMENT for what the caller passed, the kernels'
// own for what happened while they ran.
//
// A Module is safe for concurrent use: each call takes its own arena.
package module

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
)

// Options configure Compile.
type Options struct {
	// Threads is the number of threads the schedules are made for (0:
	// 1); the kernels run on the native runtime's threads
	// (native.SetThreads).
	Threads int
	// Database, when not nil, is searched for each kernel's fastest
	// record on this machine and thread count; a kernel without one gets
	// the default schedule.
	Database *autotune.Database
	// Cache holds the compiled kernels (nil: native.DefaultCache), and
	// the modules' schedules under modules/ in its directory.
	Cache *native.Cache
	// NoCache compiles afresh: no module is looked up or kept (the
	// kernels' shared objects still come from Cache).
	NoCache bool
	// Layout is where the channels of the graph's 2-d convolutions and
	// poolings go (fusion.Options.Layout; the zero value lets loom
	// choose).
	Layout string
	// PlainWeights keeps every weight as the graph gives it
	// (fusion.Options.PlainWeights); by default a large constant matrix
	// is packed in panels of columns, and a convolution's constant
	// filters in panels of filters, when the module is built.
	PlainWeights bool
	// Bounds, when set, are the least and the most values the graph's
	// symbols take in the calls this module is for (a bucket of sizes):
	// the default schedules then tile each loop of symbolic extent as
	// one of the bucket's largest extent would be, tails guarded, instead
	// of with tiles that suit any extent.
	Bounds *autotune.SizeBounds
}

// Module is a compiled graph: a handle on its kernels and memory, which
// stay loaded until every handle on them is closed (Close). Compile
// gives a handle to each call, also when it finds the graph compiled
// already in this process, so that each caller closes its own.
type Module struct {
	*compiled
	closed bool
}

// ErrClosed is the error of a call of a closed Module.
var ErrClosed = errors.New("module: the module is closed")

// compiled is a compiled graph, which the handles of one Compile result
// share.
type compiled struct {
	refs int    // open handles; memoryCache's lock guards it
	key  string // its key in memoryCache; "" when not kept there

	plan    *fusion.Plan
	symbols []string // the graph's, sorted
	kernels []*kernel
	inputs  []*fusion.Tensor // the graph's inputs, in its order
	outputs []*fusion.Tensor

	// The constants' data as the kernels take it, and its addresses.
	constNames []string
	constData  []any
	constPtrs  []unsafe.Pointer
	maxParams  int // the most buffer parameters of a kernel

	mu       sync.Mutex
	bindings map[string]*binding    // by binding of the symbols (sizesKey)
	memory   map[string]*memoryPlan // by binding of the symbols (sizesKey)
	free     [][]byte               // arenas no call holds
}

// kernel is one compiled kernel of the plan.
type kernel struct {
	k      *fusion.Kernel
	index  int       // in Module.kernels
	f      *ast.Func // the scheduled function
	native *native.Kernel
	entry  uintptr // its packed entry point; 0 for a view
	// Schedule says where its schedule came from: "record" (the
	// database's fastest) or "default"; "view" for a kernel that does not
	// run (its output shares its input's memory).
	Schedule string
	// variants are the schedules tuned for buckets of the kernel's
	// sizes (loom tune -buckets): a call whose sizes a bucket holds runs
	// the first such variant instead (chosen once per binding).
	variants []*variant
}

// variant is a kernel's schedule for a bucket of its sizes.
type variant struct {
	bucket map[string][2]int64
	f      *ast.Func
	native *native.Kernel
	entry  uintptr
}

// entryAt returns the entry point of the kernel's variant whose bucket
// holds sizes, else its own.
func (k *kernel) entryAt(sizes map[string]int64) uintptr {
	for _, v := range k.variants {
		if autotune.InBucket(v.bucket, sizes) {
			return v.entry
		}
	}
	return k.entry
}

// Compile compiles graph g into a module (see the package comment). The
// same graph compiled again, with the same options and database, is a
// lookup (see cache.go).
func Compile(g *fusion.Graph, opts Options) (*Module, error) {
	cache := opts.Cache
	if cache == nil {
		var err error
		if cache, err = native.DefaultCache(); err != nil {
			return nil, err
		}
	}
	threads := max(opts.Threads, 1)
	target := autotune.HostTarget(threads)
	target.Bounds = opts.Bounds
	tkey := autotune.TargetKey(llvm.Host(), threads)
	dbPath := ""
	if opts.Database != nil {
		dbPath = opts.Database.Path
	}
	key := graphKey(g, threads, tkey, opts.Layout, opts.PlainWeights, cache.Dir, databaseState(dbPath), opts.Bounds)
	if !opts.NoCache {
		if m := cachedModule(key); m != nil {
			return m, nil // a new handle
		}
	}
	plan, err := fusion.Compile(g, fusion.Options{Layout: opts.Layout, PlainWeights: opts.PlainWeights})
	if err != nil {
		return nil, err
	}
	m := &Module{compiled: &compiled{refs: 1, plan: plan, symbols: plan.Graph.Symbols(), memory: map[string]*memoryPlan{}, bindings: map[string]*binding{}}}
	m.constNames, m.constData, m.constPtrs = constantPointers(plan)
	for _, name := range inputNames(plan) {
		m.inputs = append(m.inputs, plan.Graph.Tensor(name))
	}
	m.outputs = slices.Clone(plan.Graph.Outputs)
	file := diskKey(cache.Dir, key, plan)
	var funcs []*ast.Func
	var from []string
	var buckets [][]autotune.BucketChoice
	if !opts.NoCache {
		funcs, from, buckets = loadSchedules(file, plan)
	}
	if m.kernels, err = compileKernels(plan, funcs, from, buckets, target, tkey, opts.Database, cache); err != nil {
		m.Close()
		return nil, err
	}
	for _, k := range m.kernels {
		if k.native != nil {
			m.maxParams = max(m.maxParams, len(k.f.Params))
		}
	}
	if !opts.NoCache {
		if funcs == nil {
			saveSchedules(file, m)
		}
		keepModule(key, m)
	}
	return m, nil
}

// compileKernels schedules the plan's kernels (unless funcs, their
// schedules from the disk cache, are given) and compiles them. Work is
// done once per computation (see alpha.go): the first kernel of each is
// scheduled and compiled, in parallel with the others' (one goroutine per
// core), and the rest take its schedule, renamed, and its native code.
// Each result lands in its kernel's slot, so the module is the same
// whatever the order they finish in.
func compileKernels(plan *fusion.Plan, funcs []*ast.Func, from []string, buckets [][]autotune.BucketChoice, target autotune.Target, tkey string, db *autotune.Database, cache *native.Cache) ([]*kernel, error) {
	n := len(plan.Kernels)
	kernels := make([]*kernel, n)
	loaded := funcs != nil
	if !loaded {
		funcs, from, buckets = make([]*ast.Func, n), make([]string, n), make([][]autotune.BucketChoice, n)
	}
	// A kernel shares the work of the first of its computation: by the
	// unscheduled function when its schedule is to be decided (and no
	// database may hold records of it alone), by the scheduled one when
	// it was loaded. One with schedules for buckets of its sizes is its
	// own.
	forms := make([]alphaForm, n)
	first := map[string]int{}
	var lead, follow []int
	for i, k := range plan.Kernels {
		if k.Alias != "" {
			// A view: nothing runs (see fusion.Kernel.Alias).
			kernels[i] = &kernel{k: k, index: i, f: k.Func, Schedule: "view"}
			continue
		}
		if loaded {
			forms[i] = alphaOf(funcs[i])
		} else {
			forms[i] = alphaOf(k.Func)
		}
		if r, ok := first[forms[i].text]; ok && (loaded || db == nil) && len(buckets[i]) == 0 && len(buckets[r]) == 0 {
			follow = append(follow, i)
			continue
		}
		first[forms[i].text] = i
		lead = append(lead, i)
	}
	compile := func(i int) error {
		k := plan.Kernels[i]
		if funcs[i] == nil {
			f, src, choices, err := scheduleOf(k, target, tkey, db)
			if err != nil {
				return fmt.Errorf("module: kernel %s: %w", k.Name, err)
			}
			funcs[i], from[i], buckets[i] = f, src, choices
		}
		nk, err := cache.Compile(funcs[i], llvm.Options{})
		if err != nil {
			return fmt.Errorf("module: kernel %s: %w", k.Name, err)
		}
		kn := &kernel{k: k, index: i, f: funcs[i], native: nk, entry: nk.Entry(), Schedule: from[i]}
		for _, c := range buckets[i] {
			vk, err := cache.Compile(c.Func, llvm.Options{})
			if err != nil {
				return fmt.Errorf("module: kernel %s, bucket %v: %w", k.Name, c.Bucket, err)
			}
			kn.variants = append(kn.variants, &variant{bucket: c.Bucket, f: c.Func, native: vk, entry: vk.Entry()})
		}
		kernels[i] = kn
		return nil
	}
	if err := parallel(lead, compile); err != nil {
		return nil, err
	}
	var alone []int
	for _, i := range follow {
		r := kernels[first[forms[i].text]]
		if !loaded {
			// The first's schedule, renamed to this kernel's names.
			f, ok := renameLike(r.f, forms[r.index], forms[i])
			if !ok {
				alone = append(alone, i)
				continue
			}
			funcs[i], from[i] = f, r.Schedule
		}
		kernels[i] = &kernel{k: plan.Kernels[i], index: i, f: funcs[i], native: r.native, entry: r.entry, Schedule: from[i]}
	}
	if err := parallel(alone, compile); err != nil {
		return nil, err
	}
	return kernels, nil
}

// parallel runs fn on each index, one goroutine per core, and returns the
// error of the first index (in order) that failed.
func parallel(indexes []int, fn func(i int) error) error {
	errs := make([]error, len(indexes))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(indexes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				errs[j] = fn(indexes[j])
			}
		}()
	}
	for j := range indexes {
		work <- j
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// decided counts the schedules decided (or looked up in the database):
// the compile cache's tests check that a hit decides none.
var decided atomic.Int64

// scheduleOf returns the scheduled function of kernel k: the database's
// fastest record for its structure on the target (at any sizes: its
// sizes are symbolic or fixed by the graph), else the default schedule;
// and the schedules the database has for buckets of its sizes
// (Database.Buckets), which calls at sizes a bucket holds run instead.
func scheduleOf(k *fusion.Kernel, t autotune.Target, key string, db *autotune.Database) (*ast.Func, string, []autotune.BucketChoice, error) {
	decided.Add(1)
	var buckets []autotune.BucketChoice
	if db != nil {
		var err error
		if buckets, err = db.Buckets(k.Func, key); err != nil {
			return nil, "", nil, err
		}
		// Records of a model's tuning, timed with the weights out of the
		// caches (autotune.Task.Cold), first.
		for _, target := range []string{autotune.ColdTarget(key), key} {
			if r, f, err := db.BestAnySize(k.Func, k.Name, nil, target); err == nil && r != nil {
				return f, "record", buckets, nil
			}
		}
	}
	s, err := autotune.Default(k.Func, t)
	if err != nil {
		return nil, "", nil, err
	}
	return s.Func(), "default", buckets, nil
}

// inputNames returns the graph's inputs the plan reads, in the graph's
// order.
func inputNames(p *fusion.Plan) []string {
	var out []string
	for _, t := range p.Graph.Inputs {
		if slices.ContainsFunc(p.Buffers, func(b *fusion.Buffer) bool { return b.Tensor == t && b.Role == fusion.RoleInput }) {
			out = append(out, t.Name)
		}
	}
	return out
}

// Kernels returns the names of the module's kernels in the order they
// run, each with where its schedule came from ("record" or "default",
// then " and 1 bucket" or " and N buckets" when it has schedules for
// buckets of its sizes; or
// "view": a reshape that does not run, its output sharing its input's
// memory).
func (m *Module) Kernels() [][2]string {
	var out [][2]string
	for _, k := range m.kernels {
		src := k.Schedule
		switch n := len(k.variants); {
		case n == 1:
			src += " and 1 bucket"
		case n > 1:
			src += fmt.Sprintf(" and %d buckets", n)
		}
		out = append(out, [2]string{k.k.Name, src})
	}
	return out
}

// Plan returns the fused plan the module runs.
func (m *Module) Plan() *fusion.Plan { return m.plan }

// Inputs returns the tensors Run takes, in the graph's order (the graph's
// inputs that some kernel reads): the order of the C entry point's
// parameters too.
func (m *Module) Inputs() []*fusion.Tensor { return slices.Clone(m.inputs) }

// Outputs returns the tensors Run writes, in the graph's order.
func (m *Module) Outputs() []*fusion.Tensor { return slices.Clone(m.outputs) }
