package schedule

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-go/loom/ast"
)

// TransformLayout stores the temporary buffer named buf, which block b
// accesses, in another layout (TVM's transform_layout): layout is an index
// map from the buffer's indices to those of the new layout, written as
//
//	n, c, h, w -> n, floordiv(c, 16), h, w, floormod(c, 16)
//
// (NCHW to NCHW16c), "k, j -> floordiv(j, 16), k, floormod(j, 16)" (a
// matrix in panels of 16 columns) or "n, c, h, w -> n, h, w, c" (NHWC).
// Every load, store and region of the buffer, in every block, is
// rewritten through the map, and the buffer gets the new shape.
//
// Each new index is one of the old indices, or floordiv and floormod of one
// by the same positive constant (both must appear): the maps of that form
// are exactly the permutations of splits, which are one-to-one, and whose
// inverse tells which cells are padding. Any other map is refused with the
// reason (an index left out or used twice would make two cells share a
// place). A split whose factor does not divide its extent pads the buffer
// (100 channels in blocks of 16 take 112 places); TransformLayout refuses
// it, TransformLayoutPadded fills the padding with a value.
//
// A parameter keeps the layout its caller gives: read it through
// CacheRead (or write it through CacheWrite) and transform the cache, which
// makes the copy a packing stage.
func (s *Schedule) TransformLayout(b Block, buf, layout string) error {
	return s.transformLayout(b, buf, layout, nil)
}

// TransformLayoutPadded is TransformLayout for a layout that may pad the
// buffer: the cells of the new layout that hold no cell of the old one are
// written with fill (converted to the buffer's type) by new blocks named
// after the buffer ("A_pad", "A_pad_1": one per split dimension, over its
// last quotient), placed right after the buffer's declaration, so that a
// kernel that reads whole blocks of the new layout reads defined values.
// Without padding it is TransformLayout.
func (s *Schedule) TransformLayoutPadded(b Block, buf, layout string, fill float64) error {
	return s.transformLayout(b, buf, layout, &fill)
}

// layoutDim is one dimension of a new layout: an old dimension kept whole,
// or the quotient or remainder of one split by a factor.
type layoutDim struct {
	src    int   // the old dimension
	factor int64 // 0: kept whole
	inner  bool  // the remainder (floormod); otherwise the quotient
}

// indexMap is a parsed layout: the old indices and the new dimensions.
type indexMap struct {
	from []*ast.Var
	to   []ast.Expr
	dims []layoutDim
}

func (s *Schedule) transformLayout(b Block, buf, layout string, fill *float64) error {
	const prim = "transform_layout"
	blk, _, err := s.block(prim, b)
	if err != nil {
		return err
	}
	here := nodes(blk)
	target := findBuffer(blk, buf)
	if target == nil {
		return badArg(prim, s.f, here, "block %s does not access a buffer named %q", blk.Name, buf)
	}
	if isParam(s.f, target) {
		return illegal(prim, s.f, here, "%s is a parameter of the function, whose layout its caller gives; read it through cache_read (or write it through cache_write) and transform the cache", target.Name)
	}
	m, err := parseLayout(layout, target)
	if err != nil {
		return badArg(prim, s.f, here, "layout %q of %s: %v", layout, target.Name, err)
	}
	if fill != nil {
		// Traces are JSON, which has no infinities or NaN; an integer
		// buffer takes a whole number it can hold, a bool one 0 or 1.
		lo, hi := float64(-(1 << 53)), float64(1<<53)
		switch target.DType {
		case ast.Int32:
			lo, hi = math.MinInt32, math.MaxInt32
		case ast.Bool:
			lo, hi = 0, 1
		}
		switch f := *fill; {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return badArg(prim, s.f, here, "fill %g: want a finite number", f)
		case !target.DType.IsFloat() && (f != math.Trunc(f) || f < lo || f > hi):
			return badArg(prim, s.f, here, "fill %g: %s holds %s, whole numbers from %g to %g", f, target.Name, target.DType, lo, hi)
		}
	}
	shape, padded := m.shape(target)
	if padded != "" && fill == nil {
		return illegal(prim, s.f, here, "layout %q pads %s (%s); give a fill value for the padding (TransformLayoutPadded)", layout, target.Name, padded)
	}
	nb := &ast.Buffer{Name: target.Name, DType: target.DType, Shape: shape, Scope: target.Scope}
	g := relayout(s.f, target, nb, m)
	if padded != "" {
		g = insertAfterAlloc(g, nb, padBlocks(g, nb, target, m, *fill)...)
	}
	g = ast.SimplifyFunc(g)
	if err := s.commit(prim, g); err != nil {
		return err
	}
	args := []Arg{Ref(b.rv), Str(buf), Str(layout)}
	kind := prim
	if fill != nil {
		kind = "transform_layout_padded"
		args = append(args, Arg{Float: fill})
	}
	s.record(Inst{Kind: kind, Args: args})
	return nil
}

