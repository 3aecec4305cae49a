package schedule

import (
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
		lo, ok1 := boundExpr(loB, vars, t)
		hi, ok2 := boundExpr(hiB, vars, t)
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
	blk.Body = ast.NewStore(dst, ast.NewLoad(src, idx...), idx...)
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

// othersTouch returns a block other than b in stmt that accesses buf.
func othersTouch(stmt ast.Stmt, b *ast.ScheduleBlock, buf *ast.Buffer) *ast.ScheduleBlock {
	var found *ast.ScheduleBlock
	ast.Inspect(stmt, func(n ast.Node) bool {
		if c, ok := n.(*ast.ScheduleBlock); ok && c != b && found == nil {
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
