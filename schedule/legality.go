package schedule

import (
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// model returns the polyhedral model of the current function, computed once
// per function.
func (s *Schedule) model() (*poly.Program, error) {
	if s.prog == nil || s.prog.Func != s.f {
		p, err := poly.Extract(s.f)
		if err != nil {
			return nil, err
		}
		s.prog = p
	}
	return s.prog, nil
}

// models returns the models of the current function and of g, its
// transformation by prim, or prim's refusal when either cannot be made.
func (s *Schedule) models(prim string, g *ast.Func, at []ast.Node) (before, after *poly.Program, err error) {
	if before, err = s.model(); err != nil {
		return nil, nil, illegal(prim, s.f, at, "cannot analyze the function: %v", err)
	}
	if after, err = poly.Extract(refreshNests(g)); err != nil {
		return nil, nil, illegal(prim, s.f, at, "cannot analyze the transformed function: %v", err)
	}
	return before, after, nil
}

// checkOrder refuses g, a transformation of the current function, if it
// runs some pair of dependent instances of the current function in the
// other order. skip, if not nil, exempts dependences the primitive
// satisfies by construction.
func (s *Schedule) checkOrder(prim string, g *ast.Func, at []ast.Node, skip func(*poly.Dependence) bool) error {
	return s.checkOrderOf(prim, g, at, nil, skip)
}

// checkOrderOf is checkOrder where, when moved is not nil, only moved's
// dependences are checked (and computed): the primitive moved that block
// alone, so every other pair of blocks keeps its order.
func (s *Schedule) checkOrderOf(prim string, g *ast.Func, at []ast.Node, moved *ast.ScheduleBlock, skip func(*poly.Dependence) bool) error {
	before, after, err := s.models(prim, g, at)
	if err != nil {
		return err
	}
	var vs []*poly.Violation
	if in := before.Block(blockName(moved)); moved != nil && in != nil {
		vs, err = before.ViolationsOfBlock(in, after, unchangedLoops(s.f, g))
	} else {
		vs, err = before.ViolationsKeeping(after, unchangedLoops(s.f, g))
	}
	if err != nil {
		return illegal(prim, s.f, at, "%v", err)
	}
	for _, v := range vs {
		if skip != nil && skip(v.Dep) {
			continue
		}
		return illegal(prim, s.f, at, "%s", explainViolation(v))
	}
	return nil
}

func blockName(b *ast.ScheduleBlock) string {
	if b == nil {
		return ""
	}
	return b.Name
}

// unchangedLoops returns, for each block of g, the loops around it that
// are the same in f (the same variable and bounds), wherever they now
// stand. Their values tell apart the executions of a block that runs an
// iteration vector more than once (a recomputed producer, a skewed nest).
func unchangedLoops(f, g *ast.Func) map[string][]string {
	keep := map[string][]string{}
	olds, news := blockPlaces(f), blockPlaces(g)
	for _, b := range g.Blocks() {
		newAt := news[b.Name]
		oldAt, ok := olds[b.Name]
		if !ok {
			continue
		}
		var names []string
		for _, o := range oldAt.loops() {
			for _, n := range newAt.loops() {
				if o.Var.Name == n.Var.Name && ast.Equal(o.Min, n.Min) && ast.Equal(o.Extent, n.Extent) {
					names = append(names, o.Var.Name)
					break
				}
			}
		}
		keep[b.Name] = names
	}
	return keep
}

// explainViolation says in words which dependence a transformation breaks.
func explainViolation(v *poly.Violation) string {
	d := v.Dep
	if v.Untold {
		return fmt.Sprintf("block %s runs some instance more than once, in iterations of loops this step changes, and it is not pure (it reduces, or reads what it writes): the order of those executions cannot be checked", d.Source.Block.Name)
	}
	src := d.Source.Block.Name + poly.IterString(d.Source.Block, v.Source)
	snk := d.Sink.Block.Name + poly.IterString(d.Sink.Block, v.Sink)
	switch d.Kind {
	case poly.RAW:
		return fmt.Sprintf("block %s would read %s before block %s writes it", snk, d.Buffer.Name, src)
	case poly.WAR:
		return fmt.Sprintf("block %s would overwrite %s before block %s reads it", snk, d.Buffer.Name, src)
	}
	return fmt.Sprintf("block %s would write %s before block %s does, reversing their writes", snk, d.Buffer.Name, src)
}

// checkInstancesKept refuses g, where block name was moved (compute_at,
// reverse_compute_at), if the block now runs an iteration vector it did
// not run at its old place: its loops there may cover only part of its
// domain (a triangular nest), which the new nest must keep.
func (s *Schedule) checkInstancesKept(prim string, g *ast.Func, name string, at []ast.Node) error {
	before, after, err := s.models(prim, g, at)
	if err != nil {
		return err
	}
	was, now := before.Block(name), after.Block(name)
	if was == nil || now == nil {
		return nil
	}
	if !was.ExactDomain {
		// The model over-approximates the instances the block runs where
		// it is (a bound or binding that is not affine: a loop fused with
		// one of symbolic extent, say), so a subset of it could still be
		// instances it never ran: the part of a triangle the fused loop
		// leaves out.
		return illegal(prim, s.f, at, "cannot tell which instances block %s runs where it is (a loop bound, binding or condition there is not affine), so not whether its new place would run others", name)
	}
	kept, err := poly.Subset(now.Iterations(), was.Iterations())
	switch {
	case err != nil:
		return illegal(prim, s.f, at, "cannot tell whether block %s would run only instances it ran before: %v", name, err)
	case !kept:
		return illegal(prim, s.f, at, "block %s runs only part of its domain where it is (its loops' bounds depend on other loops), and at its new place it would run instances it did not", name)
	}
	return nil
}

// checkInstancesAll refuses g, where block name was moved, if the block
// no longer runs every instance it ran (at some sizes: a move whose
// ranges were found where every size is at least 1). where says where
// the instances would be lost, in the reason.
func (s *Schedule) checkInstancesAll(prim string, g *ast.Func, name string, at []ast.Node, where string) error {
	before, after, err := s.models(prim, g, at)
	if err != nil {
		return err
	}
	was, now := before.Block(name), after.Block(name)
	if was == nil || now == nil {
		return illegal(prim, s.f, at, "cannot find block %s in the models of the function", name)
	}
	if !now.ExactDomain {
		return illegal(prim, s.f, at, "cannot tell which instances block %s would run at its new place (a bound, binding or condition there is not affine), so not whether it still runs every one %s", name, where)
	}
	all, err := poly.Subset(was.Iterations(), now.Iterations())
	switch {
	case err != nil:
		return illegal(prim, s.f, at, "cannot tell whether block %s would still run every instance it ran %s: %v", name, where, err)
	case !all:
		return illegal(prim, s.f, at, "block %s would no longer run some instances %s", name, where)
	}
	return nil
}

// checkRunsOnce refuses g, where block name was moved (compute_at,
// reverse_compute_at), if the block is not pure and now runs some instance
// more than once: the regions of two iterations of its new loop overlap,
// and running an update or a reduction again changes what it computes.
//
// A consumer moved by reverse_compute_at must run each instance once even
// when it is pure: it computes what one iteration produced, and an
// instance run again ran before in an iteration that had not produced its
// input yet (the produced part is not a box of its variables), reading
// what is not written.
func checkRunsOnce(prim string, f, g *ast.Func, name string, at []ast.Node, consumer bool) error {
	blk, _, ok := findBlock(g, name)
	if !ok || blk.IsPure() && !consumer {
		return nil
	}
	p, err := poly.Extract(g)
	if err != nil {
		return illegal(prim, f, at, "cannot analyze the transformed function: %v", err)
	}
	in := p.Block(name)
	if in == nil {
		return nil
	}
	if iters, again := in.Repeat(); again {
		if blk.IsPure() {
			return illegal(prim, f, at, "at its new place block %s would run instance %s more than once, the earlier runs before their input is produced: what one iteration produces is not a box of the block's iteration variables", name, poly.IterString(blk, iters))
		}
		return illegal(prim, f, at, "block %s reads what it writes (or reduces), and at its new place it would run instance %s more than once: the regions of different iterations overlap", name, poly.IterString(blk, iters))
	}
	return nil
}

// checkConcurrent refuses g, where block name was moved (compute_at,
// reverse_compute_at), if a parallel or vectorized loop around its new
// place carries a dependence of the block: its iterations would run at
// once, and the block recomputing the same elements in each of them (or
// reading what another iteration writes) would race.
func checkConcurrent(prim string, f, g *ast.Func, name string, at []ast.Node) error {
	_, place, ok := findBlock(g, name)
	if !ok {
		return nil
	}
	var concurrent []*ast.For
	for _, l := range place.loops() {
		if l.Kind == ast.Parallel || l.Kind == ast.Vectorized {
			concurrent = append(concurrent, l)
		}
	}
	if len(concurrent) == 0 {
		return nil
	}
	p, err := poly.Extract(g)
	if err != nil {
		return illegal(prim, f, at, "cannot analyze the transformed function: %v", err)
	}
	for _, l := range concurrent {
		for _, d := range p.CarriedBy(l) {
			if d.Source.Block.Name == name || d.Sink.Block.Name == name {
				return illegal(prim, f, at, "block %s would be under %s loop %s, which carries a dependence: %s", name, l.Kind, l.Var.Name, describeDep(d))
			}
		}
	}
	return nil
}
