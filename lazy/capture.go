package lazy

import (
	"fmt"
	"math"
	"strconv"

	"github.com/loom-go/loom/fusion"
)

// Capture: at a barrier, the pending tensors the program asked for and
// everything pending they depend on become a trace: the computed tensors
// they read are its inputs (weights and small constants its constants),
// the recorded operations its nodes, in an order where every operand
// comes first. The trace's structure (operators, attributes, dtypes,
// ranks, weights' identities, constants' values, how they connect) is
// written as a string, and its sizes (every input's dimensions, then
// every shape attribute) as a list of integers: together they key the
// cache of compiled traces, and the structure alone finds the traces
// that differ only in their sizes (symbolic.go).

// trace is the captured part of a device's recorded operations. It is
// read without the device's lock (a compilation, a run): it holds what
// it needs of the tensors as they were at the capture.
type trace struct {
	inputs  []*Tensor // computed tensors bound per call, in order of first use
	consts  []*Tensor // weights and small constants
	nodes   []*Tensor // pending tensors, operands first
	ops     []*node   // their operations
	args    [][]ref   // each operation's operands
	outputs []ref     // the tensors asked for (nodes), each once

	structure string
	slots     []int64
	// inputSlots is how many of the slots are the inputs' dimensions.
	inputSlots int
}

// ref is a tensor of a trace: an input ('x'), a constant ('c') or a node
// ('t'), and its index among those.
type ref struct {
	kind byte
	i    int32
}

// name is the tensor's name in the trace's graph.
func (r ref) name() string {
	if int(r.i) < len(refNames) {
		return refNames[r.kind][r.i]
	}
	return string(r.kind) + strconv.Itoa(int(r.i))
}

// refNames are the first names of each kind, made once (a run binds its
// inputs and outputs by name on every call).
var refNames = func() map[byte][]string {
	m := map[byte][]string{}
	for _, k := range []byte{'x', 'c', 't'} {
		for i := range 256 {
			m[k] = append(m[k], string(k)+strconv.Itoa(i))
		}
	}
	return m
}()

// capture collects the trace that computes targets (pending, distinct).
// The device's lock is held: the tensors' seen and at fields are its
// scratch, marked with this capture's epoch.
func (d *Device) capture(targets []*Tensor) (*trace, error) {
	d.epoch++
	epoch := d.epoch
	tr := &trace{}
	var visit func(t *Tensor) ref
	visit = func(t *Tensor) ref {
		if t.seen == epoch {
			return t.at
		}
		t.seen = epoch
		if t.node == nil {
			switch t.kind {
			case leafInput:
				t.at = ref{'x', int32(len(tr.inputs))}
				tr.inputs = append(tr.inputs, t)
			default:
				t.at = ref{'c', int32(len(tr.consts))}
				tr.consts = append(tr.consts, t)
			}
			return t.at
		}
		n := t.node
		args := make([]ref, len(n.inputs))
		for i, in := range n.inputs {
			args[i] = visit(in)
		}
		t.at = ref{'t', int32(len(tr.nodes))}
		tr.nodes, tr.ops, tr.args = append(tr.nodes, t), append(tr.ops, n), append(tr.args, args)
		return t.at
	}
	for _, t := range targets {
		tr.outputs = append(tr.outputs, visit(t))
	}
	if len(tr.nodes) > fusion.MaxNodes {
		return nil, fmt.Errorf("lazy: the trace has %d operations, more than the %d loom compiles at once: call Sync on intermediate results (a step of a loop) to cut it", len(tr.nodes), fusion.MaxNodes)
	}

	b := make([]byte, 0, 64*len(tr.nodes))
	for _, t := range tr.inputs {
		b = append(b, 'x')
		b = append(b, t.dtype.String()...)
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(len(t.shape)), 10)
		b = append(b, '/')
		b = strconv.AppendUint(b, uint64(t.dynamic), 16)
		b = append(b, ';')
		tr.slots = append(tr.slots, t.shape...)
	}
	tr.inputSlots = len(tr.slots)
	for _, t := range tr.consts {
		if t.kind == leafWeight {
			b = strconv.AppendUint(append(b, 'w'), t.id, 10)
			b = append(b, ';')
			continue
		}
		b = appendShape(append(b, 'k'), t.dtype.String(), t.shape)
		for i := range int(elements(t.shape)) {
			b = strconv.AppendUint(b, math.Float64bits(element(t.data, i)), 16)
			b = append(b, ',')
		}
		b = append(b, ';')
	}
	for k, n := range tr.ops {
		b = append(b, n.key...)
		b = append(b, '(')
		for _, a := range tr.args[k] {
			b = strconv.AppendInt(append(b, a.kind), int64(a.i), 10)
			b = append(b, ',')
		}
		b = append(b, ')')
		if n.shape != nil {
			b = strconv.AppendInt(append(b, 's'), int64(len(n.shape)), 10)
			tr.slots = append(tr.slots, n.shape...)
		}
		b = append(b, ';')
	}
	b = append(b, "->"...)
	for _, o := range tr.outputs {
		b = strconv.AppendInt(b, int64(o.i), 10)
		b = append(b, ',')
	}
	tr.structure = string(b)
	return tr, nil
}

// exactKey is the trace's structure and sizes.
func (tr *trace) exactKey() string {
	b := make([]byte, 0, len(tr.structure)+8*len(tr.slots))
	b = append(b, tr.structure...)
	return string(appendShape(b, "", tr.slots))
}
