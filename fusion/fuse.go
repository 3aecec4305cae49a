package fusion

import (
	"fmt"
	"slices"
	"strings"
)

// group is a set of nodes that becomes one kernel.
type group struct {
	nodes []*Node // in graph order
	kind  Kind    // Elementwise (all trivial), Reduce or Anchor
	// domain is the input shape and reduced axes of the group's
	// reductions: reductions fuse only over the same domain.
	domain string
	// reduceIns are the input shapes of its reductions, each once.
	reduceIns []Shape
}

func (grp *group) tensors() []*Tensor {
	var out []*Tensor
	for _, n := range grp.nodes {
		out = append(out, n.Output)
	}
	return out
}

// set returns the group's nodes as a set.
func (grp *group) set() map[*Node]bool {
	s := make(map[*Node]bool, len(grp.nodes))
	for _, n := range grp.nodes {
		s[n] = true
	}
	return s
}

// inputs returns the tensors the group reads from outside, in order of
// first use.
func (grp *group) inputs() []*Tensor {
	in := grp.set()
	var out []*Tensor
	seen := map[*Tensor]bool{}
	for _, n := range grp.nodes {
		for _, t := range n.Inputs {
			if (t.Producer == nil || !in[t.Producer]) && !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// outputs returns the tensors of the group read outside it or by the
// graph's caller.
func (grp *group) outputs(g *Graph, consumers map[*Tensor][]*Node) []*Tensor {
	in := grp.set()
	var out []*Tensor
	for _, n := range grp.nodes {
		t := n.Output
		used := g.IsOutput(t)
		for _, c := range consumers[t] {
			if !in[c] {
				used = true
			}
		}
		if used {
			out = append(out, t)
		}
	}
	return out
}

// reduceDomain is the signature of a reduction's iteration space.
func reduceDomain(n *Node) string {
	in := n.Inputs[0].Shape
	axes := n.Attrs.Axes
	if axes == nil {
		for k := range in {
			axes = append(axes, k)
		}
	}
	norm := make([]int, len(axes))
	for i, a := range axes {
		if a < 0 {
			a += len(in)
		}
		norm[i] = a
	}
	slices.Sort(norm)
	return fmt.Sprintf("%s%v", in, norm)
}

// Fuse groups the nodes of g into kernels by CINN's rules, visiting the
// edges producer → consumer in graph order (at each consumer, an
// anchor's output first):
//
//   - a trivial (element-wise or injective) producer fuses into a trivial
//     or reduce consumer, which inlines it;
//   - a reduce group fuses with a trivial consumer only when the
//     consumer's output is no larger than the reduction's input, so the
//     fused kernel does not repeat the reduction's work;
//   - two reduce groups fuse when their reductions share one domain (the
//     same input shape and reduced axes: a reduce tree, as in layernorm),
//     and so do two that read a common tensor without depending on each
//     other (horizontal fusion: the sum and the maximum of its columns);
//   - an anchor (matmul, conv2d) takes element-wise consumers of its
//     output's shape as an epilogue, and trivial producers of what the
//     epilogue reads besides (a batch norm's per-channel scale) but
//     transposes that move the innermost dimension (movesInnermost: a
//     lane at a time there, where their copy is contiguous), never
//     producers of its own inputs, which it would compute again for
//     every reduction step, except views: transposes of the outer
//     dimensions and reshapes that split a dimension, which it reads
//     through at no cost (no kernel copies them; see viewsOnly);
//   - a transpose that keeps its innermost dimension, or a concat, does
//     not fuse into a reshape that merges dimensions for anchors alone
//     to read (a patch convolution's rows of patches, channels joined
//     and read as pixels): it is computed at its own shape and the
//     reshape is a view (mergingView);
//   - no fusion may create a cycle between groups.
//
// It returns the groups in an order that respects their dependences.
func fuse(g *Graph) []*group {
	groupOf := map[*Node]*group{}
	gone := map[*group]bool{} // merged into another
	pos := make(map[*Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		pos[n] = i
	}
	var groups []*group
	for _, n := range g.Nodes {
		grp := &group{nodes: []*Node{n}, kind: ops[n.Op].kind}
		if grp.kind == Injective {
			grp.kind = Elementwise
		}
		if grp.kind == Reduce {
			grp.domain = reduceDomain(n)
			grp.reduceIns = []Shape{n.Inputs[0].Shape}
		}
		groupOf[n] = grp
		groups = append(groups, grp)
	}
	for _, n := range g.Nodes {
		// An anchor's output first, so that the anchor takes n as its
		// epilogue before n's other producers join n: what the anchor
		// would refuse (movesInnermost) then stays apart whatever the
		// order of n's operands.
		inputs := slices.Clone(n.Inputs)
		slices.SortStableFunc(inputs, func(a, b *Tensor) int {
			return boolOrder(fromAnchor(b, groupOf), fromAnchor(a, groupOf))
		})
		for _, in := range inputs {
			p := in.Producer
			if p == nil {
				continue
			}
			pg, cg := groupOf[p], groupOf[n]
			if pg == cg || mergingView(g, p, n) || !canFuse(pg, cg, p, n) || createsCycle(pg, cg, groupOf) {
				continue
			}
			into, from := merge(pg, cg, pos)
			for _, m := range from.nodes {
				groupOf[m] = into
			}
			gone[from] = true
		}
	}
	groups = slices.DeleteFunc(groups, func(x *group) bool { return gone[x] })
	groups = fuseSiblings(groups, groupOf, pos)
	// Order the groups by their first node; dependences between groups
	// follow graph order, since no merge creates a cycle.
	return orderGroups(groups, groupOf, g)
}

// fromAnchor says whether t is computed in a group with an anchor.
func fromAnchor(t *Tensor, groupOf map[*Node]*group) bool {
	return t.Producer != nil && groupOf[t.Producer].kind == Anchor
}

// boolOrder compares false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// fuseSiblings merges reduce groups over one domain that read a common
// tensor and do not depend on each other (CINN's horizontal fusion: the
// sum and the maximum of one input's columns), so that the kernel reads
// the tensor once for all of them. It returns the groups left.
func fuseSiblings(groups []*group, groupOf map[*Node]*group, pos map[*Node]int) []*group {
	gone := map[*group]bool{}
	for i, a := range groups {
		if gone[a] || a.kind != Reduce {
			continue
		}
		for _, b := range groups[i+1:] {
			if gone[b] || b.kind != Reduce || b.domain != a.domain || !shareInput(a, b) ||
				dependsOn(a, b) || dependsOn(b, a) || createsCycle(a, b, groupOf) || createsCycle(b, a, groupOf) {
				continue
			}
			into, from := merge(a, b, pos)
			for _, m := range from.nodes {
				groupOf[m] = into
			}
			gone[from] = true
			a = into
		}
	}
	return slices.DeleteFunc(groups, func(x *group) bool { return gone[x] })
}

// shareInput reports whether a and b read some tensor from outside both.
func shareInput(a, b *group) bool {
	ins := a.inputs()
	return slices.ContainsFunc(b.inputs(), func(t *Tensor) bool { return slices.Contains(ins, t) })
}

// dependsOn reports whether a node of b reads what a node of a computes.
func dependsOn(b, a *group) bool {
	in := a.set()
	for _, n := range b.nodes {
		for _, t := range n.Inputs {
			if t.Producer != nil && in[t.Producer] {
				return true
			}
		}
	}
	return false
}

// canFuse applies the rules to the edge p → c between groups pg and cg.
func canFuse(pg, cg *group, p, c *Node) bool {
	switch {
	case pg.kind == Elementwise && cg.kind == Anchor:
		// Into the anchor itself it would be recomputed for every
		// reduction step; into its epilogue alone (a batch norm's
		// per-channel scale) it is computed where a kernel of its own
		// would. Data movement whose index map is affine computes
		// nothing: the anchor reads through it, a view instead of a copy.
		// A transpose that moves the innermost dimension would be
		// read in the epilogue a lane at a time (a gather); the
		// copy, contiguous, is worth its kernel.
		return !readByAnchor(pg, cg) && !movesInnermost(pg) || viewsOnly(pg)
	case pg.kind == Elementwise:
		return true
	case pg.kind == Reduce && cg.kind == Elementwise:
		return noLarger(c.Output.Shape, pg.reduceIns)
	case pg.kind == Reduce && cg.kind == Reduce:
		return pg.domain == cg.domain
	case pg.kind == Anchor && cg.kind == Elementwise:
		k := ops[c.Op].kind
		return k == Elementwise && c.Output.Shape.Equal(p.Output.Shape) && elementwiseFrom(cg, p.Output) && !readByAnchor(cg, pg)
	}
	return false
}

// mergingView reports whether c reshapes transpose p's output to fewer
// dimensions (a patch convolution's patches [N, Ho, Wo, C, KH, KW] as
// rows [N*Ho*Wo, C*KH*KW], attention's heads [S, H, D] merged as [S,
// H*D]): apart, the transpose is computed at its own shape, its indices
// affine on both sides (rows of KW elements copied whole), and the
// reshape of its intermediate result is a view (no kernel); fused, it
// would be computed at the merged shape, reading through a division and
// a remainder per element (ConvNeXt-T's 4x4 stem: a gather of 0.08-0.10
// ms for 150 K elements). A reshape the graph returns would be a copy
// of its own, and one read by an element-wise node would fuse with it
// and read through the division anyway, so those fuse; so does a
// transpose that moves the innermost dimension (no rows to copy whole).
// A concat is such a p too: apart, it copies each input into its slice
// whole (concatParts); fused, every element selected among the inputs
// at the merged shape (SqueezeNet's Fire modules in NHWC, their
// channels joined and read as pixels by the next 1x1 convolution: 1.0
// ms a module, 0.14 apart).
func mergingView(g *Graph, p, c *Node) bool {
	if p.Op != "transpose" && p.Op != "concat" || c.Op != "reshape" || len(c.Inputs) != 1 || len(c.Output.Shape) >= len(c.Inputs[0].Shape) || g.IsOutput(c.Output) {
		return false
	}
	if pre, suf := reshapeEnds(c.Inputs[0].Shape, c.Output.Shape); len(c.Inputs[0].Shape)-pre-suf <= 1 {
		return false // a view an anchor reads through (viewsOnly)
	}
	if q := perm(p); p.Op == "transpose" && (len(q) == 0 || q[len(q)-1] != len(q)-1) {
		return false
	}
	return !slices.ContainsFunc(g.Nodes, func(n *Node) bool {
		return slices.Contains(n.Inputs, c.Output) && ops[n.Op].kind != Anchor
	})
}

// viewsOnly reports whether every node of grp moves data by an affine
// index map that keeps the innermost dimension innermost: a transpose of
// the outer dimensions, or a reshape that splits one dimension of its
// input. An anchor reads through such views as fast as through a copy
// (its vectorized, innermost loop still reads consecutive elements);
// merging dimensions would read through a division and a remainder, and
// moving the innermost dimension would make the vector loads strided
// (the copy, contiguous, is then worth its kernel). The pack pass's
// transpose into panels (attribute panel) is never a view: the panels
// are what the product's tiles read.
func viewsOnly(grp *group) bool {
	for _, n := range grp.nodes {
		switch n.Op {
		case "transpose":
			if p := perm(n); len(p) > 0 && p[len(p)-1] != len(p)-1 || n.Attrs.Panel > 0 {
				return false
			}
		case "reshape":
			in, out := n.Inputs[0].Shape, n.Output.Shape
			if pre, suf := reshapeEnds(in, out); len(in)-pre-suf > 1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// movesInnermost reports whether a node of grp is a transpose that
// moves the innermost dimension (movesInnermostAxis).
func movesInnermost(grp *group) bool {
	return slices.ContainsFunc(grp.nodes, movesInnermostAxis)
}

// movesInnermostAxis reports whether n is a transpose whose result's
// innermost axis of more than one element is not its operand's: its
// elements change order in memory, beyond axes of one element moving
// (a bias [1, C, 1, 1] to [1, 1, 1, C] keeps its order).
func movesInnermostAxis(n *Node) bool {
	p := perm(n)
	if n.Op != "transpose" || len(p) == 0 || len(n.Inputs) != 1 {
		return false
	}
	in := n.Inputs[0].Shape
	last := func(axes []int) int {
		for i := len(axes) - 1; i >= 0; i-- {
			if !isOne(in[axes[i]]) {
				return axes[i]
			}
		}
		return -1
	}
	identity := make([]int, len(in))
	for i := range identity {
		identity[i] = i
	}
	return len(p) == len(in) && last(p) != last(identity)
}

// readByAnchor reports whether an anchor of grp reads a tensor that a node
// of producers computes.
func readByAnchor(producers, grp *group) bool {
	for _, n := range grp.nodes {
		if ops[n.Op].kind != Anchor {
			continue
		}
		for _, in := range n.Inputs {
			if in.Producer != nil && slices.Contains(producers.nodes, in.Producer) {
				return true
			}
		}
	}
	return false
}

// elementwiseFrom reports whether the nodes of grp that use the anchor's
// output, directly or through each other, are all element-wise: an
// anchor's epilogue computes its output's elements where the tile leaves
// them. Nodes beside that path (a reshape of a parameter the epilogue
// reads) may move data.
func elementwiseFrom(grp *group, anchorOut *Tensor) bool {
	derived := map[*Tensor]bool{anchorOut: true}
	for _, n := range grp.nodes { // graph order: producers first
		if !slices.ContainsFunc(n.Inputs, func(t *Tensor) bool { return derived[t] }) {
			continue
		}
		if ops[n.Op].kind != Elementwise {
			return false
		}
		derived[n.Output] = true
	}
	return true
}

// noLarger reports whether a tensor of shape s has provably no more
// elements than every shape of ins: the difference of the element counts
// has no negative coefficient (symbols are never negative).
func noLarger(s Shape, ins []Shape) bool {
	n, err := s.Elems()
	if err != nil {
		return false
	}
	for _, in := range ins {
		if !provablyLE(n, in) {
			return false
		}
	}
	return true
}

func provablyLE(n Dim, in Shape) bool {
	m, err := in.Elems()
	if err != nil {
		return false
	}
	d, err := m.Sub(n)
	if err != nil {
		return false
	}
	for _, t := range d.terms {
		if t.coef < 0 {
			return false
		}
	}
	return true
}

// createsCycle reports whether merging pg and cg would make a cycle: some
// other group depends on pg and is depended on by cg.
func createsCycle(pg, cg *group, groupOf map[*Node]*group) bool {
	// Walk backwards from cg's inputs that come from groups other than
	// pg; reaching pg through another group means a path pg → x → cg.
	seen := map[*group]bool{}
	var stack []*group
	for _, n := range cg.nodes {
		for _, in := range n.Inputs {
			if in.Producer != nil {
				if x := groupOf[in.Producer]; x != pg && x != cg && !seen[x] {
					seen[x] = true
					stack = append(stack, x)
				}
			}
		}
	}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, n := range x.nodes {
			for _, in := range n.Inputs {
				if in.Producer == nil {
					continue
				}
				y := groupOf[in.Producer]
				if y == pg {
					return true
				}
				if y != x && y != cg && !seen[y] {
					seen[y] = true
					stack = append(stack, y)
				}
			}
		}
	}
	return false
}

// merge makes one group of a and b: the larger takes the nodes of the
// smaller, kept in graph order (pos), and is returned first, with the
// one it took them from. It costs the size of the two groups, or of the
// smaller one where its nodes all come after the larger's (a chain), so
// that fusing a graph stays near-linear in its size.
func merge(a, b *group, pos map[*Node]int) (into, from *group) {
	into, from = a, b
	if len(b.nodes) > len(a.nodes) {
		into, from = b, a
	}
	into.kind = max(a.kind, b.kind)
	if into.domain == "" {
		into.domain = from.domain
	}
	for _, s := range from.reduceIns {
		if !slices.ContainsFunc(into.reduceIns, s.Equal) {
			into.reduceIns = append(into.reduceIns, s)
		}
	}
	if pos[into.nodes[len(into.nodes)-1]] < pos[from.nodes[0]] {
		into.nodes = append(into.nodes, from.nodes...)
		return into, from
	}
	nodes := make([]*Node, 0, len(a.nodes)+len(b.nodes))
	x, y := into.nodes, from.nodes
	for len(x) > 0 && len(y) > 0 {
		if pos[x[0]] < pos[y[0]] {
			nodes, x = append(nodes, x[0]), x[1:]
		} else {
			nodes, y = append(nodes, y[0]), y[1:]
		}
	}
	into.nodes = append(append(nodes, x...), y...)
	return into, from
}

// orderGroups sorts groups topologically, ties broken by first node.
func orderGroups(groups []*group, groupOf map[*Node]*group, g *Graph) []*group {
	pos := map[*Node]int{}
	for i, n := range g.Nodes {
		pos[n] = i
	}
	slices.SortFunc(groups, func(a, b *group) int { return pos[a.nodes[0]] - pos[b.nodes[0]] })
	done := map[*group]bool{}
	var out []*group
	var visit func(x *group)
	visit = func(x *group) {
		if done[x] {
			return
		}
		done[x] = true
		for _, n := range x.nodes {
			for _, in := range n.Inputs {
				if in.Producer != nil && groupOf[in.Producer] != x {
					visit(groupOf[in.Producer])
				}
			}
		}
		out = append(out, x)
	}
	for _, x := range groups {
		visit(x)
	}
	return out
}

// describe prints a group for dumps and goldens.
func (grp *group) describe() string {
	var names []string
	for _, n := range grp.nodes {
		names = append(names, n.Output.Name+"="+n.Op)
	}
	return fmt.Sprintf("%s: %s", grp.kind, strings.Join(names, " "))
}
