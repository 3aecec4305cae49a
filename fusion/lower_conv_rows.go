package fusion

import "github.com/loom-go/loom/ast"

// Convolutions over short rows, on the grid of the padded input's rows.
//
// A 3x3 convolution over a 14x14 image runs its output a row of 14 at a
// time: a vector of 16 lanes holds one row and a seventh of its work is
// lost, or (as codegen/llvm emits 14 lanes, 8 + 4 + 2) it takes three
// instructions where one would do. The output's rows cannot be fused
// into one loop as a 1x1 convolution's are (fuseRows), because the
// padded input's rows are longer than the output's: the pixels of two
// output rows are not neighbours in the input.
//
// convOnRows computes the output on the input's grid instead. With the
// padded image laid out in rows of Wq (the padded width), output pixel
// (k, l) at tap (rh, rw) reads input element (k + rh)*Wq + (l + rw): so
// with p = k*Wq + l the convolution reads element p + rh*Wq + rw, a
// contiguous run of p for every tap, and p runs over Ho*Wq pixels in one
// loop, Wq - Wo of each Wq junk columns that the output never reads (2 of
// 16 at 14x14). The buffer holds a slack of zeros past its last row for
// the junk columns' taps.
//
// A stride s splits the padded image into s*s phases, phase (a, b) the
// pixels (s*i + a, s*j + b), each in rows of Wq = ceil(Wp/s): tap (rh,
// rw) reads phase (rh mod s, rw mod s) at (k + rh div s, l + rw div s),
// again p + (rh div s)*Wq + (rw div s), contiguous in p (with a dilation
// d, the tap is at rh*d).
//
// The output is then a view of the result: out[n, f, k, l] = T[n, f,
// k*Wq + l]. The pixels run on to a whole number of cache lines (16
// float32s, which every vector width divides), so that no tile of them
// is a short tail: 7x7 on rows of 9 is 63 pixels, computed as 64.

// rowGrid is the geometry of a convolution computed on its input's grid.
type rowGrid struct {
	s, d       [2]int64 // stride and dilation, along rows and columns
	ho, wo, wq int64    // output rows and columns; columns of the grid
	hq         int64    // rows of a phase
	pixels     int64    // pixels computed: ho*wq and on to a whole cache line
	length     int64    // elements of a phase, with the slack
}