// parseLayout reads "i, j -> e1, e2, ..." for buffer buf: one name per
// dimension of buf on the left, the new indices on the right, each a name
// of the left, or floordiv or floormod of one by a positive constant.
func parseLayout(src string, buf *ast.Buffer) (indexMap, error) {
	left, right, ok := strings.Cut(src, "->")
	if !ok {
		return indexMap{}, fmt.Errorf(`want "old indices -> new indices", as in "i, j -> floordiv(j, 16), i, floormod(j, 16)"`)
	}
	var m indexMap
	scope := []ast.Node{}
	seen := map[string]bool{}
	for i, name := range splitTop(left) {
		name = strings.TrimSpace(name)
		if !isIdent(name) {
			return indexMap{}, fmt.Errorf("old index %d (%q) is not a name", i+1, name)
		}
		if seen[name] {
			return indexMap{}, fmt.Errorf("old index %s is named twice", name)
		}
		seen[name] = true
		if i >= buf.Rank() {
			break
		}
		v := ast.NewVar(name, buf.Shape[i].Type())
		m.from = append(m.from, v)
		scope = append(scope, v)
	}
	if n := len(splitTop(left)); n != buf.Rank() {
		return indexMap{}, fmt.Errorf("%d old indices for a buffer of %d dimensions", n, buf.Rank())
	}
	for i, part := range splitTop(right) {
		e, err := ast.ParseExpr(strings.TrimSpace(part), scope...)
		if err != nil {
			return indexMap{}, fmt.Errorf("new index %d (%q): %v", i+1, strings.TrimSpace(part), err)
		}
		d, ok := m.classify(e)
		if !ok {
			return indexMap{}, fmt.Errorf("new index %d (%s) is not an old index, nor floordiv or floormod of one by a constant from 1 to %d", i+1, e, maxLayoutFactor)
		}
		m.to = append(m.to, e)
		m.dims = append(m.dims, d)
	}
	return m, m.oneToOne()
}

// splitTop splits s at the commas outside parentheses and brackets.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// maxLayoutFactor bounds a split's factor: a block of more cells than that
// is no layout a kernel reads, and its padding could be most of memory.
const maxLayoutFactor = 1 << 16

// classify tells which kind of new index e is.
func (m indexMap) classify(e ast.Expr) (layoutDim, bool) {
	index := func(e ast.Expr) (int, bool) {
		v, ok := e.(*ast.Var)
		if !ok {
			return 0, false
		}
		for i, f := range m.from {
			if f.Name == v.Name {
				return i, true
			}
		}
		return 0, false
	}
	if i, ok := index(e); ok {
		return layoutDim{src: i}, true
	}
	bin, ok := e.(*ast.Binary)
	if !ok || bin.Op != ast.OpFloorDiv && bin.Op != ast.OpFloorMod {
		return layoutDim{}, false
	}
	i, ok := index(bin.A)
	c, isConst := ast.ConstIntValue(bin.B)
	if !ok || !isConst || c <= 0 || c > maxLayoutFactor {
		return layoutDim{}, false
	}
	return layoutDim{src: i, factor: c, inner: bin.Op == ast.OpFloorMod}, true
}

