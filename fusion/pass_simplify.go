package fusion

// simplify applies the rules of rules.go to every node until none fires.
// A replaced node's readers read the replacement; the node itself is left
// for dce (or, for a graph output, becomes an identity).
func simplify(g *Graph) (bool, error) {
	changed := false
	for round := 0; round < 16; round++ {
		fired := false
		for _, n := range g.Nodes {
			for _, r := range rules {
				if r.op != n.Op {
					continue
				}
				rep, rewrote := r.apply(g, n)
				if rep != nil && rep != n.Output {
					if g.IsOutput(n.Output) && n.Op == "identity" && n.Inputs[0] == rep {
						continue
					}
					g.replaceUses(n.Output, rep)
					fired = true
				}
				if rewrote {
					fired = true
				}
			}
		}
		if !fired {
			break
		}
		changed = true
		if err := infer(g); err != nil {
			return changed, err
		}
	}
	return changed, nil
}
