package native

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// Kernel is a compiled function loaded into this process: a handle on
// its shared object, which stays loaded until every handle on it is
// closed (Close). A Cache gives a handle to each Compile, so that a
// program that compiles the same function twice closes each once.
type Kernel struct {
	// Module is the lowered function; nil for a kernel the cache found
	// through its index without lowering (Lowered lowers it then).
	Module *llvm.Module
	Path   string // the shared object
	Stats  Stats

	fn     *ast.Func // the function, as lowered
	opts   llvm.Options
	symbol string  // the packed entry point's symbol
	entry  uintptr // the packed entry point
	obj    *object
	closed bool
}

// object is a loaded shared object, which the handles of one kernel
// share.
type object struct {
	handle uintptr
	refs   int // open handles; the cache's mu guards it, or objectMu
	cache  *Cache
	key    string // the object's key in cache.mem, when the cache keeps it

	lowerOnce sync.Once
	lowered   *llvm.Module
	lowerErr  error
}

// objectMu guards the handle counts of objects no cache keeps.
var objectMu sync.Mutex

// ErrClosed is the error of a call on a closed kernel.
var ErrClosed = errors.New("the kernel is closed")

// newHandle returns a new handle on k's object, counted.
func (k *Kernel) newHandle() *Kernel {
	k.obj.lock()
	k.obj.refs++
	k.obj.unlock()
	return &Kernel{Module: k.Module, Path: k.Path, Stats: k.Stats, fn: k.fn, opts: k.opts, symbol: k.symbol, entry: k.entry, obj: k.obj}
}

func (o *object) lock() {
	if o.cache != nil {
		o.cache.mu.Lock()
	} else {
		objectMu.Lock()
	}
}

func (o *object) unlock() {
	if o.cache != nil {
		o.cache.mu.Unlock()
	} else {
		objectMu.Unlock()
	}
}

// Close releases the handle: a call through it (or a Call bound before)
// then fails with ErrClosed, and when it was the last handle on its
// shared object, the object leaves the cache's memory and the process
// (the file stays in the cache). Close must not run while a call through
// the handle does; closing twice does nothing.
func (k *Kernel) Close() error {
	if k.closed || k.obj == nil {
		return nil
	}
	k.closed = true
	o := k.obj
	o.lock()
	o.refs--
	last := o.refs == 0
	if last && o.cache != nil && o.cache.mem[o.key] != nil && o.cache.mem[o.key].obj == o {
		delete(o.cache.mem, o.key)
	}
	o.unlock()
	if !last || o.handle == 0 {
		return nil
	}
	h := o.handle
	o.handle = 0
	if err := purego.Dlclose(h); err != nil {
		return fmt.Errorf("codegen/llvm/native: unloading %s: %w", k.Path, err)
	}
	return nil
}

// name is the kernel's C symbol (its packed entry point's, less _packed).
func (k *Kernel) name() string { return strings.TrimSuffix(k.symbol, "_packed") }

// Lowered returns the kernel's LLVM module, lowering the function again
// when the kernel came from the cache's index.
func (k *Kernel) Lowered() (*llvm.Module, error) {
	if k.Module != nil {
		return k.Module, nil
	}
	o := k.obj
	o.lowerOnce.Do(func() { o.lowered, o.lowerErr = llvm.Lower(k.fn, k.opts) })
	return o.lowered, o.lowerErr
}

// Stats tells where the time to get a kernel went.
type Stats struct {
	Cached  bool          // the shared object was already on disk
	Indexed bool          // found through the index, without lowering
	Lower   time.Duration // ast to LLVM IR
	Compile time.Duration // opt and llc
	Link    time.Duration
	Load    time.Duration // dlopen
}

// Total returns the time from function to loaded kernel.
func (s Stats) Total() time.Duration { return s.Lower + s.Compile + s.Link + s.Load }

func (k *Kernel) load() error {
	h, err := purego.Dlopen(k.Path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return fmt.Errorf("codegen/llvm/native: loading %s: %w", k.Path, err)
	}
	sym, err := purego.Dlsym(h, k.symbol)
	if err != nil {
		return fmt.Errorf("codegen/llvm/native: %s has no %s: %w", k.Path, k.symbol, err)
	}
	k.entry = sym
	k.obj = &object{handle: h, refs: 1}
	return nil
}

// Entry returns the address of the kernel's packed entry point (the C ABI
// of codegen/llvm: int32_t NAME_packed(void *const *buffers, const
// int64_t *sizes)), for a runtime that calls it without Run's checks.
func (k *Kernel) Entry() uintptr { return k.entry }

// Errors a kernel call reports.
var (
	ErrDivByZero   = errors.New("integer division by zero")
	ErrOutOfMemory = errors.New("out of memory for a temporary buffer")
	// ErrIndexOutOfRange: an index read from a buffer (a gather's: an
	// input holding a token id, say) was outside the dimension it
	// indexes; the outputs are not valid.
	ErrIndexOutOfRange = errors.New("a gather's index is out of range")
)

// StatusError returns the error a kernel's status (see package
// codegen/llvm) stands for: nil for llvm.StatusOK, else each fault its
// bits name, in one error that wraps them all.
func StatusError(status int32) error {
	if status == llvm.StatusOK {
		return nil
	}
	var faults []error
	for _, f := range []struct {
		bit int32
		err error
	}{{llvm.StatusIndexOutOfRange, ErrIndexOutOfRange}, {llvm.StatusDivByZero, ErrDivByZero}, {llvm.StatusOutOfMemory, ErrOutOfMemory}} {
		if status&f.bit != 0 {
			faults = append(faults, f.err)
			status &^= f.bit
		}
	}
	if status != 0 {
		faults = append(faults, fmt.Errorf("unknown status bits %#x", status))
	}
	format := strings.TrimSuffix(strings.Repeat("%w; ", len(faults)), "; ")
	args := make([]any, len(faults))
	for i, f := range faults {
		args[i] = f
	}
	return fmt.Errorf(format, args...)
}

