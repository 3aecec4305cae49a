package fusion

import (
	"fmt"
	"strings"
)

// cse finds nodes that compute the same operator on the same inputs with
// the same attributes, and constants with the same dtype, shape and
// values; readers of a later duplicate read the first one. The duplicates
// stay for dce to remove.
func cse(g *Graph) (bool, error) {
	changed := false
	seen := map[string]*Tensor{}
	for _, c := range g.Constants {
		k := fmt.Sprintf("const %s %s %v", c.DType, c.Shape, c.Data)
		if first, ok := seen[k]; ok {
			g.replaceUses(c, first)
			changed = true
			continue
		}
		seen[k] = c
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
