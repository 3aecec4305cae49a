package validate

import (
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// created asks the sixth question, of the blocks the step creates (an
// init, a cache's fill or copy back, partial results): they have no old
// block to be compared with, so the first two questions leave them out,
// but each must be ordered against every other access of the buffers it
// writes.
//
//   - No race: a created block and another that accesses the same cell,
//     one of them writing, never run in the same iteration of a loop whose
//     iterations run at once (parallel, vectorized, GPU-bound).
//   - No lost init: where the step moved a reduction's init out of its
//     block (decompose_reduction), what the created block writes to a
//     cell is read before another block writes that cell again. An init
//     put before a loop under which a cache's fill then overwrites the
//     cells it wrote (the long run's reduce_elementwise at c0ba562) fails
//     this: the update reads the fill's values, not the init's. A block
//     that reads a cell and then writes it (an update) reads it first.
//     (A cache's fill may lose values: it fills the whole box, and the
//     cached block overwrites the cells it writes.)
//
// Whether a read falls between the two writes is asked of the pairs of
// instances, through the buffer's cells, so a reader that touches other
// cells may let a lost write through; it never refuses a kept one.
func (v *validator) created() error {
	old := map[string]bool{}
	for _, in := range v.before.Blocks {
		old[in.Block.Name] = true
	}
	if !slices.ContainsFunc(v.after.Blocks, func(in *poly.Instances) bool { return !old[in.Block.Name] }) {
		return nil // no block created: the after program's dependences are not needed
	}
	var deps []*poly.Dependence
	for _, d := range v.after.Deps() {
		if d.Source != d.Sink && (!old[d.Source.Block.Name] || !old[d.Sink.Block.Name]) {
			deps = append(deps, d)
		}
	}
	if len(deps) == 0 {
		return nil
	}
	for _, d := range deps {
		if err := v.noRace(d); err != nil {
			return err
		}
	}
	// The buffers whose init this step moved out of a block
	// (decompose_reduction): the created block that now writes it must
	// not lose its values.
	moved := map[string]bool{} // by name: the two functions' buffers differ
	for _, in := range v.before.Blocks {
		if in.Block.Init == nil {
			continue
		}
		if now := v.after.Block(in.Block.Name); now != nil && now.Block.Init == nil {
			for _, w := range in.Block.Writes {
				moved[w.Buffer.Name] = true
			}
		}
	}
	for _, d := range deps {
		if d.Kind != poly.WAW || old[d.Source.Block.Name] || !moved[d.Buffer.Name] {
			continue
		}
		if err := v.notLost(d); err != nil {
			return err
		}
	}
	return nil
}

// noRace refuses a dependence between two blocks, one of them created,
// whose pairs may run at once.
func (v *validator) noRace(d *poly.Dependence) error {
	concurrent := func(l *ast.For) bool {
		switch {
		case l.Kind == ast.Parallel || l.Kind == ast.Vectorized || l.Kind.IsGPUBlock():
			return true
		case l.Kind.IsGPUThread():
			return !crossThreadReduction(d, d.Source.Block, l)
		}
		return false
	}
	for _, wrong := range v.after.Concurrently(d.Source, d.Sink, concurrent) {
		in, out, found, decided := poly.IntersectMap(d.Rel, wrong).Witness()
		if !found {
			if !decided {
				v.stats.note("created: undecided race")
			}
			continue
		}
		if d.Cautious {
			v.stats.note("created: race in a cautious dependence")
			continue
		}
		if !d.Source.Exact || !d.Sink.Exact {
			// The pair may be one of the over-approximation's (a binding
			// that divides by a symbolic size, say, is left out, and with
			// it which iteration of a parallel loop writes the cell).
			v.stats.note("created: race in an inexact model")
			continue
		}
		return &Error{Question: "created", Block: createdOf(d, v.before), Reason: fmt.Sprintf("blocks %s%s and %s%s access the same element of %s at once, one of them writing (%s)",
			d.Source.Block.Name, poly.IterString(d.Source.Block, in[len(d.Source.Loops):]), d.Sink.Block.Name, poly.IterString(d.Sink.Block, out[len(d.Sink.Loops):]), d.Buffer.Name, d.Kind)}
	}
	return nil
}

// notLost refuses d, a created block's write followed by another block's
// write of the same cell, when some pair has no read of the cell between
// them: the pairs (n, y) of d must each have a reader r with (n, r) a
// read after n's write and (r, y) a read before y's write, or y itself
// read the cell first.
func (v *validator) notLost(d *poly.Dependence) error {
	n, y := d.Source, d.Sink
	if !n.Exact || !y.Exact {
		// Pairs of the over-approximation would count as lost writes.
		v.stats.note("created: lost write in an inexact model")
		return nil
	}
	if d.Cautious {
		// Every pair is in the superset: most are no write at all.
		v.stats.note("created: lost write in a cautious dependence")
		return nil
	}
	var covered poly.Map
	have := false
	add := func(m poly.Map) {
		if !have {
			covered, have = m, true
			return
		}
		covered = poly.UnionMap(covered, m)
	}
	all := v.after.Deps()
	for _, raw := range all {
		if raw.Kind != poly.RAW || raw.Source != n || raw.Buffer != d.Buffer {
			continue
		}
		if raw.Sink == y {
			add(raw.Rel) // y reads the cell before it writes it
			continue
		}
		for _, war := range all {
			if war.Kind == poly.WAR && war.Source == raw.Sink && war.Sink == y && war.Buffer == d.Buffer {
				add(poly.ApplyRange(raw.Rel, war.Rel))
			}
		}
	}
	lost := d.Rel.Wrap()
	if have {
		switch v.subset(lost, covered.Wrap()) {
		case yes:
			return nil
		case unknown:
			v.stats.note("created: undecided lost write")
			return nil
		}
	} else if _, _, found, _ := d.Rel.Witness(); !found {
		return nil
	}
	return &Error{Question: "created", Block: n.Block.Name, Reason: fmt.Sprintf("block %s overwrites elements of %s that block %s wrote before any block reads them", y.Block.Name, d.Buffer.Name, n.Block.Name)}
}

// createdOf names the created block of d (the source when both are).
func createdOf(d *poly.Dependence, before *poly.Program) string {
	if before.Block(d.Source.Block.Name) == nil {
		return d.Source.Block.Name
	}
	return d.Sink.Block.Name
}
