package lazy

import (
	"strconv"

	"github.com/loom-go/loom/fusion"
)

// graphOf builds the fusion graph of a trace: its sizes as they are
// (p nil), or as pattern p makes them (symbols where they vary); it may
// take guesses of p back (see below), in place.
func graphOf(tr *trace, p pattern) (*fusion.Graph, error) {
	b := fusion.NewBuilder("lazy")
	made := map[byte][]*fusion.Tensor{}
	slot := 0
	for i, t := range tr.inputs {
		dims := make([]fusion.Dim, len(t.shape))
		for k := range t.shape {
			dims[k] = p.dim(slot, tr.slots[slot])
			slot++
		}
		x, err := b.Input(ref{'x', int32(i)}.name(), t.dtype, dims...)
		if err != nil {
			return nil, err
		}
		made['x'] = append(made['x'], x)
	}
	for i, t := range tr.consts {
		n := int(elements(t.shape))
		data := make([]float64, n)
		for i := range n {
			data[i] = element(t.data, i)
		}
		c, err := b.Constant(ref{'c', int32(i)}.name(), t.dtype, t.shape, data)
		if err != nil {
			return nil, err
		}
		made['c'] = append(made['c'], c)
	}
	for k, n := range tr.ops {
		attrs := n.attrs
		first := slot
		shape := func() []fusion.JSONDim {
			out := make([]fusion.JSONDim, len(n.shape))
			for k, v := range n.shape {
				out[k] = p.jsonDim(first+k, v)
			}
			return out
		}
		if n.shape != nil {
			attrs.Shape = shape()
			slot += len(n.shape)
		}
		ins := make([]*fusion.Tensor, len(tr.args[k]))
		for i, a := range tr.args[k] {
			ins[i] = made[a.kind][a.i]
		}
		name := ref{'t', int32(k)}.name()
		y, err := b.Node(name, n.op, attrs, ins...)
		// A shape attribute the pattern guessed wrong (768 taken for
		// 6·S at S = 128) makes a node fusion refuses: its guesses are
		// taken back, the multiples and products first, then all, and
		// the pattern keeps what the graph took.
		for _, back := range []func(slotRule) bool{guessedBeyondOne, isSymbolic} {
			if err == nil || p == nil || n.shape == nil {
				break
			}
			changed := false
			for k, v := range n.shape {
				if r := p[first+k]; r.kind != ruleConst && back(r) {
					p[first+k], changed = slotRule{kind: ruleConst, value: v}, true
				}
			}
			if changed {
				attrs.Shape = shape()
				y, err = b.Node(name, n.op, attrs, ins...)
			}
		}
		if err != nil {
			return nil, err
		}
		made['t'] = append(made['t'], y)
	}
	outs := make([]*fusion.Tensor, len(tr.outputs))
	for i, o := range tr.outputs {
		outs[i] = made['t'][o.i]
	}
	return b.Graph(outs...)
}

// symbol names the j-th size symbol.
func symbol(j int) string { return "S" + strconv.Itoa(j) }

// guessedBeyondOne is a slot rule that is a symbol's multiple or a
// product of symbols.
func guessedBeyondOne(r slotRule) bool {
	return r.kind == ruleProduct || r.kind == ruleSym && r.value != 1
}

// isSymbolic is a slot rule that is not a constant.
func isSymbolic(r slotRule) bool { return r.kind != ruleConst }