// convRows returns the grid for conv node n when it is worth it: a 2-d
// convolution without groups over constant spatial sizes whose output
// rows are short and no whole number of vectors (fewer than 32, not 16),
// and which is not a 1x1 convolution of stride 1 without padding (whose
// rows fuse as they are).
func convRows(n *Node, geo window) (rowGrid, bool) {
	var g rowGrid
	x, w, t := n.Inputs[0], n.Inputs[1], n.Output
	if n.Op != "conv2d" || layoutOf(n).last || geo.groups != 1 || len(x.Shape) != 4 || len(w.Shape) != 4 || len(t.Shape) != 4 {
		return g, false
	}
	var dims [6]int64 // H, W, KH, KW, Ho, Wo
	for i, d := range []Dim{x.Shape[2], x.Shape[3], w.Shape[2], w.Shape[3], t.Shape[2], t.Shape[3]} {
		v, ok := d.IsConst()
		if !ok || v < 1 {
			return g, false
		}
		dims[i] = v
	}
	h, wd, kh, kw, ho, wo := dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]
	pointwise := kh == 1 && kw == 1 && geo.strides[0] == 1 && geo.strides[1] == 1
	for _, p := range geo.pads {
		pointwise = pointwise && p == 0
	}
	if pointwise || wo >= 32 || wo%16 == 0 {
		return g, false
	}
	g.s = [2]int64{geo.strides[0], geo.strides[1]}
	g.d = [2]int64{geo.dilations[0], geo.dilations[1]}
	hp, wp := h+geo.pads[0]+geo.pads[2], wd+geo.pads[1]+geo.pads[3]
	g.ho, g.wo = ho, wo
	g.hq, g.wq = ceilDiv(hp, g.s[0]), ceilDiv(wp, g.s[1])
	line := max(64/int64(t.DType.Bytes()), 1)
	g.pixels = ceilDiv(ho*g.wq, line) * line
	// The last tap of the last pixel computed, junk included.
	last := g.pixels - 1 + (kh-1)*g.d[0]/g.s[0]*g.wq + (kw-1)*g.d[1]/g.s[1]
	g.length = max(g.hq*g.wq, last+1)
	return g, true
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// convOnRows lowers conv node n on the grid g (see above).
func (l *lowerer) convOnRows(n *Node, geo window, g rowGrid) {
	xin, w, t := n.Inputs[0], n.Inputs[1], n.Output
	i32 := func(v int64) ast.Expr { return ast.I32(int32(v)) }
	h, wd := l.dim(xin.Shape[2]), l.dim(xin.Shape[3])
	pt, pl := geo.pads[0], geo.pads[1]
	// The phases of the padded input, each a run of rows of wq.
	gx := l.val[xin]
	phases := g.s[0] * g.s[1]
	planes := l.b.Compute(l.fresh(t.Name+"_rows"), []ast.Expr{l.dim(xin.Shape[0]), l.dim(xin.Shape[1]), i32(phases), i32(g.length)}, func(i []ast.Expr) ast.Expr {
		a, b := ast.FloorDiv(i[2], i32(g.s[1])), ast.FloorMod(i[2], i32(g.s[1]))
		row := ast.Add(ast.Mul(ast.FloorDiv(i[3], i32(g.wq)), i32(g.s[0])), a)
		col := ast.Add(ast.Mul(ast.FloorMod(i[3], i32(g.wq)), i32(g.s[1])), b)
		hh, ww := ast.Sub(row, i32(pt)), ast.Sub(col, i32(pl))
		inside := ast.And(ast.And(ast.GE(hh, i32(0)), ast.LT(hh, h)), ast.And(ast.GE(ww, i32(0)), ast.LT(ww, wd)))
		clamp := func(e, ext ast.Expr) ast.Expr { return ast.Min(ast.Max(e, i32(0)), ast.Sub(ext, i32(1))) }
		return ast.NewSelect(inside, gx([]ast.Expr{i[0], i[1], clamp(hh, h), clamp(ww, wd)}), ast.Zero(t.DType))
	})
	var names []string
	for d := range 4 {
		names = append(names, l.fresh(axisLetter(d)+"_"+planes.Buffer.Name))
	}
	planes.AxisNames(names...)

	gw := l.val[w]
	rc := l.b.ReduceAxis(l.fresh("rc_"+t.Name), l.dim(w.Shape[1]))
	rh := l.b.ReduceAxis(l.fresh("rh_"+t.Name), l.dim(w.Shape[2]))
	rw := l.b.ReduceAxis(l.fresh("rw_"+t.Name), l.dim(w.Shape[3]))
	// Tap r along an axis of stride s and dilation d: phase r*d mod s,
	// shift r*d div s.
	phase := func(r *ast.Var, s, d int64) (ast.Expr, ast.Expr) {
		var at ast.Expr = r
		if d != 1 {
			at = ast.Mul(at, i32(d))
		}
		if s == 1 {
			return i32(0), at
		}
		return ast.FloorMod(at, i32(s)), ast.FloorDiv(at, i32(s))
	}
	grid := l.b.Sum(l.fresh(t.Name+"_grid"), []ast.Expr{l.dim(t.Shape[0]), l.dim(t.Shape[1]), i32(g.pixels)}, []*ast.Var{rc, rh, rw}, func(i []ast.Expr) ast.Expr {
		ah, sh := phase(rh, g.s[0], g.d[0])
		aw, sw := phase(rw, g.s[1], g.d[1])
		ph := ast.Add(ast.Mul(ah, i32(g.s[1])), aw)
		at := ast.Add(ast.Add(i[2], ast.Mul(sh, i32(g.wq))), sw)
		return ast.Mul(planes.At(i[0], rc, ph, at), gw([]ast.Expr{i[1], rc, rh, rw}))
	})
	grid.AxisNames(l.fresh("i_"+grid.Buffer.Name), l.fresh("j_"+grid.Buffer.Name), l.fresh("p_"+grid.Buffer.Name))
	out := l.b.Compute(t.Name, l.shape(t.Shape), func(i []ast.Expr) ast.Expr {
		return grid.At(i[0], i[1], ast.Add(ast.Mul(i[2], i32(g.wq)), i[3]))
	})
	l.store(t, out)
}
