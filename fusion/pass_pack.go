package fusion

// The pack pass stores the constant weight matrix of a matrix product in
// panels of columns, once, at compile time: B [K, N] becomes [N/p, K, p]
// (matmul's attribute panel = p), so that a register tile of columns
// reads K x p contiguous elements instead of K rows N elements apart. With
// N in the thousands those rows are pages apart and each step of the
// reduction misses the TLB; packed, ViT-B's MLP at 197 tokens ([197,
// 768] x [768, 3072], GELU, x [3072, 768], on default schedules, one
// thread) ran in 33 ms instead of 76. This is what MLAS and oneDNN do
// with a prepacked weight; here the packing is an ordinary constant of
// the graph, so a module or a C library carries it packed.

// packPanel is the width of a panel: two AVX2 vectors of float32, or
// one AVX-512 vector; register tiles of columns are multiples of it.
const packPanel = 16

// packLeast is the least size (K x N elements) of a weight matrix the
// pass packs: below it the matrix stays in cache across the product and
// packing buys nothing.
const packLeast = 1 << 16

// packWeights packs the constant second operand of every 2-d matrix
// product at least packLeast elements large whose columns divide into
// panels, unless o.PlainWeights.
func packWeights(g *Graph, o Options) (bool, error) {
	if o.PlainWeights {
		return false, nil
	}
	changed := false
	packed := map[*Tensor]*Tensor{} // a weight used twice is packed once
	for _, n := range g.Nodes {
		if n.Op != "matmul" || n.Attrs.Panel != 0 || len(n.Inputs) != 2 {
			continue
		}
		b := n.Inputs[1]
		if p, ok := packed[b]; ok {
			n.Inputs[1], n.Attrs.Panel = p, packPanel
			continue
		}
		if !b.IsConst() || len(b.Shape) != 2 {
			continue
		}
		k, okK := b.Shape[0].IsConst()
		cols, okN := b.Shape[1].IsConst()
		if !okK || !okN || cols%packPanel != 0 || k*cols < packLeast || int64(len(b.Data)) != k*cols {
			continue
		}
		// [K, N] seen as [K, N/p, p], transposed to [N/p, K, p].
		data, ok := transposeData(b.Data, Shape{Const(k), Const(cols / packPanel), Const(packPanel)}, []int{1, 0, 2})
		if !ok {
			continue
		}
		p := &Tensor{Name: g.freshName(b.Name + "_panels"), DType: b.DType, Shape: Shape{Const(cols / packPanel), Const(k), Const(packPanel)}, Data: data}
		g.Constants = append(g.Constants, p)
		packed[b] = p
		n.Inputs[1], n.Attrs.Panel = p, packPanel
		changed = true
	}
	return changed, nil
}
