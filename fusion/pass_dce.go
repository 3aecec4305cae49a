package fusion

import "slices"

// dce removes the nodes and constants no graph output depends on. Graph
// inputs stay: they are the kernels' interface.
func dce(g *Graph) (bool, error) {
	live := liveTensors(g)
	nodes := slices.DeleteFunc(slices.Clone(g.Nodes), func(n *Node) bool { return !live[n.Output] })
	consts := slices.DeleteFunc(slices.Clone(g.Constants), func(t *Tensor) bool { return !live[t] })
	changed := len(nodes) != len(g.Nodes) || len(consts) != len(g.Constants)
	g.Nodes, g.Constants = nodes, consts
	return changed, nil
}

// liveTensors returns the tensors some graph output depends on.
func liveTensors(g *Graph) map[*Tensor]bool {
	live := map[*Tensor]bool{}
	for _, t := range g.Outputs {
		live[t] = true
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		if n := g.Nodes[i]; live[n.Output] {
			for _, in := range n.Inputs {
				live[in] = true
			}
		}
	}
	return live
}
