package schedule

import (
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// ComputeInline removes block b and substitutes its computation into every
// load of the buffer it writes. b must be element-wise: no reduction, one
// store whose indices are its iteration variables each once (so each
// element is one instance), to a temporary buffer that no other block
// writes (not a parameter: the function's outputs must stay written). It
// is refused when another block overwrites something b reads after b runs.
func (s *Schedule) ComputeInline(b Block) error {
	const prim = "compute_inline"
	blk, at, err := s.block(prim, b)
	if err != nil {
		return err
	}
	here := nodes(blk)
	st := singleStore(blk)
	if ast.Stmt(blk) != s.f.Body {
		// Inlined away, a block inside a block around a nest would leave
		// that block empty.
		if err := leafAtRoot(prim, s.f, blk, at); err != nil {
			return err
		}
	}
	switch {
	case blk.Name == "root" || len(blk.Iters) == 0 && st == nil:
		return illegal(prim, s.f, here, "block %s is not a computation", blk.Name)
	case blk.IsReduction() || blk.Init != nil:
		return illegal(prim, s.f, here, "block %s is a reduction; only element-wise blocks can be inlined (its result depends on all the reduce iterations)", blk.Name)
	case st == nil:
		return illegal(prim, s.f, here, "the body of block %s is not a single store", blk.Name)
	case isParam(s.f, st.Buffer):
		return illegal(prim, s.f, here, "block %s writes %s, a parameter of the function: its result must be stored, not inlined", blk.Name, st.Buffer.Name)
	}
	perm, ok := iterPermutation(blk, st.Buffer, st.Indices)
	if !ok {
		return illegal(prim, s.f, here, "block %s stores to %s at indices that are not its iteration variables each once", blk.Name, ast.Print(&ast.Load{Buffer: st.Buffer, Indices: st.Indices}))
	}
	if len(loadsOf(st.Value, st.Buffer)) > 0 {
		return illegal(prim, s.f, here, "block %s reads the buffer it writes", blk.Name)
	}
	writers, _ := accessors(s.f, st.Buffer)
	if len(writers) != 1 {
		return illegal(prim, s.f, here, "%s is written by %d blocks; inlining needs block %s to be its only writer", st.Buffer.Name, len(writers), blk.Name)
	}
	p, err := s.model()
	if err != nil {
		return illegal(prim, s.f, here, "cannot analyze the function: %v", err)
	}
	for _, d := range p.Deps() {
		if d.Kind == poly.WAR && d.Source.Block == blk && d.Sink.Block != blk {
			return illegal(prim, s.f, here, "block %s overwrites %s after block %s reads it, so recomputing %s later would read the new values", d.Sink.Block.Name, d.Buffer.Name, blk.Name, blk.Name)
		}
		if d.Kind == poly.WAR && d.Sink.Block == blk && d.Source.Block != blk && d.Buffer == st.Buffer {
			return illegal(prim, s.f, nodes(blk, d.Source.Block), "block %s reads %s before block %s writes it, so it would read %s's values too early", d.Source.Block.Name, st.Buffer.Name, blk.Name, blk.Name)
		}
	}
	// Substitute b's value at every load: iteration variable perm[d] takes
	// the load's index d.
	inline := func(l *ast.Load) ast.Expr {
		return ast.Substitute(st.Value, permSubstitution(blk, perm, l.Indices))
	}
	g := removeBlock(s.f, blk, at)
	var stmt func(x ast.Stmt) ast.Stmt
	stmt = func(x ast.Stmt) ast.Stmt {
		if c, ok := x.(*ast.ScheduleBlock); ok && readsBuffer(c, st.Buffer) && !c.HoldsBlock() {
			return inlineIntoBlock(c, st.Buffer, perm, blk, inline, stmt)
		}
		return ast.MapChildren(x, stmt, keepExpr)
	}
	g = ast.MapChildren(g, stmt, keepExpr)
	g = mapLoads(g, st.Buffer, inline) // loads outside blocks
	g = dropUnusedAlloc(g, st.Buffer)
	g = ast.SimplifyFunc(g)
	if err := s.commit(prim, g); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv)}})
	return nil
}

func readsBuffer(b *ast.ScheduleBlock, buf *ast.Buffer) bool {
	for _, r := range b.Reads {
		if r.Buffer == buf {
			return true
		}
	}
	return false
}

// inlineIntoBlock substitutes the inlined value into consumer c and
// replaces its read regions of buf by the producer's read regions at the
// indices c loads.
func inlineIntoBlock(c *ast.ScheduleBlock, buf *ast.Buffer, perm []*ast.IterVar, producer *ast.ScheduleBlock, inline func(*ast.Load) ast.Expr, stmt func(ast.Stmt) ast.Stmt) ast.Stmt {
	loads := loadsOf(c, buf)
	n := *c
	n.Reads = nil
	for _, r := range c.Reads {
		if r.Buffer != buf {
			n.Reads = append(n.Reads, r)
		}
	}
	for _, l := range loads {
		sub := permSubstitution(producer, perm, l.Indices)
		for _, r := range producer.Reads {
			nr := ast.Region{Buffer: r.Buffer}
			for _, rg := range r.Ranges {
				nr.Ranges = append(nr.Ranges, ast.Range{Min: ast.Simplify(ast.Substitute(rg.Min, sub)), Extent: ast.Substitute(rg.Extent, sub)})
			}
			n.Reads = append(n.Reads, nr)
		}
	}
	n.Reads = dedupRegions(n.Reads)
	if n.Init != nil {
		n.Init = mapLoads(stmt(n.Init), buf, inline)
	}
	n.Body = mapLoads(stmt(n.Body), buf, inline)
	return &n
}

// dedupRegions drops regions equal to an earlier one.
func dedupRegions(rs []ast.Region) []ast.Region {
	var out []ast.Region
next:
	for _, r := range rs {
		for _, o := range out {
			if o.Buffer == r.Buffer && o.SameRanges(r) {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

func init() {
	register("compute_inline", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			b, err := argBlock(args[0])
			if err != nil {
				return err
			}
			return s.ComputeInline(b)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.ComputeInline(%s)", args[0]) },
		outputs: "none",
	})
}
