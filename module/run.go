package module

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/fusion/memplan"
)

// memoryPlan is where the intermediates live in the arena at one binding
// of the symbols.
type memoryPlan struct {
	plan   *memplan.Plan
	offset map[string]int64 // by tensor name
}

// Run runs the module on inputs, writing outputs (see NewOutputs for
// zeroed ones of the right shapes). The symbols are bound from the
// inputs' shapes (Sizes); every input and output is checked before any
// kernel runs.
func (m *Module) Run(inputs, outputs map[string]Tensor) error {
	return m.run(inputs, outputs, nil)
}

// RunProfiled is Run that also returns each kernel's time (the call
// alone, without checking and packing its arguments), in the order of
// Kernels.
func (m *Module) RunProfiled(inputs, outputs map[string]Tensor) ([]time.Duration, error) {
	times := make([]time.Duration, len(m.kernels))
	return times, m.run(inputs, outputs, times)
}

func (m *Module) run(inputs, outputs map[string]Tensor, times []time.Duration) error {
	sizes, err := m.Sizes(inputs)
	if err != nil {
		return err
	}
	shapes, err := m.outputShapes(sizes)
	if err != nil {
		return err
	}
	for name := range outputs {
		if !slices.ContainsFunc(m.outputs, func(t *fusion.Tensor) bool { return t.Name == name }) {
			return fmt.Errorf("module: %s is no output of graph %s (outputs: %s)", name, m.plan.Graph.Name, names(m.outputs))
		}
	}
	for _, t := range m.outputs {
		out, ok := outputs[t.Name]
		if !ok {
			return fmt.Errorf("module: no output %s (graph %s writes %s)", t.Name, m.plan.Graph.Name, names(m.outputs))
		}
		if !slices.Equal(out.Shape, shapes[t.Name]) {
			return fmt.Errorf("module: output %s has shape %v; at these inputs it is %v", t.Name, out.Shape, shapes[t.Name])
		}
		if err := checkData(t, out, "output"); err != nil {
			return err
		}
	}
	data := map[string]any{}
	for name, in := range inputs {
		data[name] = in.Data
	}
	for name, out := range outputs {
		data[name] = out.Data
	}
	return m.exec(sizes, data, times)
}

// exec runs the kernels on data (every input and output, checked) at
// sizes, the intermediates in an arena; with times, it records each
// kernel's call.
func (m *Module) exec(sizes map[string]int64, data map[string]any, times []time.Duration) error {
	mp, err := m.memoryAt(sizes)
	if err != nil {
		return err
	}
	arena := m.takeArena(mp.plan.Peak)
	defer m.giveArena(arena)
	for _, b := range m.plan.Buffers {
		t := b.Tensor
		switch b.Role {
		case fusion.RoleConstant:
			data[t.Name] = m.consts[t.Name]
		case fusion.RoleIntermediate:
			if b.AliasOf != nil {
				continue
			}
			n, err := elements(t, sizes)
			if err != nil {
				return err
			}
			data[t.Name] = view(arena, mp.offset[t.Name], n, t.DType)
		}
	}
	for _, b := range m.plan.Buffers {
		if b.AliasOf != nil {
			data[b.Tensor.Name] = data[b.AliasOf.Name] // a reshape: the same elements
		}
	}
	for i, k := range m.kernels {
		if k.native == nil {
			continue // a view
		}
		args := map[string]any{}
		for _, name := range append(slices.Clone(k.k.Inputs), k.k.Outputs...) {
			args[name] = data[name]
		}
		ks := map[string]int64{}
		for _, s := range k.k.Func.Sizes {
			ks[s.Name] = sizes[s.Name]
		}
		call, err := k.native.Bind(ks, args)
		if err != nil {
			return fmt.Errorf("module: kernel %s: %w", k.k.Name, err)
		}
		start := time.Now()
		err = call.Run()
		if times != nil {
			times[i] = time.Since(start)
		}
		call.Release()
		if err != nil {
			return fmt.Errorf("module: kernel %s: %w", k.k.Name, err)
		}
	}
	return nil
}

// memoryAt returns the arena plan at sizes, planned once per binding.
func (m *Module) memoryAt(sizes map[string]int64) (*memoryPlan, error) {
	key := sizesKey(sizes)
	m.mu.Lock()
	mp := m.memory[key]
	m.mu.Unlock()
	if mp != nil {
		return mp, nil
	}
	p, err := m.plan.Memory(sizes)
	if err != nil {
		return nil, err
	}
	mp = &memoryPlan{plan: p, offset: map[string]int64{}}
	for _, pl := range p.Places {
		mp.offset[pl.Name] = pl.Offset
	}
	m.mu.Lock()
	m.memory[key] = mp
	m.mu.Unlock()
	return mp, nil
}

// Memory returns the arena's peak bytes at the inputs' shapes, and what
// allocating every intermediate apart would take.
func (m *Module) Memory(inputs map[string]Tensor) (peak, naive int64, err error) {
	sizes, err := m.Sizes(inputs)
	if err != nil {
		return 0, 0, err
	}
	mp, err := m.memoryAt(sizes)
	if err != nil {
		return 0, 0, err
	}
	return mp.plan.Peak, mp.plan.Naive, nil
}

// GraphOrderPeak returns the arena's peak bytes at the inputs' shapes had
// the kernels run in the graph's order: what the exec-order pass saves
// (fusion.Plan.GraphOrderMemory).
func (m *Module) GraphOrderPeak(inputs map[string]Tensor) (int64, error) {
	sizes, err := m.Sizes(inputs)
	if err != nil {
		return 0, err
	}
	p, err := m.plan.GraphOrderMemory(sizes)
	if err != nil {
		return 0, err
	}
	return p.Peak, nil
}

// takeArena returns an arena of at least n bytes, 64-byte aligned: one a
// finished call gave back when it is large enough.
func (m *Module) takeArena(n int64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, a := range m.free {
		if int64(len(a)) >= n {
			m.free = slices.Delete(m.free, i, i+1)
			return a
		}
	}
	// 64 bytes more, to align the start (the words under it are 8-byte
	// aligned already).
	raw := make([]uint64, (n+64+7)/8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(raw))), len(raw)*8)
	skip := (64 - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64)) % 64
	return b[skip : int64(skip)+n : int64(skip)+n]
}

func (m *Module) giveArena(a []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.free = append(m.free, a)
}

// view returns the n elements of type dt at offset off of the arena as
// the Go slice the kernels take.
func view(arena []byte, off, n int64, dt ast.DType) any {
	if n == 0 {
		return reflect.MakeSlice(sliceType(dt), 0, 0).Interface()
	}
	p := unsafe.Pointer(&arena[off])
	switch dt {
	case ast.Float32:
		return unsafe.Slice((*float32)(p), n)
	case ast.Float64:
		return unsafe.Slice((*float64)(p), n)
	case ast.Int32:
		return unsafe.Slice((*int32)(p), n)
	case ast.Int64:
		return unsafe.Slice((*int64)(p), n)
	case ast.Bool:
		return unsafe.Slice((*bool)(p), n)
	}
	return unsafe.Slice((*uint16)(p), n)
}

// elements returns the number of elements of t at sizes.
func elements(t *fusion.Tensor, sizes map[string]int64) (int64, error) {
	n, err := t.Shape.Elems()
	if err != nil {
		return 0, err
	}
	return n.Eval(sizes)
}

// sizesKey names a binding of the symbols.
func sizesKey(sizes map[string]int64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(sizes)) {
		b.WriteString(k + "=" + strconv.FormatInt(sizes[k], 10) + " ")
	}
	return b.String()
}
