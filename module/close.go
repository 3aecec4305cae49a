package module

import (
	"errors"

	"github.com/loom-go/loom/codegen/llvm/native"
)

// Close releases the handle: a call through it then fails with
// ErrClosed, and when it was the last open handle on its compiled graph,
// the graph leaves the process's memory cache and its kernels are
// unloaded (native.Kernel.Close; their files stay in the disk cache, so
// compiling the graph again is fast). Close must not run while a call
// through the handle does; closing twice does nothing. A Library built
// from the module is a program of its own and stays usable.
func (m *Module) Close() error {
	if m.closed || m.compiled == nil {
		return nil
	}
	m.closed = true
	c := m.compiled
	memoryCache.Lock()
	c.refs--
	last := c.refs == 0
	if last && c.key != "" && memoryCache.m[c.key] == c {
		delete(memoryCache.m, c.key)
	}
	memoryCache.Unlock()
	if !last {
		return nil
	}
	var errs []error
	seen := map[*native.Kernel]bool{}
	closeKernel := func(k *native.Kernel) {
		if k != nil && !seen[k] {
			seen[k] = true
			errs = append(errs, k.Close())
		}
	}
	for _, k := range c.kernels {
		if k == nil {
			continue
		}
		closeKernel(k.native)
		for _, v := range k.variants {
			closeKernel(v.native)
		}
	}
	c.mu.Lock()
	c.free, c.bindings, c.memory = nil, map[string]*binding{}, map[string]*memoryPlan{}
	c.mu.Unlock()
	return errors.Join(errs...)
}
