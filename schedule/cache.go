package schedule

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// scopes maps the scope names CacheRead, CacheWrite and SetScope accept.
var scopes = map[string]ast.Scope{"global": ast.Global, "shared": ast.Shared, "local": ast.Local}

// topLevel returns the statement of the root sequence (the body of the
// root block, or of the function) that holds the statement at place at,
// and the root block (nil if the function has none).
func topLevel(f *ast.Func, at place) (ast.Stmt, *ast.ScheduleBlock) {
	root, isRoot := f.Body.(*ast.ScheduleBlock)
	k := 0
	if isRoot && len(at) > 1 {
		k = 1
	} else {
		root = nil
	}
	// The place lists a sequence and then its element: the element is the
	// top-level statement.
	if _, ok := at[k].(*ast.Seq); ok && k+1 < len(at) {
		k++
	}
	return at[k], root
}

// insertTop returns f with stmts inserted in the root sequence before (or
// after) the top-level statement anchor.
func insertTop(f *ast.Func, anchor ast.Stmt, after bool, stmts ...ast.Stmt) *ast.Func {
	var seqOwner ast.Stmt = f.Body
	body := f.Body
	if root, ok := f.Body.(*ast.ScheduleBlock); ok {
		body = root.Body
	}
	var list []ast.Stmt
	if seq, ok := body.(*ast.Seq); ok {
		list = slices.Clone(seq.Stmts)
	} else {
		list = []ast.Stmt{body}
	}
	pos := slices.Index(list, anchor)
	if after {
		pos++
	}
	list = slices.Insert(list, pos, stmts...)
	newBody := ast.Stmt(&ast.Seq{Stmts: list})
	if root, ok := seqOwner.(*ast.ScheduleBlock); ok {
		r := *root
		r.Body = newBody
		g := *f
		g.Body = &r
		return &g
	}
	g := *f
	g.Body = newBody
	return &g
}

// copyBlock builds a loop nest with a block named name that copies src to
// dst (same shape) over box, a set of indices over the function's sizes.
func copyBlock(f *ast.Func, name string, src, dst *ast.Buffer, box poly.Set, used map[string]bool) (ast.Stmt, bool) {
	vars := scopeVars(f, nil)
	blk := &ast.ScheduleBlock{Name: name}
	var idx []ast.Expr
	var loops []*ast.For
	for d := range src.Shape {
		t := src.Shape[d].Type()
		loB, hiB := box.DimBounds(d)
		lo, ok1 := poly.BoundExpr(loB, vars, t)
		hi, ok2 := poly.BoundExpr(hiB, vars, t)
		if !ok1 || !ok2 {
			return nil, false
		}
		// Stay inside the buffer even if the box is an over-approximation.
		lo = ast.Simplify(ast.Max(lo, ast.Zero(t)))
		hi = ast.Simplify(ast.Min(hi, ast.Sub(src.Shape[d], ast.One(t))))
		lv := ast.NewVar(fresh(used, "ax"+strconv.Itoa(d)), t)
		iv := ast.NewVar(fresh(used, "v"+strconv.Itoa(d)), t)
		loops = append(loops, &ast.For{Var: lv, Min: ast.Zero(t), Extent: ast.Simplify(ast.Add(ast.Sub(hi, lo), ast.One(t)))})
		blk.Iters = append(blk.Iters, &ast.IterVar{Var: iv, Kind: ast.Spatial, Dom: ast.Range{Min: ast.Zero(t), Extent: src.Shape[d]}, Binding: ast.Simplify(ast.Add(lo, lv))})
		idx = append(idx, iv)
	}
	point := func(b *ast.Buffer) ast.Region {
		r := ast.Region{Buffer: b}
		for _, i := range idx {
			r.Ranges = append(r.Ranges, ast.Range{Min: i, Extent: ast.One(i.Type())})
		}
		return r
	}
	blk.Reads = []ast.Region{point(src)}
	blk.Writes = []ast.Region{point(dst)}
	var value ast.Expr = ast.NewLoad(src, idx...)
	if src.DType != dst.DType {
		value = ast.NewCast(dst.DType, value) // rounded once, or widened exactly
	}
	blk.Body = ast.NewStore(dst, value, idx...)
	var nest ast.Stmt = blk
	for i := len(loops) - 1; i >= 0; i-- {
		loops[i].Body = nest
		nest = loops[i]
	}
	return nest, true
}

