package module

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
)

// The calls of the kernels. Everything a call needs besides the data's
// addresses is worked out once per binding of the symbols (a binding):
// each kernel's sizes and where each of its buffers lives (an input, an
// output, a constant, or an offset in the arena). A run then only fills
// an array of addresses per kernel and calls the kernel's packed entry
// point (the C ABI of codegen/llvm: buffers, then sizes), as the C
// library does.

// place says where a kernel's buffer lives.
type place struct {
	kind   placeKind
	index  int   // into the inputs, the outputs or the constants
	offset int64 // into the arena
}

type placeKind uint8

const (
	inInput placeKind = iota
	inOutput
	inConstant
	inArena
)

// call is one kernel's call at a binding.
type call struct {
	k      *kernel
	entry  uintptr // the kernel's, or its variant's for these sizes
	sizes  []int64 // in the order of the function's sizes (never empty)
	places []place // in the order of its buffer parameters
}

// binding is what the calls need at one binding of the symbols.
type binding struct {
	mem   *memoryPlan
	calls []call
}

// bindingAt returns the calls at sizes, worked out once per binding.
func (m *Module) bindingAt(sizes map[string]int64) (*binding, error) {
	key := sizesKey(sizes)
	m.mu.Lock()
	b := m.bindings[key]
	m.mu.Unlock()
	if b != nil {
		return b, nil
	}
	mp, err := m.memoryAt(sizes)
	if err != nil {
		return nil, err
	}
	b = &binding{mem: mp}
	where := map[string]place{}
	for i, t := range m.inputs {
		where[t.Name] = place{kind: inInput, index: i}
	}
	for i, t := range m.outputs {
		where[t.Name] = place{kind: inOutput, index: i}
	}
	for i, name := range m.constNames {
		where[name] = place{kind: inConstant, index: i}
	}
	for _, buf := range m.plan.Buffers {
		if buf.Role == fusion.RoleIntermediate && buf.AliasOf == nil {
			where[buf.Tensor.Name] = place{kind: inArena, offset: mp.offset[buf.Tensor.Name]}
		}
	}
	for _, buf := range m.plan.Buffers {
		if buf.AliasOf != nil {
			where[buf.Tensor.Name] = where[buf.AliasOf.Name] // a reshape: the same memory
		}
	}
	for _, k := range m.kernels {
		if k.entry == 0 {
			continue // a view
		}
		c := call{k: k, entry: k.entryAt(sizes)}
		for _, s := range k.f.Sizes {
			c.sizes = append(c.sizes, sizes[s.Name])
		}
		if len(c.sizes) == 0 {
			c.sizes = []int64{0} // a valid address to pass
		}
		for _, p := range k.f.Params {
			pl, ok := where[p.Name]
			if !ok {
				return nil, fmt.Errorf("module: kernel %s: no buffer %s", k.k.Name, p.Name)
			}
			c.places = append(c.places, pl)
		}
		b.calls = append(b.calls, c)
	}
	m.mu.Lock()
	m.bindings[key] = b
	m.mu.Unlock()
	return b, nil
}