// oneToOne checks that every old index is kept whole once, or split once
// into a quotient and a remainder by one factor.
func (m indexMap) oneToOne() error {
	for i, v := range m.from {
		var kept, outer, inner []int64
		for _, d := range m.dims {
			switch {
			case d.src != i:
			case d.factor == 0:
				kept = append(kept, 0)
			case d.inner:
				inner = append(inner, d.factor)
			default:
				outer = append(outer, d.factor)
			}
		}
		uses := len(kept) + len(outer) + len(inner)
		switch {
		case uses == 0:
			return fmt.Errorf("old index %s is not in the new layout, so cells that differ only along it would share a place (the map is not one-to-one)", v.Name)
		case len(kept) == 1 && uses == 1:
		case len(kept) > 0 || len(outer) > 1 || len(inner) > 1:
			return fmt.Errorf("old index %s appears more than once in the new layout, which would hold its cells twice (the map is not onto)", v.Name)
		case len(inner) == 0:
			return fmt.Errorf("floordiv(%s, %d) without floormod(%s, %d): %d cells would share each place", v.Name, outer[0], v.Name, outer[0], outer[0])
		case len(outer) == 0:
			return fmt.Errorf("floormod(%s, %d) without floordiv(%s, %d): the cells %d apart would share a place", v.Name, inner[0], v.Name, inner[0], inner[0])
		case outer[0] != inner[0]:
			return fmt.Errorf("floordiv(%s, %d) and floormod(%s, %d) split %s by different factors", v.Name, outer[0], v.Name, inner[0], v.Name)
		}
	}
	return nil
}

// shape returns the new layout's shape for old, and a description of the
// padding ("" when there is none: every factor divides its extent).
func (m indexMap) shape(old *ast.Buffer) ([]ast.Expr, string) {
	var shape []ast.Expr
	var pads []string
	for _, d := range m.dims {
		e := old.Shape[d.src]
		t := e.Type()
		switch {
		case d.factor == 0:
			shape = append(shape, e)
		case d.inner:
			shape = append(shape, ast.IntConst(t, d.factor))
		default:
			c := ast.IntConst(t, d.factor)
			shape = append(shape, ast.Simplify(ast.FloorDiv(ast.Add(e, ast.IntConst(t, d.factor-1)), c)))
			if !ast.IsConstInt(ast.Simplify(ast.FloorMod(e, c)), 0) {
				pads = append(pads, fmt.Sprintf("dimension %d, %s, in blocks of %d", d.src, e, d.factor))
			}
		}
	}
	return shape, strings.Join(pads, "; ")
}

// apply returns the new indices of the cell at old indices idx.
func (m indexMap) apply(idx []ast.Expr) []ast.Expr {
	sub := map[string]ast.Expr{}
	for i, v := range m.from {
		sub[v.Name] = idx[i]
	}
	out := make([]ast.Expr, len(m.to))
	for i, e := range m.to {
		out[i] = ast.Simplify(ast.Substitute(e, sub))
	}
	return out
}

// region returns a region of the new layout that covers r, a region of the
// old one: a point stays a point; a range of a split dimension covers the
// quotients it spans and every remainder.
func (m indexMap) region(r ast.Region, nb *ast.Buffer) ast.Region {
	out := ast.Region{Buffer: nb}
	for k, d := range m.dims {
		rg := r.Ranges[d.src]
		t := rg.Min.Type()
		switch {
		case d.factor == 0:
			out.Ranges = append(out.Ranges, rg)
		case ast.IsConstInt(ast.Simplify(rg.Extent), 1):
			out.Ranges = append(out.Ranges, ast.Range{Min: m.apply1(k, rg.Min), Extent: ast.One(t)})
		case d.inner:
			out.Ranges = append(out.Ranges, ast.Range{Min: ast.Zero(t), Extent: ast.IntConst(t, d.factor)})
		default:
			c := ast.IntConst(t, d.factor)
			first := ast.FloorDiv(rg.Min, c)
			last := ast.FloorDiv(ast.Sub(ast.Add(rg.Min, rg.Extent), ast.One(t)), c)
			out.Ranges = append(out.Ranges, ast.Range{Min: ast.Simplify(first), Extent: ast.Simplify(ast.Add(ast.Sub(last, first), ast.One(t)))})
		}
	}
	return out
}

// apply1 is the k-th new index of the cell whose old index along that
// dimension's source is x.
func (m indexMap) apply1(k int, x ast.Expr) ast.Expr {
	return ast.Simplify(ast.Substitute(m.to[k], map[string]ast.Expr{m.from[m.dims[k].src].Name: x}))
}

