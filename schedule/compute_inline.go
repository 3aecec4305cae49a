package schedule

import (
	"fmt"
	"slices"
	"strings"

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
	case blk.Name == ast.RootBlock || len(blk.Iters) == 0 && st == nil:
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
			return inlineIntoBlock(s.f, c, st.Buffer, perm, blk, inline, stmt)
		}
		return ast.MapChildren(x, stmt, keepExpr)
	}
	g = ast.MapChildren(g, stmt, keepExpr)
	g = mapLoads(g, st.Buffer, inline) // loads outside blocks
	g = dropUnusedAlloc(g, st.Buffer)
	g = ast.SimplifyFunc(g)
	if err := s.checkIndexBounds(prim, g, here, blk, st.Buffer); err != nil {
		return err
	}
	if err := s.commit(prim, g); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv)}})
	return nil
}

// checkIndexBounds refuses g, the function with block producer inlined,
// when producer's buffer buf is an index of another access (a gather's
// positions) and inlining makes that access one with no load left in its
// index, which the kernel then no longer checks as it runs (an index read
// from a buffer is checked: out of range, it is a status, not a read
// outside the buffer). Such an access must be proven inside its buffer's
// shape for every size: iota(S) inlined into a lookup of a table of 32
// rows is refused, since S may be 33, and so is an access poly cannot
// model exactly (a remainder by a size, a product of variables), whose
// range it cannot bound.
func (s *Schedule) checkIndexBounds(prim string, g *ast.Func, at []ast.Node, producer *ast.ScheduleBlock, buf *ast.Buffer) error {
	indexed := map[string]map[string]bool{} // block -> the buffers it indexes with buf's values
	for _, c := range s.f.Blocks() {
		if !c.HoldsBlock() {
			if bs := indexedWith(c, func(x ast.Expr) bool { return len(loadsOf(x, buf)) > 0 }); len(bs) > 0 {
				indexed[c.Name] = bs
			}
		}
	}
	direct := map[string]map[string]bool{} // of those, the accesses g leaves with no load in an index
	for _, c := range g.Blocks() {
		if bs := indexed[c.Name]; bs != nil {
			for name := range indexedWith(c, func(x ast.Expr) bool { return !ast.ContainsLoad(x) }) {
				if bs[name] {
					if direct[c.Name] == nil {
						direct[c.Name] = map[string]bool{}
					}
					direct[c.Name][name] = true
				}
			}
		}
	}
	if len(direct) == 0 {
		return nil
	}
	_, after, err := s.models(prim, g, at)
	if err != nil {
		return err
	}
	for _, in := range after.Blocks {
		for _, a := range after.Touches(in) {
			if !direct[in.Block.Name][a.Buffer.Name] {
				continue
			}
			if !in.Exact || !a.Exact || !affineShape(a.Buffer) {
				return illegal(prim, s.f, at, "block %s's values index %s in block %s; inlined, the index is arithmetic the model cannot bound, so it cannot be proven inside %s's shape, and the kernel would no longer check it as it runs", producer.Name, a.Buffer.Name, in.Block.Name, a.Buffer.Name)
			}
			ps, x, out := a.OutOfBounds(in.Domain)
			if !out {
				continue
			}
			where := ""
			if x != nil {
				where = fmt.Sprintf(" (index %v%s)", x, paramValues(after.Params, ps))
			}
			return illegal(prim, s.f, at, "block %s's values index %s in block %s; inlined, that access may fall outside %s's shape%s, where the kernel now checks each index as it runs", producer.Name, a.Buffer.Name, in.Block.Name, a.Buffer.Name, where)
		}
	}
	return nil
}

// indexedWith returns the buffers that block b (its init and body) loads
// or stores at an index for which pick holds.
func indexedWith(b *ast.ScheduleBlock, pick func(ast.Expr) bool) map[string]bool {
	out := map[string]bool{}
	visit := func(buf *ast.Buffer, xs []ast.Expr) {
		if slices.ContainsFunc(xs, pick) {
			out[buf.Name] = true
		}
	}
	for _, st := range []ast.Stmt{b.Init, b.Body} {
		if st == nil {
			continue
		}
		ast.Inspect(st, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Load:
				visit(n.Buffer, n.Indices)
			case *ast.Store:
				visit(n.Buffer, n.Indices)
			}
			return true
		})
	}
	return out
}

// affineShape reports whether every dimension of buf is affine in the
// sizes (sums, differences and constant multiples of sizes and
// constants): the shapes poly's bounds check covers.
func affineShape(buf *ast.Buffer) bool {
	var affine func(e ast.Expr) bool
	affine = func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Var, *ast.Const:
			return true
		case *ast.Cast:
			return affine(e.X)
		case *ast.Binary:
			switch e.Op {
			case ast.OpAdd, ast.OpSub:
				return affine(e.A) && affine(e.B)
			case ast.OpMul:
				_, ca := ast.ConstIntValue(e.A)
				_, cb := ast.ConstIntValue(e.B)
				return (ca || cb) && affine(e.A) && affine(e.B)
			}
		}
		return false
	}
	for _, d := range buf.Shape {
		if !affine(d) {
			return false
		}
	}
	return true
}