// execute runs the kernels at binding b on the inputs' and outputs'
// addresses (in the order of m.inputs and m.outputs); with times, it
// records each kernel's call (by index in m.kernels).
func (m *Module) execute(b *binding, ins, outs []unsafe.Pointer, times []time.Duration) error {
	arena := m.takeArena(b.mem.plan.Peak)
	defer m.giveArena(arena)
	var base unsafe.Pointer
	if len(arena) > 0 {
		base = unsafe.Pointer(unsafe.SliceData(arena))
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	for _, p := range ins {
		pinIfGo(&pin, p)
	}
	for _, p := range outs {
		pinIfGo(&pin, p)
	}
	if base != nil {
		pin.Pin(base)
	}
	if times == nil {
		if err, ok := m.executeAll(b, ins, outs, base, &pin); ok {
			return err
		}
	}
	ptrs := make([]unsafe.Pointer, m.maxParams)
	pin.Pin(&ptrs[0])
	for _, c := range b.calls {
		for i, pl := range c.places {
			switch pl.kind {
			case inInput:
				ptrs[i] = ins[pl.index]
			case inOutput:
				ptrs[i] = outs[pl.index]
			case inConstant:
				ptrs[i] = m.constPtrs[pl.index]
			case inArena:
				ptrs[i] = unsafe.Add(base, pl.offset)
			}
		}
		start := time.Now()
		r, _, _ := purego.SyscallN(c.entry, uintptr(unsafe.Pointer(&ptrs[0])), uintptr(unsafe.Pointer(&c.sizes[0])))
		if times != nil {
			times[c.k.index] = time.Since(start)
		}
		if err := m.kernelFailed(c, int32(r)); err != nil {
			return err
		}
	}
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(arena)
	return nil
}

// executeAll runs the calls of binding b in one call into loom's runtime
// (native.RunKernels), the arrays of addresses filled first; ok is false
// when the runtime cannot (then nothing ran). One call keeps the kernels
// on one thread: called one by one from Go, each could come back on
// another thread and core (ResNet-50 on one thread: about one context
// switch per kernel) and find its input in the other core's caches.
func (m *Module) executeAll(b *binding, ins, outs []unsafe.Pointer, base unsafe.Pointer, pin *runtime.Pinner) (err error, ok bool) {
	n := 0
	for _, c := range b.calls {
		n += len(c.places)
	}
	ptrs := make([]unsafe.Pointer, max(n, 1))
	calls := make([]native.KernelCall, len(b.calls))
	pin.Pin(&ptrs[0])
	at := 0
	for i, c := range b.calls {
		for j, pl := range c.places {
			switch pl.kind {
			case inInput:
				ptrs[at+j] = ins[pl.index]
			case inOutput:
				ptrs[at+j] = outs[pl.index]
			case inConstant:
				ptrs[at+j] = m.constPtrs[pl.index]
			case inArena:
				ptrs[at+j] = unsafe.Add(base, pl.offset)
			}
		}
		pin.Pin(&c.sizes[0])
		first := at
		if first >= len(ptrs) {
			first = 0 // a kernel without buffers
		}
		calls[i] = native.KernelCall{Entry: c.entry, Buffers: unsafe.Pointer(&ptrs[first]), Sizes: unsafe.Pointer(&c.sizes[0])}
		at += len(c.places)
	}
	if len(calls) > 0 {
		pin.Pin(&calls[0])
	}
	status, failed, err := native.RunKernels(calls)
	if err != nil {
		return nil, false
	}
	runtime.KeepAlive(ptrs)
	runtime.KeepAlive(calls)
	if status != 0 {
		return m.kernelFailed(b.calls[failed], status), true
	}
	return nil, true
}

// kernelFailed is the error of call c's status r (nil when r is 0).
func (m *Module) kernelFailed(c call, r int32) error {
	err := native.StatusError(r)
	if err == nil {
		return nil
	}
	where := ""
	if errors.Is(err, native.ErrIndexOutOfRange) {
		where = m.gathersOf(c.k)
	}
	return fmt.Errorf("module: kernel %s%s: %w", c.k.k.Name, where, err)
}

// gathersOf names the gather nodes kernel k computes, as " (gather Y,
// gather Z)"; "" when it has none.
func (m *Module) gathersOf(k *kernel) string {
	var names []string
	for _, n := range m.plan.Graph.Nodes {
		if n.Op == "gather" && slices.Contains(k.k.Nodes, n.Output.Name) {
			names = append(names, "gather "+n.Output.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// pinIfGo pins p when it points into Go's heap (Pin leaves a caller's C
// memory alone).
func pinIfGo(pin *runtime.Pinner, p unsafe.Pointer) {
	if p != nil {
		pin.Pin(p)
	}
}

// dataPointer returns the address of a Go slice's first element (nil for
// an empty one).
func dataPointer(data any) unsafe.Pointer {
	switch d := data.(type) {
	case []float32:
		return unsafe.Pointer(unsafe.SliceData(d))
	case []float64:
		return unsafe.Pointer(unsafe.SliceData(d))
	case []int32:
		return unsafe.Pointer(unsafe.SliceData(d))
	case []int64:
		return unsafe.Pointer(unsafe.SliceData(d))
	case []bool:
		return unsafe.Pointer(unsafe.SliceData(d))
	case []uint16:
		return unsafe.Pointer(unsafe.SliceData(d))
	}
	return nil
}

// constantPointers returns the constants' data (as the kernels take it)
// and its addresses, in the order of names.
func constantPointers(plan *fusion.Plan) (names []string, data []any, ptrs []unsafe.Pointer) {
	for _, b := range plan.Buffers {
		if b.Role == fusion.RoleConstant {
			d := ast.DataOf(b.Tensor.DType, b.Tensor.Data)
			names, data, ptrs = append(names, b.Tensor.Name), append(data, d), append(ptrs, dataPointer(d))
		}
	}
	return names, data, ptrs
}