// relayout returns f with buffer old replaced by nb, its declaration, every
// access and every region rewritten through m.
func relayout(f *ast.Func, old, nb *ast.Buffer, m indexMap) *ast.Func {
	var expr func(e ast.Expr) ast.Expr
	var stmt func(s ast.Stmt) ast.Stmt
	expr = func(e ast.Expr) ast.Expr {
		e = ast.MapChildren(e, stmt, expr)
		if l, ok := e.(*ast.Load); ok && l.Buffer == old {
			return &ast.Load{Buffer: nb, Indices: m.apply(l.Indices)}
		}
		return e
	}
	regions := func(rs []ast.Region) []ast.Region {
		out := make([]ast.Region, len(rs))
		for i, r := range rs {
			out[i] = r
			if r.Buffer == old {
				out[i] = m.region(r, nb)
			}
		}
		return out
	}
	stmt = func(s ast.Stmt) ast.Stmt {
		switch x := s.(type) {
		case *ast.Alloc:
			if x.Buffer == old {
				return &ast.Alloc{Buffer: nb}
			}
			return s
		case *ast.ScheduleBlock:
			c := *ast.MapChildren(x, stmt, expr)
			if c.HoldsBlock() {
				// refreshNests recomputes a nest's regions from the blocks
				// inside; until then they only need to cover them.
				c.Reads, c.Writes = regions(c.Reads), regions(c.Writes)
			} else {
				c.Reads, c.Writes = accessRegions(&c, x.Reads, old, nb, false), accessRegions(&c, x.Writes, old, nb, true)
			}
			return &c
		case *ast.Store:
			n := ast.MapChildren(s, stmt, expr).(*ast.Store)
			if n.Buffer == old {
				return &ast.Store{Buffer: nb, Indices: m.apply(n.Indices), Value: n.Value}
			}
			return n
		}
		return ast.MapChildren(s, stmt, expr)
	}
	return ast.MapChildren(f, stmt, expr)
}

// accessRegions returns rs, the regions of leaf block b before the
// rewrite, with those of old replaced by regions of nb covering b's
// accesses of it (stores with write, loads otherwise), each as exact as
// ast.RegionsOf makes it: mapping a range of old through a split would
// cover more than the block touches, and the dependences drawn from
// regions would grow with it.
func accessRegions(b *ast.ScheduleBlock, rs []ast.Region, old, nb *ast.Buffer, write bool) []ast.Region {
	if !slices.ContainsFunc(rs, func(r ast.Region) bool { return r.Buffer == old }) {
		return rs
	}
	var out []ast.Region
	for _, r := range rs {
		if r.Buffer != old {
			out = append(out, r)
		}
	}
	var accesses []*ast.Load
	for _, part := range []ast.Stmt{b.Init, b.Body} {
		if part == nil {
			continue
		}
		ast.Inspect(part, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Load:
				if !write && x.Buffer == nb {
					accesses = append(accesses, x)
				}
			case *ast.Store:
				if write && x.Buffer == nb {
					accesses = append(accesses, &ast.Load{Buffer: nb, Indices: x.Indices})
				}
			}
			return true
		})
	}
	return append(out, ast.RegionsOf(accesses)...)
}

