package lazy

import (
	"fmt"
	"strconv"

	"github.com/loom-go/loom/fusion"
)

// graphOf builds the fusion graph of a trace: its sizes as they are
// (p nil), or as pattern p makes them (symbols where they vary).
func graphOf(tr *trace, p pattern) (*fusion.Graph, error) {
	b := fusion.NewBuilder("lazy")
	made := map[*Tensor]*fusion.Tensor{}
	slot := 0
	for _, t := range tr.inputs {
		dims := make([]fusion.Dim, len(t.shape))
		for k := range t.shape {
			dims[k] = p.dim(slot, tr.slots[slot])
			slot++
		}
		x, err := b.Input(tr.ref[t], t.dtype, dims...)
		if err != nil {
			return nil, err
		}
		made[t] = x
	}
	for _, t := range tr.consts {
		n := int(elements(t.shape))
		data := make([]float64, n)
		for i := range n {
			data[i] = element(t.data, i)
		}
		if n == 0 {
			// fusion keeps no empty constants: an empty weight is a
			// broadcast of nothing, which no operator reads anyway
			return nil, fmt.Errorf("lazy: a weight of shape %v has no elements: give it with From", t.shape)
		}
		c, err := b.Constant(tr.ref[t], t.dtype, t.shape, data)
		if err != nil {
			return nil, err
		}
		made[t] = c
	}
	for _, t := range tr.nodes {
		n := t.node
		attrs := n.attrs
		if n.shape != nil {
			attrs.Shape = make([]fusion.JSONDim, len(n.shape))
			for k, v := range n.shape {
				attrs.Shape[k] = p.jsonDim(slot, v)
				slot++
			}
		}
		ins := make([]*fusion.Tensor, len(n.inputs))
		for i, in := range n.inputs {
			ins[i] = made[in]
		}
		y, err := b.Node(tr.ref[t], n.op, attrs, ins...)
		if err != nil {
			return nil, err
		}
		made[t] = y
	}
	outs := make([]*fusion.Tensor, len(tr.outputs))
	for i, t := range tr.outputs {
		outs[i] = made[t]
	}
	return b.Graph(outs...)
}

// symbol names the j-th size symbol.
func symbol(j int) string { return "S" + strconv.Itoa(j) }
