package fusion

import (
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"unsafe"
)

// cse finds nodes that compute the same operator on the same inputs with
// the same attributes, and constants with the same dtype, shape and
// values; readers of a later duplicate read the first one. The duplicates
// stay for dce to remove.
func cse(g *Graph) (bool, error) {
	changed := false
	seen := map[string]*Tensor{}
	seed := maphash.MakeSeed()
	for _, c := range g.Constants {
		// A model's weights are millions of elements: the key hashes their
		// bits, and a hit compares them.
		k := fmt.Sprintf("const %s %s %d %x", c.DType, c.Shape, len(c.Data), maphash.Bytes(seed, float64Bytes(c.Data)))
		if first, ok := seen[k]; ok && sameBits(first.Data, c.Data) {
			g.replaceUses(c, first)
			changed = true
			continue
		}
		if _, ok := seen[k]; !ok {
			seen[k] = c
		}
	}
	for _, n := range g.Nodes {
		var ins []string
		for _, in := range n.Inputs {
			ins = append(ins, in.Name)
		}
		k := n.Op + "(" + strings.Join(ins, ",") + ")" + n.Attrs.String()
		if first, ok := seen[k]; ok {
			if !(g.IsOutput(n.Output) && n.Op == "identity") {
				g.replaceUses(n.Output, first)
				changed = true
			}
			continue
		}
		seen[k] = n.Output
	}
	return changed, nil
}

// float64Bytes views xs as bytes.
func float64Bytes(xs []float64) []byte {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), 8*len(xs))
}

// sameBits reports whether a and b hold the same bits (0 and -0 differ, a
// NaN matches itself).
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
