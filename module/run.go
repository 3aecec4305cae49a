package module

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

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
	if m.closed {
		return ErrClosed
	}
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
	b, err := m.bindingAt(sizes)
	if err != nil {
		return err
	}
	ins := make([]unsafe.Pointer, len(m.inputs))
	for i, t := range m.inputs {
		ins[i] = dataPointer(inputs[t.Name].Data)
	}
	outs := make([]unsafe.Pointer, len(m.outputs))
	for i, t := range m.outputs {
		outs[i] = dataPointer(outputs[t.Name].Data)
	}
	return m.execute(b, ins, outs, times)
}

// Pointer is one input or output of RunPointers: the address of its
// first element (row-major, of the tensor's element type: a float32 is
// C's float, a float16 its 16-bit encoding) and its shape.
type Pointer struct {
	Data  unsafe.Pointer
	Shape []int64
}

// RunPointers is Run for an embedder holding raw memory (C arrays, the
// tensors of another framework): the inputs and outputs in the order of
// Inputs and Outputs. The shapes are checked as Run checks them; the
// memory behind an address cannot be: it must hold the elements its shape
// says, of the tensor's type, and no output may overlap another buffer.
// A nil address is accepted for a tensor of no elements only.
func (m *Module) RunPointers(inputs, outputs []Pointer) error {
	if m.closed {
		return ErrClosed
	}
	if len(inputs) != len(m.inputs) || len(outputs) != len(m.outputs) {
		return fmt.Errorf("module: %d inputs and %d outputs given; graph %s takes %d (%s) and writes %d (%s)",
			len(inputs), len(outputs), m.plan.Graph.Name, len(m.inputs), names(m.inputs), len(m.outputs), names(m.outputs))
	}
	shapes := make([][]int64, len(inputs))
	for i, in := range inputs {
		shapes[i] = in.Shape
	}
	sizes, err := m.bind(shapes)
	if err != nil {
		return err
	}
	want, err := m.outputShapes(sizes)
	if err != nil {
		return err
	}
	ins := make([]unsafe.Pointer, len(inputs))
	for i, in := range inputs {
		if err := checkPointer(m.inputs[i], in, "input"); err != nil {
			return err
		}
		ins[i] = in.Data
	}
	outs := make([]unsafe.Pointer, len(outputs))
	for i, out := range outputs {
		t := m.outputs[i]
		if !slices.Equal(out.Shape, want[t.Name]) {
			return fmt.Errorf("module: output %s has shape %v; at these inputs it is %v", t.Name, out.Shape, want[t.Name])
		}
		if err := checkPointer(t, out, "output"); err != nil {
			return err
		}
		outs[i] = out.Data
	}
	b, err := m.bindingAt(sizes)
	if err != nil {
		return err
	}
	return m.execute(b, ins, outs, nil)
}

// checkPointer refuses a nil address for a tensor with elements.
func checkPointer(t *fusion.Tensor, p Pointer, what string) error {
	if p.Data != nil {
		return nil
	}
	for _, d := range p.Shape {
		if d == 0 {
			return nil
		}
	}
	return fmt.Errorf("module: %s %s has no data (nil)", what, t.Name)
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

// sizesKey names a binding of the symbols.
func sizesKey(sizes map[string]int64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(sizes)) {
		b.WriteString(k + "=" + strconv.FormatInt(sizes[k], 10) + " ")
	}
	return b.String()
}
