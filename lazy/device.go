package lazy

import (
	"errors"
	"sync"
	"weak"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/module"
)

// Options configure a Device.
type Options struct {
	// Threads is the number of threads the kernels are scheduled for and
	// run on (0: 1). The native runtime has one thread count per process
	// (native.SetThreads): a barrier sets it to its device's when another
	// device last set it otherwise, so devices of different thread counts
	// take turns, not run at once. (A program that calls
	// native.SetThreads itself runs its devices on that count.)
	Threads int
	// Database, when not nil, gives the compiled modules the tuned
	// schedules it holds for their kernels (module.Options.Database),
	// including schedules tuned for buckets of symbolic sizes.
	Database *autotune.Database
	// Cache holds the compiled kernels (nil: native.DefaultCache).
	Cache *native.Cache
}

// maxEntries bounds the exact-shape index of a Device: past it, the index
// is emptied (the modules stay: they are found again through the
// structure's entries).
const maxEntries = 4096

// Device records operations and runs them: it owns the cache of
// compiled traces and the statistics. A Device is safe for concurrent use;
// its tensors may be read from several goroutines.
type Device struct {
	opts Options

	mu     sync.Mutex
	closed bool
	// shapes caches shape inference by operator, attributes and operand
	// shapes (infer.go).
	shapes map[string]inferred
	// exact maps a trace's full key (structure and every size) to its
	// compiled module; structures maps its key without sizes to what is
	// known of it at several sizes (cache.go).
	exact      map[string]*compiledTrace
	structures map[string]*structure
	modules    []*module.Module // every module compiled, to close
	running    sync.WaitGroup   // runs in flight, which Close waits for
	stats      Stats
	// live are the pending tensors recorded, weakly held (Sync with no
	// tensors computes those the program still holds); liveKept is how
	// many the last pruning kept.
	live     []weak.Pointer[Tensor]
	liveKept int
	weights  uint64 // the last weight identity handed out
	epoch    uint64 // the last capture's
}

// NewDevice returns a device with its own cache and statistics.
func NewDevice(opts Options) (*Device, error) {
	if opts.Threads < 0 {
		return nil, errors.New("lazy: Options.Threads is negative")
	}
	opts.Threads = max(opts.Threads, 1)
	return &Device{
		opts:       opts,
		shapes:     map[string]inferred{},
		exact:      map[string]*compiledTrace{},
		structures: map[string]*structure{},
	}, nil
}

var (
	defaultOnce   sync.Once
	defaultDevice *Device
	defaultErr    error
)

// Default returns the device the package's functions use: one thread,
// the default kernel cache; a program that wants more makes its own
// device.
func Default() (*Device, error) {
	defaultOnce.Do(func() { defaultDevice, defaultErr = NewDevice(Options{}) })
	return defaultDevice, defaultErr
}

// Threads is the number of threads the device's kernels are made for.
func (d *Device) Threads() int { return d.opts.Threads }

// Close releases the compiled modules, once the barriers running on
// them have finished. Tensors already computed stay readable; a barrier
// that has something to compute after Close is an error (ErrClosed).
func (d *Device) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true // no run starts after this
	d.mu.Unlock()
	d.running.Wait() // the runs that started finish
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, m := range d.modules {
		errs = append(errs, m.Close())
	}
	d.modules, d.exact, d.structures = nil, nil, nil
	return errors.Join(errs...)
}

// Stats returns the device's statistics so far.
func (d *Device) Stats() Stats {
	if d == nil {
		return Stats{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// ResetStats zeroes the statistics (the cache stays).
func (d *Device) ResetStats() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stats = Stats{}
}