// paramValues formats the sizes of a witness: " at N=33".
func paramValues(names []string, vals []poly.Int) string {
	var parts []string
	for i, v := range vals {
		if i < len(names) {
			parts = append(parts, names[i]+"="+v.String())
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " at " + strings.Join(parts, ", ")
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
func inlineIntoBlock(f *ast.Func, c *ast.ScheduleBlock, buf *ast.Buffer, perm []*ast.IterVar, producer *ast.ScheduleBlock, inline func(*ast.Load) ast.Expr, stmt func(ast.Stmt) ast.Stmt) ast.Stmt {
	loads := loadsOf(c, buf)
	n := *c
	n.Reads = nil
	for _, r := range c.Reads {
		if r.Buffer != buf {
			n.Reads = append(n.Reads, r)
		}
	}
	visible := map[string]bool{} // what c's regions may use
	for _, v := range f.Sizes {
		visible[v.Name] = true
	}
	for _, it := range c.Iters {
		visible[it.Var.Name] = true
	}
	for _, l := range loads {
		if !onlyVisible(l, visible) {
			continue // a load in a loop of c's body: covered below
		}
		sub := permSubstitution(producer, perm, l.Indices)
		for _, r := range producer.Reads {
			nr := ast.Region{Buffer: r.Buffer}
			for _, rg := range r.Ranges {
				nr.Ranges = append(nr.Ranges, ast.Range{Min: ast.Simplify(ast.Substitute(rg.Min, sub)), Extent: ast.Substitute(rg.Extent, sub)})
			}
			n.Reads = append(n.Reads, nr)
		}
	}
	// A load whose indices use a loop of c's body has no region of its
	// own at the block's level: c's declared region of buf covers it, and
	// the producer's reads over that region replace it.
	for _, l := range loads {
		if onlyVisible(l, visible) {
			continue
		}
		for _, r := range c.Reads {
			if r.Buffer == buf {
				n.Reads = append(n.Reads, readsOver(producer, perm, r)...)
			}
		}
		break
	}
	n.Reads = dedupRegions(n.Reads)
	if n.Init != nil {
		n.Init = mapLoads(stmt(n.Init), buf, inline)
	}
	n.Body = mapLoads(stmt(n.Body), buf, inline)
	return &n
}

// onlyVisible reports whether the indices of l use no variable but those
// in visible, and read no buffer.
func onlyVisible(l *ast.Load, visible map[string]bool) bool {
	ok := true
	for _, x := range l.Indices {
		ast.Inspect(x, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Var:
				ok = ok && visible[n.Name]
			case *ast.Load:
				ok = false // an index read from data (a gather's): no region of its own either
			}
			return ok
		})
	}
	return ok
}

// readsOver returns the regions producer, an element-wise block whose
// variable perm[d] is its output's index d, reads to compute region r of
// its output. A read range affine in those variables with non-negative
// coefficients (A[v0 + 1], A[2*v1]) is widened by their extents in r;
// another becomes the buffer's whole dimension.
func readsOver(producer *ast.ScheduleBlock, perm []*ast.IterVar, r ast.Region) []ast.Region {
	at := map[string]ast.Expr{}   // each variable at the region's start
	span := map[string]ast.Expr{} // the region's extent less one
	for _, it := range producer.Iters {
		at[it.Var.Name] = it.Dom.Min
		span[it.Var.Name] = ast.IntConst(it.Var.DType, 0)
	}
	for d, it := range perm {
		if it != nil && d < len(r.Ranges) {
			at[it.Var.Name] = r.Ranges[d].Min
			span[it.Var.Name] = ast.Sub(r.Ranges[d].Extent, ast.IntConst(it.Var.DType, 1))
		}
	}
	var out []ast.Region
	for _, pr := range producer.Reads {
		nr := ast.Region{Buffer: pr.Buffer}
		for d, rg := range pr.Ranges {
			min, extent := ast.Substitute(rg.Min, at), ast.Substitute(rg.Extent, at)
			whole := false
			for _, it := range producer.Iters {
				name := it.Var.Name
				if ast.Mentions(rg.Extent, name) {
					whole = true
					break
				}
				if !ast.Mentions(rg.Min, name) {
					continue
				}
				step := ast.Simplify(ast.Sub(ast.Substitute(rg.Min, map[string]ast.Expr{name: ast.Add(it.Var, ast.IntConst(it.Var.DType, 1))}), rg.Min))
				k, ok := ast.ConstIntValue(step)
				if !ok || k < 0 {
					whole = true
					break
				}
				extent = ast.Add(extent, ast.Mul(ast.IntConst(it.Var.DType, k), span[name]))
			}
			if whole {
				min, extent = ast.IntConst(pr.Buffer.Shape[d].Type(), 0), pr.Buffer.Shape[d]
			}
			nr.Ranges = append(nr.Ranges, ast.Range{Min: ast.Simplify(min), Extent: ast.Simplify(extent)})
		}
		out = append(out, nr)
	}
	return out
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
