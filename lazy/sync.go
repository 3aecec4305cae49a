package lazy

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/module"
)

// The barrier: capture the trace, find its compiled module (by its exact
// key, else by a symbolic module of its structure whose pattern fits its
// sizes), compile one on a miss, run it with the trace's inputs bound,
// and make the tensors asked for computed ones.

// compiledTrace is a module compiled for a trace's structure.
type compiledTrace struct {
	m *module.Module
	// p is its pattern of sizes (nil: the sizes it was compiled at only)
	// and symbols the number of its symbols; lo and hi are the bucket of
	// each symbol's values it was compiled for and serves.
	p       pattern
	symbols int
	lo, hi  []int64
	// shapes are the symbolic shapes of the trace's nodes in its graph
	shapes []fusion.Shape
}

// shapesFit reports whether the graph's shapes, at the trace's symbol
// values, are the shapes the trace recorded, node by node: a pattern can
// fit every size the trace names and still make another shape (x[6:] of
// a length that becomes S: S - 6 rows, where a length of 5 has 0).
func (ct *compiledTrace) shapesFit(tr *trace) bool {
	sizes := map[string]int64{}
	for j, v := range ct.p.symbolValues(tr.slots, ct.symbols) {
		sizes[symbol(j)] = v
	}
	for k, shape := range ct.shapes {
		want := tr.nodes[k].shape
		if len(shape) != len(want) {
			return false
		}
		for i, dim := range shape {
			if v, err := dim.Eval(sizes); err != nil || v != want[i] {
				return false
			}
		}
	}
	return true
}

// serves reports whether the compiled trace takes trace tr.
func (ct *compiledTrace) serves(tr *trace) bool {
	if !ct.p.accepts(tr.slots, ct.symbols) {
		return false
	}
	for j, v := range ct.p.symbolValues(tr.slots, ct.symbols) {
		if v < ct.lo[j] || v > ct.hi[j] {
			return false
		}
	}
	return ct.shapesFit(tr)
}

// structure is what a device knows of one trace structure.
type structure struct {
	first    []int64          // the sizes it was first compiled at
	symbolic []*compiledTrace // its modules with symbolic sizes
	failed   bool             // its sizes explained by no pattern
}

// ErrClosed is the error of a barrier on a closed Device.
var ErrClosed = errors.New("lazy: the device is closed")

// Sync is a barrier: it computes the pending tensors among ts, together
// (one trace, one module). Tensors computed already are left as they
// are; a tensor with an error returns it and nothing runs.
//
// With no tensors, it computes every pending tensor of the device that
// the program still holds. Go has no reference counts: which those are
// is what the garbage collector has found out so far, so a tensor the
// program dropped may be computed once more, and the trace (and its
// cache key) can differ from call to call. Naming the tensors is the
// precise form, and the one whose trace is found compiled every time.
func (d *Device) Sync(ts ...*Tensor) error {
	if d == nil {
		return errors.New("lazy: Sync on a nil Device")
	}
	if len(ts) == 0 && d.shapes != nil {
		d.mu.Lock()
		ts = d.pending()
		d.mu.Unlock()
		if len(ts) == 0 {
			return nil
		}
	}
	for i, t := range ts {
		switch {
		case t == nil:
			return fmt.Errorf("lazy: Sync: tensor %d is nil", i)
		case t.err != nil:
			return t.err
		case t.dev != d:
			return fmt.Errorf("lazy: Sync: tensor %d belongs to another device", i)
		}
	}
	if d.shapes == nil {
		return errors.New("lazy: Sync: the device was not made by NewDevice")
	}
	d.mu.Lock()
	start := time.Now()
	var targets []*Tensor
	for _, t := range ts {
		if t.node != nil && !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		d.mu.Unlock()
		return nil
	}
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	tr, err := d.capture(targets)
	if err != nil {
		d.mu.Unlock()
		return err
	}
	key := tr.exactKey()
	captured := time.Now()
	d.stats.Traces++
	d.stats.Capture += captured.Sub(start)

	ct := d.lookup(tr, key)
	hit := ct != nil
	d.stats.Lookup += time.Since(captured)
	if ct == nil {
		d.stats.Misses++
		d.mu.Unlock()
		var err error
		if ct, err = d.compile(tr, key); err != nil {
			return err
		}
		d.mu.Lock()
	} else {
		d.stats.Hits++
	}
	d.mu.Unlock()
	err = d.run(tr, ct)
	if errors.Is(err, errPatternMismatch) {
		// the graph's own rules tie sizes the pattern left free: this
		// trace gets a module of its own sizes
		d.mu.Lock()
		if hit { // counted as a hit: a miss after all
			d.stats.Hits--
			d.stats.Misses++
		}
		d.stats.ShapeRecompiles++
		d.mu.Unlock()
		start := time.Now()
		if ct, err = d.build(tr, nil, 0); err != nil {
			return err
		}
		d.mu.Lock()
		d.stats.Compile += time.Since(start)
		err = d.adopt(key, ct)
		d.mu.Unlock()
		if err != nil {
			return err
		}
		err = d.run(tr, ct)
	}
	return err
}

