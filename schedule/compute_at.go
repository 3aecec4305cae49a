package schedule

import (
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// ComputeAt moves block b, a producer, under loop l, where its consumers
// are: in each iteration of l it then computes exactly the region of its
// output that the consumers under l read in that iteration (as poly
// computes it), before the first of them. b's own loops go away; its new
// loops (ax0, ax1, ...) cover the region, clipped to b's domain.
//
// For a shared buffer the region is that of all the iterations of the
// thread loops around l at once (a block's threads share the buffer and
// fill it together), so b then computes the whole block's tile in every
// thread's iteration.
//
// Every block that reads b's output must be under l. b must write its
// output buffers at its spatial iteration variables (each dimension one
// variable), have no predicate, and not already be under l. When b writes
// an argument of the function, the consumers under l must read all of it
// at every size: b must still write every element it wrote. Other
// dependences must keep their order (poly checks it): for instance b must
// not move past a block that overwrites its inputs.
func (s *Schedule) ComputeAt(b Block, l Loop) error {
	const prim = "compute_at"
	if l.IsRoot() && l.s == s {
		// The root location of SampleComputeLocation: stay in place.
		if _, _, err := s.block(prim, b); err != nil {
			return err
		}
		s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv), Ref(l.rv)}})
		return nil
	}
	m, err := s.moveTarget(prim, b, l)
	if err != nil {
		return err
	}
	blk, at, loop, lat, here, inLoop := m.blk, m.at, m.loop, m.lat, m.here, m.inLoop
	if len(blk.Writes) == 0 {
		return illegal(prim, s.f, here, "block %s writes nothing", blk.Name)
	}
	// Its consumers, all under the loop.
	outputs := map[*ast.Buffer]bool{}
	var consumers []*ast.ScheduleBlock
	// Another writer of b's output (a cache's fill that the cached block
	// then updates): b may then not run an instance twice (it would
	// overwrite the other's values), and its dependences on that buffer
	// are all checked, not taken as kept by construction.
	var otherWriter *ast.ScheduleBlock
	for _, w := range blk.Writes {
		outputs[w.Buffer] = true
		writers, readers := accessors(s.f, w.Buffer)
		for _, other := range writers {
			if other != blk {
				otherWriter = other
			}
		}
		for _, r := range readers {
			if r == blk {
				continue
			}
			if !inLoop[r] {
				return illegal(prim, s.f, []ast.Node{blk, loop, r}, "block %s reads %s but is not under loop %s, so it would read %s before block %s computes it", r.Name, w.Buffer.Name, loop.Var.Name, w.Buffer.Name, blk.Name)
			}
			if !slices.Contains(consumers, r) {
				consumers = append(consumers, r)
			}
		}
	}
	if len(consumers) == 0 {
		return illegal(prim, s.f, here, "loop %s does not enclose any block that reads what block %s writes", loop.Var.Name, blk.Name)
	}
	// The region the consumers need in one iteration of the loop, clipped
	// to what b writes, per output dimension, mapped to b's iteration
	// variables.
	p, err := s.model()
	if err != nil {
		return illegal(prim, s.f, here, "cannot analyze the function: %v", err)
	}
	above := lat.loops()
	vars := scopeVars(s.f, above)
	ranges := map[string]iterRange{}
	for _, w := range blk.Writes {
		perm, ok := regionIters(blk, w, true)
		if !ok {
			return illegal(prim, s.f, here, "block %s writes %s at indices that are not its spatial iteration variables each once", blk.Name, w.Buffer.Name)
		}
		var readers []*ast.ScheduleBlock
		for _, c := range consumers {
			if readsBuffer(c, w.Buffer) {
				readers = append(readers, c)
			}
		}
		if len(readers) == 0 {
			continue
		}
		// A shared buffer holds what all the threads of a block need:
		// each thread's iterations are relaxed.
		var relax []*ast.For
		if w.Buffer.Scope == ast.Shared {
			relax = slices.DeleteFunc(slices.Clone(above), func(l *ast.For) bool { return !l.Kind.IsGPUThread() })
		}
		need, err := unionOf(readers, func(c *ast.ScheduleBlock) (poly.Set, error) {
			return p.AccessedAcross(c.Name, w.Buffer, loop, false, relax)
		})
		if err != nil {
			return illegal(prim, s.f, here, "%v", err)
		}
		written, err := p.Footprint(blk.Name, w.Buffer, true)
		if err != nil {
			return illegal(prim, s.f, here, "%v", err)
		}
		clipped := poly.Intersect(need, written)
		r, err := loopRanges(clipped, perm, vars, above)
		if err != nil {
			return illegal(prim, s.f, here, "the region of %s needed in loop %s: %v", w.Buffer.Name, loop.Var.Name, err)
		}
		for name, x := range r {
			if _, dup := ranges[name]; dup {
				return illegal(prim, s.f, here, "block %s writes two buffers at the same iteration variable %s", blk.Name, name)
			}
			ranges[name] = x
		}
	}
	g := removeBlock(s.f, blk, at)
	nest := buildNest(s.f, blk, ranges, above, at.loops(), names(g))
	// Insert before the first statement of the loop's body that holds a
	// consumer (the loop is unchanged by the removal: b was not under it).
	loop2, _, _ := findLoop(g, loop.Var.Name)
	g = replace(g, loop2, insertInto(loop2, nest, consumerBlocks(g, consumers), false))
	g = ast.SimplifyFunc(g)
	// b's output is produced, by construction, where its consumers read it
	// (possibly more than once when their regions overlap); every other
	// dependence of b must keep its order. Only b moves, so the dependences
	// between other blocks keep theirs.
	skip := func(d *poly.Dependence) bool {
		if d.Source.Block != blk && d.Sink.Block != blk {
			return true // only b moves: the order of the others is unchanged
		}
		return outputs[d.Buffer] && otherWriter == nil
	}
	if err := s.checkOrderOf(prim, g, here, blk, skip); err != nil {
		return err
	}
	if err := s.checkInstancesKept(prim, g, blk.Name, here); err != nil {
		return err
	}
	// An argument of the function is read after it returns: b must still
	// write all of it, not only what its consumers under the loop read (a
	// consumer under a condition, or one that reads half).
	for _, w := range blk.Writes {
		if s.f.Param(w.Buffer.Name) != nil {
			if err := s.checkInstancesAll(prim, g, blk.Name, here, fmt.Sprintf("at its new place: it writes %s, an argument of the function, and the blocks under loop %s do not read all of it at every size", w.Buffer.Name, loop.Var.Name)); err != nil {
				return err
			}
			break
		}
	}
	if err := checkRunsOnce(prim, s.f, g, blk.Name, here, otherWriter != nil); err != nil {
		if otherWriter != nil {
			return illegal(prim, s.f, []ast.Node{blk, otherWriter}, "block %s also writes what block %s writes, and at its new place block %s would run some instance more than once, over block %s's values", otherWriter.Name, blk.Name, blk.Name, otherWriter.Name)
		}
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

// move is what compute_at and reverse_compute_at resolve first: the block,
// the loop it moves under, their places, and the blocks under the loop.
type move struct {
	blk    *ast.ScheduleBlock
	at     place
	loop   *ast.For
	lat    place
	here   []ast.Node
	inLoop map[*ast.ScheduleBlock]bool
}

// moveTarget resolves the handles of compute_at or reverse_compute_at and
// checks what both need: the block is not under the loop yet and has no
// predicate (it refers to the loops the block leaves).
func (s *Schedule) moveTarget(prim string, b Block, l Loop) (*move, error) {
	blk, at, err := s.block(prim, b)
	if err != nil {
		return nil, err
	}
	loop, lat, err := s.loop(prim, l)
	if err != nil {
		return nil, err
	}
	m := &move{blk: blk, at: at, loop: loop, lat: lat, here: []ast.Node{blk, loop}, inLoop: map[*ast.ScheduleBlock]bool{}}
	if err := leafAtRoot(prim, s.f, blk, at); err != nil {
		return nil, err
	}
	if outer := nestOf(s.f, lat); outer != nil {
		return nil, inNest(prim, s.f, loop, outer)
	}
	if slices.Contains(at, ast.Stmt(loop)) {
		return nil, illegal(prim, s.f, m.here, "block %s is already under loop %s", blk.Name, loop.Var.Name)
	}
	if blk.Predicate != nil {
		return nil, illegal(prim, s.f, m.here, "block %s has a predicate that refers to its current loops", blk.Name)
	}
	ast.Inspect(loop, func(n ast.Node) bool {
		if c, ok := n.(*ast.ScheduleBlock); ok {
			m.inLoop[c] = true
		}
		return true
	})
	return m, nil
}

// unionOf returns the union of the sets fn gives for each block.
func unionOf(blocks []*ast.ScheduleBlock, fn func(*ast.ScheduleBlock) (poly.Set, error)) (poly.Set, error) {
	var out poly.Set
	for i, b := range blocks {
		s, err := fn(b)
		if err != nil {
			return poly.Set{}, err
		}
		if i == 0 {
			out = s
		} else {
			out = poly.Union(out, s)
		}
	}
	return out, nil
}

// consumerBlocks finds blocks of g by the names of the given blocks.
func consumerBlocks(g *ast.Func, bs []*ast.ScheduleBlock) []*ast.ScheduleBlock {
	var out []*ast.ScheduleBlock
	for _, b := range bs {
		if c, _, ok := findBlock(g, b.Name); ok {
			out = append(out, c)
		}
	}
	return out
}

func init() {
	register("compute_at", instKind{
		args: 2,
		replay: func(s *Schedule, args []any) error {
			b, l, err := argBlockLoop(args)
			if err != nil {
				return err
			}
			return s.ComputeAt(b, l)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.ComputeAt(%s, %s)", args[0], args[1]) },
		outputs: "none",
	})
}
