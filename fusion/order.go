package fusion

import (
	"slices"
)

// The execution order of the kernels (MindSpore's exec-order pass). Any
// order that respects the dependences between groups computes the same
// results, but not with the same memory: an intermediate lives from the
// kernel that writes it to the last that reads it, and the order decides
// which live at once. The live bytes after a set of groups ran depend on
// the set alone, so for up to maxExactGroups groups orderForMemory finds
// an order of least peak exactly, by dynamic programming over the sets;
// beyond, it list-schedules greedily (of the groups whose inputs are
// ready, the one after which the live intermediates take the fewest
// bytes). It keeps the graph's order unless its own peak is lower.
//
// Sizes are symbolic here: bytes are compared at nominalSize for every
// symbol (a sequence of a few hundred, a batch of a few hundred images'
// rows): an order is fixed at compile time, for all sizes.

// nominalSize is the value of every symbol when orders are compared.
const nominalSize = 256

// orderForMemory returns groups (in an order that respects their
// dependences) reordered to lower the peak of the live intermediates.
func orderForMemory(g *Graph, groups []*group) []*group {
	if len(groups) < 3 {
		return groups
	}
	sizes := map[string]int64{}
	for _, s := range g.Symbols() {
		sizes[s] = nominalSize
	}
	index := map[*Node]int{}
	for i, grp := range groups {
		for _, n := range grp.nodes {
			index[n] = i
		}
	}
	// What each group writes and reads among the intermediates, and the
	// groups each waits for.
	writes := make([][]*Tensor, len(groups))
	reads := make([][]*Tensor, len(groups))
	deps := make([][]int, len(groups))
	readers := map[*Tensor]int{}
	for i, grp := range groups {
		for _, t := range grp.inputs() {
			if t.Producer == nil {
				continue // an input or a constant: lives throughout
			}
			p := index[t.Producer]
			reads[i] = append(reads[i], t)
			readers[t]++
			if !slices.Contains(deps[i], p) {
				deps[i] = append(deps[i], p)
			}
		}
		for _, n := range grp.nodes {
			t := n.Output
			if !g.IsOutput(t) && readersOutside(t, grp, groups) {
				writes[i] = append(writes[i], t)
			}
		}
	}
	bytes := func(t *Tensor) int64 {
		n, err := t.Shape.Elems()
		if err != nil {
			return 0
		}
		v, err := n.Eval(sizes)
		if err != nil || v < 0 {
			return 0
		}
		return v * int64(max(t.DType.Bytes(), 1))
	}
	// peakOf returns the peak of the live intermediates for an order.
	peakOf := func(order []int) int64 {
		left := map[*Tensor]int{}
		for t, n := range readers {
			left[t] = n
		}
		var live, peak int64
		for _, i := range order {
			for _, t := range writes[i] {
				live += bytes(t)
			}
			peak = max(peak, live)
			for _, t := range reads[i] {
				if left[t]--; left[t] == 0 {
					live -= bytes(t)
				}
			}
		}
		return peak
	}
	graphOrder := make([]int, len(groups))
	for i := range graphOrder {
		graphOrder[i] = i
	}
	order := exactOrder(len(groups), deps, writes, reads, bytes)
	if order == nil {
		order = greedyOrder(len(groups), deps, writes, reads, readers, bytes)
	}
	if peakOf(order) >= peakOf(graphOrder) {
		return groups
	}
	out := make([]*group, len(groups))
	for k, i := range order {
		out[k] = groups[i]
	}
	return out
}

// readersOutside reports whether a group other than grp reads t.
func readersOutside(t *Tensor, grp *group, groups []*group) bool {
	for _, o := range groups {
		if o == grp {
			continue
		}
		for _, n := range o.nodes {
			if slices.Contains(n.Inputs, t) {
				return true
			}
		}
	}
	return false
}

// maxExactGroups bounds the exact search: 2^n sets of groups.
const maxExactGroups = 18

// exactOrder returns an order of least peak, nil for too many groups.
// Running group i after the set S holds live(S) + writes(i) bytes.
func exactOrder(n int, deps [][]int, writes, reads [][]*Tensor, bytes func(*Tensor) int64) []int {
	if n > maxExactGroups {
		return nil
	}
	producer := map[*Tensor]int{}
	var written []int64
	for i, ws := range writes {
		var w int64
		for _, t := range ws {
			producer[t] = i
			w += bytes(t)
		}
		written = append(written, w)
	}
	// readersOf[t] is the set of groups reading t.
	readersOf := map[*Tensor]uint32{}
	for i, rs := range reads {
		for _, t := range rs {
			readersOf[t] |= 1 << i
		}
	}
	live := func(set uint32) int64 {
		var b int64
		for t, p := range producer {
			if set&(1<<p) != 0 && readersOf[t]&^set != 0 {
				b += bytes(t)
			}
		}
		return b
	}
	full := uint32(1)<<n - 1
	best := make([]int64, full+1)
	last := make([]int8, full+1)
	for i := range best {
		best[i] = -1
	}
	best[0] = 0
	var need []uint32
	for i := range n {
		var m uint32
		for _, p := range deps[i] {
			m |= 1 << p
		}
		need = append(need, m)
	}
	for set := uint32(0); set < full; set++ {
		if best[set] < 0 {
			continue
		}
		l := live(set)
		for i := range n {
			if set&(1<<i) != 0 || need[i]&^set != 0 {
				continue
			}
			next := set | 1<<i
			cost := max(best[set], l+written[i])
			if best[next] < 0 || cost < best[next] {
				best[next], last[next] = cost, int8(i)
			}
		}
	}
	order := make([]int, n)
	for set, k := full, n-1; k >= 0; k-- {
		i := int(last[set])
		order[k] = i
		set &^= 1 << i
	}
	return order
}

// greedyOrder list-schedules the groups: of the ready ones, the one after
// which the live intermediates take the fewest bytes, first listed on a
// tie.
func greedyOrder(n int, deps [][]int, writes, reads [][]*Tensor, readers map[*Tensor]int, bytes func(*Tensor) int64) []int {
	done := make([]bool, n)
	left := map[*Tensor]int{}
	for t, k := range readers {
		left[t] = k
	}
	var order []int
	for len(order) < n {
		best, bestAfter := -1, int64(0)
		for i := range n {
			if done[i] || slices.ContainsFunc(deps[i], func(p int) bool { return !done[p] }) {
				continue
			}
			var after int64
			for _, t := range writes[i] {
				after += bytes(t)
			}
			for _, t := range reads[i] {
				if left[t] == 1 { // its last reader
					after -= bytes(t)
				}
			}
			if best < 0 || after < bestAfter {
				best, bestAfter = i, after
			}
		}
		done[best] = true
		order = append(order, best)
		for _, t := range reads[best] {
			left[t]--
		}
	}
	return order
}