// errPatternMismatch says a module with symbolic sizes refused the sizes
// its pattern accepted.
var errPatternMismatch = errors.New("lazy: the sizes do not fit the symbolic module")

// lookup finds the compiled module of a trace. The device's lock is held.
func (d *Device) lookup(tr *trace, key string) *compiledTrace {
	if ct := d.exact[key]; ct != nil {
		return ct
	}
	s := d.structures[tr.structure]
	if s == nil {
		return nil
	}
	for _, ct := range s.symbolic {
		if ct.serves(tr) {
			d.remember(key, ct)
			return ct
		}
	}
	return nil
}

// adopt makes a newly compiled trace the device's, found by its exact
// key, closed with the device (at once if the device closed meanwhile).
// The device's lock is held.
func (d *Device) adopt(key string, ct *compiledTrace) error {
	if d.closed {
		ct.m.Close()
		return ErrClosed
	}
	d.modules = append(d.modules, ct.m)
	d.remember(key, ct)
	return nil
}

// remember indexes a compiled trace by its exact key.
func (d *Device) remember(key string, ct *compiledTrace) {
	if len(d.exact) >= maxEntries {
		clear(d.exact)
	}
	d.exact[key] = ct
}

// compile compiles a trace: at its sizes the first time its structure is
// met, with symbolic sizes when it comes back at other sizes and a
// pattern explains them.
func (d *Device) compile(tr *trace, key string) (*compiledTrace, error) {
	d.mu.Lock()
	s := d.structures[tr.structure]
	var p pattern
	var symbols int
	derived := false // p found from this structure's first sizes and these
	if s != nil {
		// a pattern of this structure that takes these sizes, in
		// another bucket; else one found from the first sizes and these
		for _, ct := range s.symbolic {
			if ct.p.accepts(tr.slots, ct.symbols) {
				// a copy: building the graph may take guesses back
				p, symbols = slices.Clone(ct.p), ct.symbols
				break
			}
		}
		if p == nil && !s.failed {
			var ok bool
			p, symbols, ok = derivePattern(tr, s.first, tr.slots)
			s.failed, derived = !ok, ok
		}
	} else {
		p, symbols, _ = markedPattern(tr)
	}
	if s != nil {
		d.stats.ShapeRecompiles++
	}
	d.mu.Unlock()

	start := time.Now()
	ct, err := d.build(tr, p, symbols)
	failed := false
	if err != nil && p != nil {
		// a pattern the graph's own rules do not take (its symbols
		// proved equal, say), or whose shapes at these sizes are not the
		// trace's (a slice past a short length): compile at these sizes
		// instead
		failed = derived && !errors.Is(err, errPatternMismatch)
		p = nil
		ct, err = d.build(tr, nil, 0)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s != nil && failed {
		s.failed = true // the structure's sizes make no graph: no retries
	}
	d.stats.Compile += time.Since(start)
	if err != nil {
		return nil, err
	}
	if err := d.adopt(key, ct); err != nil {
		return nil, err
	}
	if s = d.structures[tr.structure]; s == nil {
		s = &structure{first: tr.slots}
		d.structures[tr.structure] = s
	}
	if p != nil {
		d.stats.Symbolic++
		s.symbolic = append(s.symbolic, ct)
	}
	return ct, nil
}

// build compiles the graph of a trace under pattern p, for the buckets
// of its symbols' values in the trace.
func (d *Device) build(tr *trace, p pattern, symbols int) (*compiledTrace, error) {
	g, err := graphOf(tr, p)
	if err != nil {
		return nil, fmt.Errorf("lazy: the trace's graph: %w", err)
	}
	ct := &compiledTrace{p: p, symbols: symbols}
	if p != nil {
		for k := range tr.ops {
			ct.shapes = append(ct.shapes, g.Tensor(ref{'t', int32(k)}.name()).Shape)
		}
		if !ct.shapesFit(tr) {
			return nil, errPatternMismatch
		}
	}
	opts := module.Options{Threads: d.opts.Threads, Database: d.opts.Database, Cache: d.opts.Cache}
	if p != nil {
		b := &autotune.SizeBounds{Min: map[string]int64{}, Max: map[string]int64{}}
		for j, v := range p.symbolValues(tr.slots, symbols) {
			lo, hi := bucket(v)
			ct.lo, ct.hi = append(ct.lo, lo), append(ct.hi, hi)
			b.Min[symbol(j)], b.Max[symbol(j)] = lo, hi
		}
		opts.Bounds = b
	}
	if ct.m, err = module.Compile(g, opts); err != nil {
		return nil, fmt.Errorf("lazy: compiling the trace: %w", err)
	}
	return ct, nil
}

// run runs a compiled trace on the trace's inputs and makes its outputs
// computed tensors.
func (d *Device) run(tr *trace, ct *compiledTrace) error {
	start := time.Now()
	ins := make(map[string]module.Tensor, len(tr.inputs))
	for i, t := range tr.inputs {
		ins[ref{'x', int32(i)}.name()] = module.Tensor{Shape: t.shape, Data: t.data}
	}
	outs := make(map[string]module.Tensor, len(tr.outputs))
	for _, o := range tr.outputs {
		t := tr.nodes[o.i]
		outs[o.name()] = module.Tensor{Shape: t.shape, Data: newData(t.dtype, elements(t.shape))}
	}
	if ct.p != nil {
		if _, err := ct.m.Sizes(ins); err != nil {
			return errPatternMismatch // a safety net: serves checked the shapes
		}
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	d.running.Add(1) // Close waits for it
	d.mu.Unlock()
	if err := d.useThreads(); err != nil {
		d.running.Done()
		return err
	}
	bound := time.Now()
	err := ct.m.Run(ins, outs)
	ran := time.Now()
	d.running.Done()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats.Capture += bound.Sub(start)
	d.stats.Run += ran.Sub(bound)
	if err != nil {
		if errors.Is(err, module.ErrClosed) {
			return ErrClosed
		}
		return fmt.Errorf("lazy: running the trace: %w", err)
	}
	for _, o := range tr.outputs {
		// A concurrent barrier may have computed it first: its data
		// stays (a trace may be reading it).
		if t := tr.nodes[o.i]; t.node != nil {
			t.data, t.node, t.kind = outs[o.name()].Data, nil, leafInput
		}
	}
	return nil
}

// Sync is Device.Sync for tensors of any devices: each device's tensors
// are computed together. With no tensors, it is the Default device's
// Sync with none: every pending tensor of it the program holds.
func Sync(ts ...*Tensor) error {
	if len(ts) == 0 {
		d, err := Default()
		if err != nil {
			return err
		}
		return d.Sync()
	}
	var devs []*Device
	for i, t := range ts {
		if t == nil {
			return fmt.Errorf("lazy: Sync: tensor %d is nil", i)
		}
		if t.err != nil {
			return t.err
		}
		if t.dev == nil {
			return fmt.Errorf("lazy: Sync: tensor %d is no tensor of a device (a zero Tensor)", i)
		}
		if !slices.Contains(devs, t.dev) {
			devs = append(devs, t.dev)
		}
	}
	for _, d := range devs {
		var mine []*Tensor
		for _, t := range ts {
			if t.dev == d {
				mine = append(mine, t)
			}
		}
		if err := d.Sync(mine...); err != nil {
			return err
		}
	}
	return nil
}

// newData returns n zeroed elements of dt's Go type.
func newData(dt ast.DType, n int64) any {
	switch dt {
	case ast.Float32:
		return make([]float32, n)
	case ast.Float64:
		return make([]float64, n)
	case ast.Int32:
		return make([]int32, n)
	case ast.Int64:
		return make([]int64, n)
	case ast.Bool:
		return make([]bool, n)
	}
	return make([]uint16, n) // float16, bfloat16: their encodings
}

// runtimeThreads is the thread count a device last set the native
// runtime to (0: none yet).
var runtimeThreads atomic.Int64

// useThreads sets the native runtime's threads to the device's when the
// device that ran last set another count: devices of different thread
// counts take turns in one process. (Asking the runtime each time would
// cost more than a small trace's kernels.)
func (d *Device) useThreads() error {
	if runtimeThreads.Load() == int64(d.opts.Threads) {
		return nil
	}
	if err := native.SetThreads(d.opts.Threads); err != nil {
		return err
	}
	runtimeThreads.Store(int64(d.opts.Threads))
	return nil
}