// Call is a kernel call with its arguments checked and packed, to run
// any number of times (as a benchmark does).
type Call struct {
	k      *Kernel
	ptrs   []unsafe.Pointer
	sizes  []int64
	pinner *runtime.Pinner
}

// Run calls the kernel on f's sizes and buffers, given as Interpret takes
// them: a value per symbolic size, and a Go slice per buffer parameter of
// the buffer's element type ([]float32, []uint16 for float16, ...) and
// exact length. It checks all of that before the kernel runs, and refuses
// buffers that overlap.
func (k *Kernel) Run(sizes map[string]int64, buffers map[string]any) error {
	c, err := k.Bind(sizes, buffers)
	if err != nil {
		return err
	}
	defer c.Release()
	return c.Run()
}

// Bind checks and packs the arguments of a call. The buffers stay pinned
// until Release.
func (k *Kernel) Bind(sizes map[string]int64, buffers map[string]any) (*Call, error) {
	f := k.fn
	fail := func(format string, args ...any) (*Call, error) {
		return nil, fmt.Errorf("codegen/llvm/native: kernel %s: %s", k.name(), fmt.Sprintf(format, args...))
	}
	if k.closed {
		return nil, fmt.Errorf("codegen/llvm/native: kernel %s: %w", k.name(), ErrClosed)
	}
	for name := range sizes {
		if f.Size(name) == nil {
			return fail("%s is not a symbolic size", name)
		}
	}
	env := map[string]int64{}
	c := &Call{k: k}
	for _, s := range f.Sizes {
		v, ok := sizes[s.Name]
		if !ok {
			return fail("no value given for size %s", s.Name)
		}
		if v < 0 || s.DType == ast.Int32 && v > 1<<31-1 {
			return fail("size %s = %d is negative or out of the %s range", s.Name, v, s.DType)
		}
		env[s.Name] = v
		c.sizes = append(c.sizes, v)
	}
	for name := range buffers {
		if f.Param(name) == nil {
			return fail("%s is not a buffer parameter", name)
		}
	}
	type span struct {
		name   string
		lo, hi uintptr
	}
	var spans []span
	c.pinner = new(runtime.Pinner)
	for _, b := range f.Params {
		data, ok := buffers[b.Name]
		if !ok {
			c.Release()
			return fail("no data given for buffer %s", b.Name)
		}
		n, err := elements(b, env)
		if err != nil {
			c.Release()
			return fail("%v", err)
		}
		p, length, elem, ok := sliceData(b.DType, data)
		if !ok {
			c.Release()
			return fail("buffer %s holds %s, so its data must be a %s, not %T", b.Name, b.DType, ast.GoType(b.DType), data)
		}
		if int64(length) != n {
			c.Release()
			return fail("buffer %s has %d elements at these sizes, but its data has %d", b.Name, n, length)
		}
		if p != nil {
			c.pinner.Pin(p)
			lo := uintptr(p)
			spans = append(spans, span{b.Name, lo, lo + uintptr(length)*elem})
		}
		c.ptrs = append(c.ptrs, p)
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.lo < b.hi && b.lo < a.hi {
				c.Release()
				return fail("buffers %s and %s overlap; kernels assume they do not", a.name, b.name)
			}
		}
	}
	if len(c.ptrs) > 0 {
		c.pinner.Pin(&c.ptrs[0])
	}
	if len(c.sizes) == 0 {
		c.sizes = []int64{0} // a valid address to pass
	}
	if len(c.ptrs) == 0 {
		c.ptrs = []unsafe.Pointer{nil}
	}
	return c, nil
}

// Run calls the kernel once.
func (c *Call) Run() error {
	if c.k.closed {
		return fmt.Errorf("codegen/llvm/native: kernel %s: %w", c.k.name(), ErrClosed)
	}
	r, _, _ := purego.SyscallN(c.k.entry, uintptr(unsafe.Pointer(&c.ptrs[0])), uintptr(unsafe.Pointer(&c.sizes[0])))
	runtime.KeepAlive(c)
	if err := StatusError(int32(r)); err != nil {
		return fmt.Errorf("codegen/llvm/native: kernel %s: %w", c.k.name(), err)
	}
	return nil
}

// Release unpins the call's buffers; the call must not run after it.
func (c *Call) Release() {
	if c.pinner != nil {
		c.pinner.Unpin()
		c.pinner = nil
	}
}

// elements returns the number of elements of b at the given sizes.
func elements(b *ast.Buffer, sizes map[string]int64) (int64, error) {
	data, err := ast.NewData(&ast.Buffer{Name: b.Name, DType: ast.Bool, Shape: b.Shape}, sizes)
	if err != nil {
		return 0, err
	}
	return int64(len(data.([]bool))), nil
}

// sliceData returns the address, length and element size of a Go slice
// of the Go type for element type t.
func sliceData(t ast.DType, data any) (unsafe.Pointer, int, uintptr, bool) {
	switch d := data.(type) {
	case []float32:
		return ptrOf(d), len(d), 4, t == ast.Float32
	case []float64:
		return ptrOf(d), len(d), 8, t == ast.Float64
	case []int32:
		return ptrOf(d), len(d), 4, t == ast.Int32
	case []int64:
		return ptrOf(d), len(d), 8, t == ast.Int64
	case []bool:
		return ptrOf(d), len(d), 1, t == ast.Bool
	case []uint16:
		return ptrOf(d), len(d), 2, t == ast.Float16 || t == ast.BFloat16
	}
	return nil, 0, 0, false
}

func ptrOf[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}
