package lazy

import (
	"fmt"
	"strconv"
	"strings"

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

// trace is the captured part of a device's recorded operations.
type trace struct {
	inputs  []*Tensor // computed tensors bound per call, in order of first use
	consts  []*Tensor // weights and small constants
	nodes   []*Tensor // pending tensors, operands first
	outputs []*Tensor // the tensors asked for, each once
	ref     map[*Tensor]string

	structure string
	slots     []int64
	// inputSlots is how many of the slots are the inputs' dimensions.
	inputSlots int
}

// capture collects the trace that computes targets (pending, distinct).
// The device's lock is held.
func capture(targets []*Tensor) (*trace, error) {
	tr := &trace{outputs: targets, ref: map[*Tensor]string{}}
	var visit func(t *Tensor)
	visit = func(t *Tensor) {
		if _, ok := tr.ref[t]; ok {
			return
		}
		if t.node == nil {
			switch t.kind {
			case leafInput:
				tr.ref[t] = "x" + strconv.Itoa(len(tr.inputs))
				tr.inputs = append(tr.inputs, t)
			default:
				tr.ref[t] = "c" + strconv.Itoa(len(tr.consts))
				tr.consts = append(tr.consts, t)
			}
			return
		}
		for _, in := range t.node.inputs {
			visit(in)
		}
		tr.ref[t] = "t" + strconv.Itoa(len(tr.nodes))
		tr.nodes = append(tr.nodes, t)
	}
	for _, t := range targets {
		visit(t)
	}
	if len(tr.nodes) > fusion.MaxNodes {
		return nil, fmt.Errorf("lazy: the trace has %d operations, more than the %d loom compiles at once: call Sync on intermediate results (a step of a loop) to cut it", len(tr.nodes), fusion.MaxNodes)
	}

	var b strings.Builder
	for _, t := range tr.inputs {
		fmt.Fprintf(&b, "x%s/%d/%x;", t.dtype, len(t.shape), t.dynamic)
		tr.slots = append(tr.slots, t.shape...)
	}
	tr.inputSlots = len(tr.slots)
	for _, t := range tr.consts {
		if t.kind == leafWeight {
			fmt.Fprintf(&b, "w%d;", t.id)
			continue
		}
		fmt.Fprintf(&b, "k%s", t.dtype)
		writeInts(&b, t.shape)
		for i := range int(elements(t.shape)) {
			b.WriteString(strconv.FormatFloat(element(t.data, i), 'g', -1, 64))
			b.WriteByte(',')
		}
		b.WriteByte(';')
	}
	for _, t := range tr.nodes {
		b.WriteString(t.node.key)
		b.WriteByte('(')
		for i, in := range t.node.inputs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(tr.ref[in])
		}
		b.WriteByte(')')
		if t.node.shape != nil {
			fmt.Fprintf(&b, "s%d", len(t.node.shape))
			tr.slots = append(tr.slots, t.node.shape...)
		}
		b.WriteByte(';')
	}
	b.WriteString("->")
	for _, t := range tr.outputs {
		b.WriteString(tr.ref[t])
		b.WriteByte(',')
	}
	tr.structure = b.String()
	return tr, nil
}

// exactKey is the trace's structure and sizes.
func (tr *trace) exactKey() string {
	var b strings.Builder
	b.Grow(len(tr.structure) + 8*len(tr.slots))
	b.WriteString(tr.structure)
	writeInts(&b, tr.slots)
	return b.String()
}
