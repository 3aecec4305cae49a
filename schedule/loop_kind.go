package schedule

import (
	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// setKind changes the kind of a serial loop after the checks the kind
// needs, and records the instruction.
func (s *Schedule) setKind(prim string, l Loop, kind ast.ForKind, args []Arg) error {
	loop, _, err := s.loop(prim, l)
	if err != nil {
		return err
	}
	at := nodes(loop)
	if loop.Kind != ast.Serial {
		return illegal(prim, s.f, at, "loop %s is already %s", loop.Var.Name, loop.Kind)
	}
	if kind == ast.Vectorized || kind == ast.Unrolled {
		if _, ok := ast.ConstIntValue(ast.Simplify(loop.Extent)); !ok {
			return illegal(prim, s.f, at, "loop %s has the non-constant extent %s; only a loop of constant extent can be %s (split it by a constant first)", loop.Var.Name, loop.Extent, kind)
		}
	}
	if kind == ast.Parallel || kind == ast.Vectorized || kind.IsGPUBlock() {
		// A reduce variable bound to such a loop is a race whatever
		// values run (the IR refuses it; rfactor makes it parallel).
		var bad *ast.ScheduleBlock
		ast.Inspect(loop.Body, func(n ast.Node) bool {
			if b, isBlock := n.(*ast.ScheduleBlock); isBlock && bad == nil {
				for _, it := range b.Iters {
					if it.Kind == ast.Reduce && ast.Mentions(it.Binding, loop.Var.Name) {
						bad = b
					}
				}
			}
			return bad == nil
		})
		if bad != nil {
			return illegal(prim, s.f, nodes[ast.Node](loop, bad), "loop %s binds a reduce variable of block %s; a %s loop cannot run a reduction (rfactor the reduction first)", loop.Var.Name, bad.Name, kind)
		}
	}
	if kind != ast.Unrolled && !carriesNoUpdate(loop) {
		// The iterations will run in any order: nothing may depend across
		// them.
		p, err := s.model()
		if err != nil {
			return illegal(prim, s.f, at, "cannot analyze the function: %v", err)
		}
		for _, d := range p.CarriedBy(loop) {
			if kind.IsGPUThread() && crossThreadReduction(d, loop) {
				continue
			}
			hint := ""
			if d.Source == d.Sink && d.Source.Block.IsReduction() {
				hint = " (rfactor the reduction first to run its reduce loop in parallel)"
			}
			return illegal(prim, s.f, at, "loop %s carries a dependence: %s%s", loop.Var.Name, describeDep(d), hint)
		}
	}
	c := *loop
	c.Kind = kind
	g := replace(s.f, loop, &c)
	if err := s.commit(prim, g); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: append([]Arg{Ref(l.rv)}, args...)})
	return nil
}

// crossThreadReduction reports whether d is the self-dependence of a
// reduction block whose reduce variables alone use loop: binding such a
// loop to GPU threads makes a cross-thread reduction, which the GPU code
// generator implements with shuffles and shared memory.
func crossThreadReduction(d *poly.Dependence, loop *ast.For) bool {
	if d.Source != d.Sink || !d.Source.Block.IsReduction() {
		return false
	}
	for _, it := range d.Source.Block.Iters {
		if ast.Mentions(it.Binding, loop.Var.Name) && it.Kind != ast.Reduce {
			return false
		}
	}
	for _, w := range d.Source.Block.Writes {
		if w.Buffer == d.Buffer {
			return true
		}
	}
	return false
}

// describeDep says in words which blocks a dependence orders.
func describeDep(d *poly.Dependence) string {
	switch d.Kind {
	case poly.RAW:
		return "block " + d.Sink.Block.Name + " reads " + d.Buffer.Name + " that block " + d.Source.Block.Name + " writes in an earlier iteration"
	case poly.WAR:
		return "block " + d.Sink.Block.Name + " overwrites " + d.Buffer.Name + " that block " + d.Source.Block.Name + " reads in an earlier iteration"
	}
	return "blocks " + d.Source.Block.Name + " and " + d.Sink.Block.Name + " write the same element of " + d.Buffer.Name + " in different iterations"
}