// replaceBuffer returns block b with every access and region of old
// replaced by new.
func replaceBuffer(b *ast.ScheduleBlock, old, new *ast.Buffer, reads, writes bool) *ast.ScheduleBlock {
	var expr func(e ast.Expr) ast.Expr
	var stmt func(s ast.Stmt) ast.Stmt
	expr = func(e ast.Expr) ast.Expr {
		e = ast.MapChildren(e, stmt, expr)
		if l, ok := e.(*ast.Load); ok && l.Buffer == old && reads {
			return &ast.Load{Buffer: new, Indices: l.Indices}
		}
		return e
	}
	stmt = func(s ast.Stmt) ast.Stmt {
		s = ast.MapChildren(s, stmt, expr)
		if st, ok := s.(*ast.Store); ok && st.Buffer == old && writes {
			return &ast.Store{Buffer: new, Indices: st.Indices, Value: st.Value}
		}
		return s
	}
	c := *b
	if c.Init != nil {
		c.Init = stmt(c.Init)
	}
	c.Body = stmt(c.Body)
	swap := func(rs []ast.Region, on bool) []ast.Region {
		out := slices.Clone(rs)
		for i, r := range out {
			if r.Buffer == old && on {
				out[i].Buffer = new
			}
		}
		return out
	}
	c.Reads = swap(b.Reads, reads)
	c.Writes = swap(b.Writes, writes)
	return &c
}

// findBuffer returns the buffer named name that block b accesses.
func findBuffer(b *ast.ScheduleBlock, name string) *ast.Buffer {
	for _, r := range append(slices.Clone(b.Reads), b.Writes...) {
		if r.Buffer.Name == name {
			return r.Buffer
		}
	}
	return nil
}

// othersTouch returns a leaf block other than b in stmt that accesses buf
// (a block around a nest accesses what the blocks inside it do).
func othersTouch(stmt ast.Stmt, b *ast.ScheduleBlock, buf *ast.Buffer) *ast.ScheduleBlock {
	var found *ast.ScheduleBlock
	ast.Inspect(stmt, func(n ast.Node) bool {
		if c, ok := n.(*ast.ScheduleBlock); ok && c != b && found == nil && !c.HoldsBlock() {
			for _, r := range append(slices.Clone(c.Reads), c.Writes...) {
				if r.Buffer == buf {
					found = c
				}
			}
		}
		return found == nil
	})
	return found
}

// CacheRead makes block b read buffer buf through a cache: a new buffer
// (named after buf and the scope, "A_shared") filled by a new block of that
// name, placed just before the top-level statement holding b, which copies
// the region b reads. b then reads the cache. Move the copy next to its
// use with ComputeAt. scope is "global", "shared" or "local".
//
// b must not write buf, and no other block in b's top-level statement may
// access it (the copy would be stale). CacheRead returns the copy block.
func (s *Schedule) CacheRead(b Block, buf, scope string) (Block, error) {
	return s.cache("cache_read", b, buf, scope, false, ast.Invalid)
}

// CacheWrite makes block b write buffer buf through a cache: b writes (and,
// for a reduction, updates) a new buffer of the given scope ("C_local"),
// and a new block of that name, placed just after the top-level statement
// holding b, copies the region b writes back to buf. Move the copy next to
// b with ReverseComputeAt. No other block in b's top-level statement may
// access buf. CacheWrite returns the copy block.
func (s *Schedule) CacheWrite(b Block, buf, scope string) (Block, error) {
	return s.cache("cache_write", b, buf, scope, true, ast.Invalid)
}