// padBlocks builds the nests that write fill into the cells of nb (the
// new layout of old) that hold no cell of old. A cell is padding when,
// along some split dimension, quotient x factor + remainder reaches the
// old extent, which only the last quotient can: each split dimension gets
// a nest over that quotient alone (no iteration where the factor divides
// the extent), the cells past the extent along it and not along an
// earlier one, so that every padding cell is written once and the
// predicates stay conjunctions.
func padBlocks(f *ast.Func, nb, old *ast.Buffer, m indexMap, fill float64) []ast.Stmt {
	used := names(f)
	taken := blockNames(f)
	var value ast.Expr
	switch {
	case nb.DType.IsFloat():
		value = ast.FloatConst(nb.DType, fill)
	case nb.DType == ast.Bool:
		value = ast.BoolConst(fill != 0)
	default:
		value = ast.IntConst(nb.DType, int64(fill))
	}
	// rem[k] is the dimension holding the remainder of quotient k.
	rem := map[int]int{}
	var quotients []int
	for k, d := range m.dims {
		if d.factor == 0 || d.inner {
			continue
		}
		for r, e := range m.dims {
			if e.src == d.src && e.inner {
				rem[k] = r
			}
		}
		quotients = append(quotients, k)
	}
	var nests []ast.Stmt
	for n, q := range quotients {
		blk := &ast.ScheduleBlock{Name: fresh(taken, nb.Name+"_pad")}
		taken[blk.Name] = true
		var loops []*ast.For
		var idx []ast.Expr
		for k, ext := range nb.Shape {
			t := ext.Type()
			lv := ast.NewVar(fresh(used, "ax"+strconv.Itoa(k)), t)
			used[lv.Name] = true
			iv := ast.NewVar(fresh(used, "v"+strconv.Itoa(k)), t)
			used[iv.Name] = true
			loop := &ast.For{Var: lv, Min: ast.Zero(t), Extent: ext}
			if k == q {
				// The last quotient, where the extent is not a multiple
				// of the factor.
				e, c := old.Shape[m.dims[k].src], ast.IntConst(t, m.dims[k].factor)
				loop.Min = ast.Simplify(ast.FloorDiv(e, c))
				loop.Extent = ast.Simplify(ast.Sub(ext, loop.Min))
			}
			loops = append(loops, loop)
			blk.Iters = append(blk.Iters, &ast.IterVar{Var: iv, Kind: ast.Spatial, Dom: ast.Range{Min: ast.Zero(t), Extent: ext}, Binding: lv})
			idx = append(idx, iv)
		}
		// Predicates see the loops, not the block's variables.
		at := func(k int) ast.Expr {
			t := loops[k].Var.Type()
			return ast.Add(ast.Mul(loops[k].Var, ast.IntConst(t, m.dims[k].factor)), loops[rem[k]].Var)
		}
		var pred ast.Expr = ast.GE(at(q), old.Shape[m.dims[q].src])
		for _, p := range quotients[:n] {
			pred = ast.And(pred, ast.LT(at(p), old.Shape[m.dims[p].src]))
		}
		blk.Predicate = pred
		blk.Writes = []ast.Region{pointRegion(nb, idx)}
		blk.Body = ast.NewStore(nb, value, idx...)
		var nest ast.Stmt = blk
		for i := len(loops) - 1; i >= 0; i-- {
			loops[i].Body = nest
			nest = loops[i]
		}
		nests = append(nests, nest)
	}
	return nests
}

// insertAfterAlloc returns f with add placed right after the declaration
// of buf, in the statement list that holds it.
func insertAfterAlloc(f *ast.Func, buf *ast.Buffer, add ...ast.Stmt) *ast.Func {
	var expr func(e ast.Expr) ast.Expr
	var stmt func(s ast.Stmt) ast.Stmt
	expr = func(e ast.Expr) ast.Expr { return e }
	stmt = func(s ast.Stmt) ast.Stmt {
		if seq, ok := s.(*ast.Seq); ok {
			var list []ast.Stmt
			for _, x := range seq.Stmts {
				list = append(list, stmt(x))
				if a, ok := x.(*ast.Alloc); ok && a.Buffer == buf {
					list = append(list, add...)
				}
			}
			return &ast.Seq{Stmts: list}
		}
		return ast.MapChildren(s, stmt, expr)
	}
	return ast.MapChildren(f, stmt, expr)
}

func init() {
	register("transform_layout", instKind{
		args: 3,
		replay: func(s *Schedule, args []any) error {
			b, buf, layout, err := replayBlockBufferScope(args)
			if err != nil {
				return err
			}
			return s.TransformLayout(b, buf, layout)
		},
		goCall: func(args []string) string {
			return fmt.Sprintf("sch.TransformLayout(%s, %s, %s)", args[0], args[1], args[2])
		},
		outputs: "none",
	})
	register("transform_layout_padded", instKind{
		args: 4,
		replay: func(s *Schedule, args []any) error {
			b, buf, layout, err := replayBlockBufferScope(args[:3])
			if err != nil {
				return err
			}
			fill, ok := args[3].(float64)
			if !ok {
				return fmt.Errorf("the fill value is a %T, not a number", args[3])
			}
			return s.TransformLayoutPadded(b, buf, layout, fill)
		},
		goCall: func(args []string) string {
			return fmt.Sprintf("sch.TransformLayoutPadded(%s, %s, %s, %s)", args[0], args[1], args[2], args[3])
		},
		outputs: "none",
	})
}
