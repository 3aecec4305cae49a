package schedule

import (
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// ReverseComputeAt moves block b, a consumer, under loop l, where the block
// producing what it reads is: in each iteration of l, after the producer,
// b then computes the part of its domain whose input that iteration
// produced. It is how an epilogue (a ReLU, a type conversion) joins a tiled
// computation.
//
// b must read exactly one buffer that a block under l writes, at its
// iteration variables (each dimension one variable); over all iterations of
// l, the producer must write everything b reads; a reduce variable of b
// that indexes the buffer must be covered whole in one iteration. b must
// have no predicate and not already be under l; other dependences must
// keep their order.
func (s *Schedule) ReverseComputeAt(b Block, l Loop) error {
	const prim = "reverse_compute_at"
	m, err := s.moveTarget(prim, b, l)
	if err != nil {
		return err
	}
	blk, at, loop, lat, here, inLoop := m.blk, m.at, m.loop, m.lat, m.here, m.inLoop
	var buf *ast.Buffer
	var producers []*ast.ScheduleBlock
	for _, r := range blk.Reads {
		writers, _ := accessors(s.f, r.Buffer)
		for _, w := range writers {
			if inLoop[w] {
				if buf != nil && buf != r.Buffer {
					return illegal(prim, s.f, here, "block %s reads two buffers produced under loop %s, %s and %s", blk.Name, loop.Var.Name, buf.Name, r.Buffer.Name)
				}
				buf = r.Buffer
				if !slices.Contains(producers, w) {
					producers = append(producers, w)
				}
			}
		}
	}
	if buf == nil {
		return illegal(prim, s.f, here, "no block under loop %s produces what block %s reads", loop.Var.Name, blk.Name)
	}
	// b's reads of the buffer name its iteration variables.
	var perm []*ast.IterVar
	for _, r := range blk.Reads {
		if r.Buffer != buf {
			continue
		}
		p, ok := regionIters(blk, r, false)
		if !ok || perm != nil && !slices.Equal(p, perm) {
			return illegal(prim, s.f, here, "block %s reads %s at indices that are not its iteration variables each once", blk.Name, buf.Name)
		}
		perm = p
	}
	pm, err := s.model()
	if err != nil {
		return illegal(prim, s.f, here, "cannot analyze the function: %v", err)
	}
	// Everything b reads must be produced under the loop.
	read, err := pm.Footprint(blk.Name, buf, false)
	if err != nil {
		return illegal(prim, s.f, here, "%v", err)
	}
	written, err := unionOf(producers, func(p *ast.ScheduleBlock) (poly.Set, error) { return pm.Footprint(p.Name, buf, true) })
	if err != nil {
		return illegal(prim, s.f, here, "%v", err)
	}
	covered, err := poly.Subset(read, written)
	atLeastOne := false
	if err == nil && !covered {
		// Where a size is 0, a producer may not run at all (a reduction
		// over K = 0 under a cache's write-back): b then reads what was
		// there before, as it did where it was. The coverage gives b's
		// ranges where the sizes are at least 1; checkOrder and
		// checkInstancesSame below prove the move at every size.
		covered, err = poly.Subset(read.ParamsAtLeast(1), written)
		atLeastOne = true
	}
	switch {
	case err != nil:
		return illegal(prim, s.f, []ast.Node{blk, loop, producers[0]}, "cannot tell whether the blocks under loop %s write every part of %s that block %s reads: %v", loop.Var.Name, buf.Name, blk.Name, err)
	case !covered:
		return illegal(prim, s.f, []ast.Node{blk, loop, producers[0]}, "block %s reads parts of %s that the blocks under loop %s do not write", blk.Name, buf.Name, loop.Var.Name)
	}
	// The part produced in one iteration gives b's ranges.
	region, err := unionOf(producers, func(p *ast.ScheduleBlock) (poly.Set, error) { return pm.Accessed(p.Name, buf, loop, true) })
	if err != nil {
		return illegal(prim, s.f, here, "%v", err)
	}
	above := lat.loops()
	vars := scopeVars(s.f, above)
	ranges, err := loopRanges(region, perm, vars, above)
	if err != nil {
		return illegal(prim, s.f, here, "the region of %s produced in loop %s: %v", buf.Name, loop.Var.Name, err)
	}
	a := analyzerFor(s.f, above)
	for _, it := range perm {
		if it == nil || it.Kind != ast.Reduce {
			continue
		}
		r := ranges[it.Var.Name]
		full := a.CanProve(ast.LE(r.lo, it.Dom.Min)) && a.CanProve(ast.GE(r.hi, ast.Sub(ast.Add(it.Dom.Min, it.Dom.Extent), ast.One(it.Var.DType))))
		if !full {
			return illegal(prim, s.f, here, "block %s reduces over %s, but one iteration of loop %s produces only part of its range", blk.Name, it.Var.Name, loop.Var.Name)
		}
		delete(ranges, it.Var.Name) // the whole domain
	}
	g := removeBlock(s.f, blk, at)
	nest := buildNest(s.f, blk, ranges, above, at.loops(), names(g))
	loop2, _, _ := findLoop(g, loop.Var.Name)
	g = replace(g, loop2, insertInto(loop2, nest, consumerBlocks(g, producers), true))
	g = ast.SimplifyFunc(g)
	// Only b moves, so only its dependences can change order.
	onlyB := func(d *poly.Dependence) bool { return d.Source.Block != blk && d.Sink.Block != blk }
	if err := s.checkOrderOf(prim, g, here, blk, onlyB); err != nil {
		return err
	}
	if err := s.checkInstancesKept(prim, g, blk.Name, here); err != nil {
		return err
	}
	if atLeastOne {
		if err := s.checkInstancesAll(prim, g, blk.Name, here, "where a size is 0 (the blocks it reads from do not run there)"); err != nil {
			return err
		}
	}
	if err := checkRunsOnce(prim, s.f, g, blk.Name, here, true); err != nil {
		return err
	}
	if err := checkConcurrent(prim, s.f, g, blk.Name, here); err != nil {
		return err
	}
	if err := s.commit(prim, g); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv), Ref(l.rv)}})
	return nil
}

func init() {
	register("reverse_compute_at", instKind{
		args: 2,
		replay: func(s *Schedule, args []any) error {
			b, l, err := argBlockLoop(args)
			if err != nil {
				return err
			}
			return s.ReverseComputeAt(b, l)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.ReverseComputeAt(%s, %s)", args[0], args[1]) },
		outputs: "none",
	})
}