// cache implements CacheRead and (with write) CacheWrite, which mirror
// each other: the copy goes before b and fills the cache from buf, or after
// b and empties the cache into buf. A cache of another type dt than buf's
// (Accumulate; ast.Invalid: buf's) converts in the copies, and b computes
// its update in dt.
func (s *Schedule) cache(prim string, b Block, buf, scope string, write bool, dt ast.DType) (Block, error) {
	blk, at, err := s.block(prim, b)
	if err != nil {
		return Block{}, err
	}
	here := nodes(blk)
	sc, ok := scopes[scope]
	if !ok {
		return Block{}, badArg(prim, s.f, here, "unknown scope %q (want global, shared or local)", scope)
	}
	orig := findBuffer(blk, buf)
	writes := false
	for _, w := range blk.Writes {
		writes = writes || orig != nil && w.Buffer == orig
	}
	switch {
	case write && !writes:
		return Block{}, badArg(prim, s.f, here, "block %s does not write a buffer named %q", blk.Name, buf)
	case !write && (orig == nil || !readsBuffer(blk, orig)):
		return Block{}, badArg(prim, s.f, here, "block %s does not read a buffer named %q", blk.Name, buf)
	case !write && writes:
		return Block{}, illegal(prim, s.f, here, "block %s also writes %s, so a cached copy would go stale", blk.Name, orig.Name)
	case write && readsBuffer(blk, orig) && (blk.Init == nil || !blk.IsUpdate()):
		// Only a reduction whose init writes each element before the
		// block reads it starts from values the cache holds.
		return Block{}, illegal(prim, s.f, here, "block %s reads %s before it writes it (it updates the values already there, with no init), so the cache would start without them", blk.Name, orig.Name)
	}
	if blk.HoldsBlock() {
		return Block{}, notLeaf(prim, s.f, blk)
	}
	top, _ := topLevel(s.f, at)
	if other := othersTouch(top, blk, orig); other != nil {
		return Block{}, illegal(prim, s.f, nodes(blk, other), "block %s also accesses %s next to block %s, so it could see the cache and %s disagree", other.Name, orig.Name, blk.Name, orig.Name)
	}
	p, err := s.model()
	if err != nil {
		return Block{}, illegal(prim, s.f, here, "cannot analyze the function: %v", err)
	}
	box, err := p.Footprint(blk.Name, orig, write)
	if err != nil {
		return Block{}, illegal(prim, s.f, here, "%v", err)
	}
	used := names(s.f)
	if dt == ast.Invalid {
		dt = orig.DType
	}
	cache := &ast.Buffer{Name: fresh(used, orig.Name+"_"+scope), DType: dt, Shape: orig.Shape, Scope: sc}
	blockName := fresh(blockNames(s.f), cache.Name)
	src, dst := orig, cache
	if write {
		src, dst = cache, orig
	}
	nest, ok := copyBlock(s.f, blockName, src, dst, box, used)
	if !ok {
		return Block{}, illegal(prim, s.f, here, "the region of %s that block %s accesses has no bounds", orig.Name, blk.Name)
	}
	cached := replaceBuffer(blk, orig, cache, true, write)
	if dt != orig.DType {
		cached = computeIn(cached, dt)
	}
	g := replace(s.f, blk, cached)
	_, at2, _ := findBlock(g, blk.Name)
	top2, _ := topLevel(g, at2)
	if write {
		g = insertTop(g, top2, false, &ast.Alloc{Buffer: cache})
		if !exactWrites(p.Block(blk.Name), orig) || !box.FillsBox() {
			// The block may write only part of the box it is copied back
			// over (a predicate, a triangle; or a model that is not exact
			// cannot tell): the cache starts as a copy of the buffer
			// there, so the copy back keeps what it does not write.
			fill, _ := copyBlock(s.f, fresh(blockNames(g), cache.Name+"_fill"), orig, cache, box, names(g))
			g = insertTop(g, top2, false, fill)
		}
		g = insertTop(g, top2, true, nest)
	} else {
		g = insertTop(g, top2, false, &ast.Alloc{Buffer: cache}, nest)
	}
	g = ast.SimplifyFunc(g)
	if err := s.commit(prim, g); err != nil {
		return Block{}, err
	}
	out := s.blockHandle(blockName)
	args := []Arg{Ref(b.rv), Str(buf), Str(scope)}
	if dt != orig.DType {
		args = append(args, Str(dt.String()))
	}
	s.record(Inst{Kind: prim, Args: args, Outputs: []string{out.rv}})
	return out, nil
}

// exactWrites reports whether the model of in's writes of buf is exact:
// its domain and every write region of buf affine.
func exactWrites(in *poly.Instances, buf *ast.Buffer) bool {
	if in == nil || !in.ExactDomain {
		return false
	}
	for _, w := range in.Writes {
		if w.Buffer == buf && !w.Exact {
			return false
		}
	}
	return true
}

// replayBlockBufferScope decodes the arguments (block, buffer, scope) of
// cache_read, cache_write and set_scope.
// argBlockLoop reads the (block, loop) arguments of a replayed
// instruction.
func argBlockLoop(args []any) (Block, Loop, error) {
	b, err := argBlock(args[0])
	if err != nil {
		return Block{}, Loop{}, err
	}
	l, err := argLoop(args[1])
	return b, l, err
}

func replayBlockBufferScope(args []any) (Block, string, string, error) {
	b, err := argBlock(args[0])
	if err != nil {
		return Block{}, "", "", err
	}
	buf, err := argString(args[1])
	if err != nil {
		return Block{}, "", "", err
	}
	scope, err := argString(args[2])
	return b, buf, scope, err
}

func init() {
	for _, prim := range []string{"cache_read", "cache_write"} {
		write := prim == "cache_write"
		method := map[bool]string{false: "CacheRead", true: "CacheWrite"}[write]
		register(prim, instKind{
			args: 3,
			replay: func(s *Schedule, args []any) error {
				b, buf, scope, err := replayBlockBufferScope(args)
				if err != nil {
					return err
				}
				_, err = s.cache(prim, b, buf, scope, write, ast.Invalid)
				return err
			},
			goCall: func(args []string) string {
				return fmt.Sprintf("sch.%s(%s, %s, %s)", method, args[0], args[1], args[2])
			},
			outputs: "one",
		})
	}
}
