package validate

import (
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// movedStores asks the order question for stores that changed blocks. A
// block the step removed is outside the order question, but its store may
// live on in another block: reverse_compute_inline moves a consumer's
// store into its producer, which then writes the consumer's buffer. The
// dependences the removed block had on that buffer pass to its host: an
// instance of the host that writes a cell the removed block wrote stands
// for it, and must keep the removed block's order with every kept block
// that wrote or read the cell around it (the fill of a cache_write, say,
// which must still run before the values moved into the host).
//
// A host is a kept block that writes a buffer, exactly, that it did not
// write before the step while a removed block did.
func (v *validator) movedStores() error {
	for _, x := range v.before.Blocks {
		if v.after.Block(x.Block.Name) != nil {
			continue
		}
		for _, wx := range x.Writes {
			for _, h := range v.hosts(wx.Buffer.Name) {
				if err := v.movedStore(x, wx, h); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// hosts returns the kept blocks of the new function that write the buffer
// named name where their old versions did not.
func (v *validator) hosts(name string) []*poly.Instances {
	var out []*poly.Instances
	for _, h := range writers(v.after, name) {
		if v.kept[h.Block.Name] && !writes(v.before.Block(h.Block.Name), name) {
			out = append(out, h)
		}
	}
	return out
}

// writes reports whether in writes the buffer named name.
func writes(in *poly.Instances, name string) bool {
	for _, w := range in.Writes {
		if w.Buffer.Name == name {
			return true
		}
	}
	return false
}

// movedStore checks the dependences removed block x had through its write
// wx against host h, which writes the same buffer now.
func (v *validator) movedStore(x *poly.Instances, wx poly.Access, h *poly.Instances) error {
	var wh *poly.Access
	for i := range h.Writes {
		if h.Writes[i].Buffer.Name == wx.Buffer.Name {
			wh = &h.Writes[i]
		}
	}
	if !wx.Exact || !wh.Exact || !h.ExactDomain {
		v.stats.note("order: moved store inexact")
		return nil
	}
	// The instances of x and of h that write the same cell.
	xh := poly.ApplyRange(x.IterationAccess(wx), h.IterationAccess(*wh).Reverse())
	for _, d := range v.before.Deps() {
		if d.Buffer.Name != wx.Buffer.Name || d.Source == d.Sink || (d.Source != x && d.Sink != x) {
			continue
		}
		if !x.ExactDomain && d.Common > 0 {
			// An approximate domain loses how x's loops bind its
			// instances, and so the order of pairs inside the loops
			// around both; with no loop around both, the blocks' places
			// order every pair.
			v.stats.note("order: moved store inexact")
			continue
		}
		other := d.Sink
		if other == x {
			other = d.Source
		}
		name := other.Block.Name
		z := v.after.Block(name)
		if !v.kept[name] || v.unmatched[name] || z == h {
			continue
		}
		v.lazily(z)
		if v.keyG[name] != nil {
			v.stats.note("order: moved store beside a repeated impure block")
			continue
		}
		// The dependence between h and z, by iteration vectors, with h in
		// x's place.
		var s, t *poly.Instances
		var iters poly.Map
		if d.Source == x {
			s, t, iters = h, z, poly.ApplyRange(xh.Reverse(), d.IterationPairs())
		} else {
			s, t, iters = z, h, poly.ApplyRange(d.IterationPairs(), xh)
		}
		pairs := poly.ExecutionsOf(s, t, iters, nil, nil)
		var fed *poly.Map
		if d.Kind == poly.WAR {
			if m, ok := v.fedBy(x, d.Source, wx.Buffer.Name, xh); ok {
				m = poly.ExecutionsOf(z, h, m, nil, nil)
				fed = &m
			}
		}
		for _, wrong := range v.after.NotAfter(s, t, concurrentLoop) {
			bad := poly.IntersectMap(pairs, wrong)
			in, out, found, decided := bad.Witness()
			if !found {
				if !decided {
					v.stats.note("order: undecided")
				}
				continue
			}
			if fed != nil {
				// An overwrite that collapsed onto the very write the
				// read takes its value from is no order to keep.
				collapsed, err := poly.SubsetWithin(bad.Wrap(), fed.Wrap(), questionWork)
				if err != nil {
					v.stats.note("order: undecided")
					continue
				}
				if collapsed {
					v.stats.note("order: moved store recomputed")
					continue
				}
			}
			return &Error{Question: "order", Block: t.Block.Name, Reason: describeMoved(d, x, s, t, in, out)}
		}
	}
	return nil
}

// fedBy returns the pairs (r, k) of iteration vectors of reader (an old
// block) and of the host where x's store lives now such that r read a
// cell of the buffer named name that an instance of x wrote before it,
// and that instance's store is host instance k's (xh relates the two).
//
// A removed block that a compute_at made recompute its values writes a
// cell once per recomputation, and every reader in between has a write
// after it: an order the old program kept. The host writes the cell once
// for all those instances. Where the overwrite after read r falls on a
// host instance that r's value comes from, that order cannot be kept (the
// write must come before r) and need not be: the host does not write the
// cell again. That the write comes before r is the read's own dependence,
// which the same question asks. It reports false when reader read nothing
// x wrote.
func (v *validator) fedBy(x, reader *poly.Instances, name string, xh poly.Map) (poly.Map, bool) {
	var out *poly.Map
	for _, d := range v.before.Deps() {
		if d.Kind != poly.RAW || d.Source != x || d.Sink != reader || d.Buffer.Name != name {
			continue
		}
		m := poly.ApplyRange(d.IterationPairs().Reverse(), xh)
		if out == nil {
			out = &m
		} else {
			u := poly.UnionMap(*out, m)
			out = &u
		}
	}
	if out == nil {
		return poly.Map{}, false
	}
	return *out, true
}

// concurrentLoop reports whether loop l runs its iterations at once.
func concurrentLoop(l *ast.For) bool {
	return l.Kind == ast.Parallel || l.Kind == ast.Vectorized || l.Kind.IsGPUBlock() || l.Kind.IsGPUThread()
}

// describeMoved says which dependence of removed block x runs out of
// order now that host s or t holds its store, with a witness pair of the
// new function's executions.
func describeMoved(d *poly.Dependence, x, s, t *poly.Instances, in, out []poly.Int) string {
	host := s
	if d.Sink == x {
		host = t
	}
	what := map[poly.DepKind]string{poly.RAW: "reads what", poly.WAR: "overwrites what", poly.WAW: "overwrites what"}[d.Kind]
	tail := map[poly.DepKind]string{poly.RAW: "writes", poly.WAR: "reads", poly.WAW: "writes"}[d.Kind]
	ws := poly.IterString(s.Block, in[len(in)-len(s.Block.Iters):])
	wt := poly.IterString(t.Block, out[len(out)-len(t.Block.Iters):])
	return fmt.Sprintf("block %s, removed by the step, wrote %s; block %s writes it now, but block %s%s %s block %s%s %s in %s, and no longer runs after it (%s)",
		x.Block.Name, d.Buffer.Name, host.Block.Name, t.Block.Name, wt, what, s.Block.Name, ws, tail, d.Buffer.Name, d.Kind)
}
