package schedule

import (
	"fmt"
	"math"
	"slices"

	"github.com/loom-go/loom/ast"
)

// RFactor factors the reduction under loop l in two steps (the "two-step
// reduce" of parallel and GPU reductions). The block C computing
// out[s] = out[s] op f over reduce variables becomes:
//
//   - C_rf, which computes partial results into a new buffer out_rf with one
//     more leading dimension, indexed by l: out_rf[l, s] = out_rf[l, s] op f,
//     reducing over the other reduction loops only. Iterations of l no
//     longer depend on each other, so l can then run in parallel.
//   - C (the write-back, keeping the block's name), which reduces the
//     partial results: out[s] = out[s] op out_rf[r, s] for r over l's range,
//     starting from C's original init.
//
// The reduction must be an update out[s] = out[s] op f with op one of +, *,
// max, min, and l must bind only reduce iteration variables. The result can
// differ from the unfactored reduction in floating-point rounding, as
// reassociation does. RFactor returns the C_rf block.
func (s *Schedule) RFactor(l Loop) (Block, error) {
	const prim = "rfactor"
	loop, lat, err := s.loop(prim, l)
	if err != nil {
		return Block{}, err
	}
	var blocks []*ast.ScheduleBlock
	var blockAt place
	walkPlaces(loop, nil, func(st ast.Stmt, p place) bool {
		if b, ok := st.(*ast.ScheduleBlock); ok {
			blocks = append(blocks, b)
			blockAt = p
			return false
		}
		return true
	})
	if len(blocks) != 1 {
		return Block{}, illegal(prim, s.f, nodes(loop), "loop %s holds %d blocks; rfactor needs exactly one reduction under it", loop.Var.Name, len(blocks))
	}
	blk := blocks[0]
	here := []ast.Node{blk, loop}
	at := append(append(place(nil), lat[:len(lat)-1]...), blockAt...) // the block's place in the function
	if outer := nestOf(s.f, lat); outer != nil {
		return Block{}, inNest(prim, s.f, loop, outer)
	}
	if err := leafAtRoot(prim, s.f, blk, at); err != nil {
		return Block{}, err
	}
	if !blk.IsReduction() || blk.Init == nil {
		return Block{}, illegal(prim, s.f, here, "block %s is not a reduction with an init", blk.Name)
	}
	st := singleStore(blk)
	if st == nil {
		return Block{}, illegal(prim, s.f, here, "the body of block %s is not a single store", blk.Name)
	}
	op, rhs, ok := ast.ReductionUpdate(st)
	if !ok {
		return Block{}, illegal(prim, s.f, here, "block %s does not update %s as %s = %s op f with op one of +, *, max, min", blk.Name, st.Buffer.Name, st.Buffer.Name, st.Buffer.Name)
	}
	// Loops binding reduce variables, and the spatial bindings' loops.
	loopsAbove := at.loops()
	usesLoop := func(e ast.Expr, lp *ast.For) bool { return ast.Mentions(e, lp.Var.Name) }
	var reduceLoops []*ast.For
	for _, lp := range loopsAbove {
		spatial, reduce := false, false
		for _, it := range blk.Iters {
			if usesLoop(it.Binding, lp) {
				if it.Kind == ast.Reduce {
					reduce = true
				} else {
					spatial = true
				}
			}
		}
		if spatial && reduce {
			return Block{}, illegal(prim, s.f, []ast.Node{blk, lp}, "loop %s binds both spatial and reduce variables of block %s", lp.Var.Name, blk.Name)
		}
		if reduce {
			reduceLoops = append(reduceLoops, lp)
		}
	}
	if !slices.Contains(reduceLoops, loop) {
		return Block{}, illegal(prim, s.f, here, "loop %s binds no reduce variable of block %s", loop.Var.Name, blk.Name)
	}
	// A tail (the predicate depends on l): some slots of the rf buffer
	// may get no term at all. Their init then cannot wait for the first
	// term: the partial results' init becomes a block of its own, before
	// the other reduce loops (as DecomposeReduction makes it), which
	// fills every slot. With no other reduce loop, there is no place
	// for it.
	tail := blk.Predicate != nil && usesLoop(blk.Predicate, loop)
	if tail && len(reduceLoops) == 1 {
		return Block{}, illegal(prim, s.f, here, "the predicate of block %s depends on loop %s (a split's tail) and no other loop reduces: the slots of the rfactor buffer it leaves without a term would never be initialized; split the reduction first and rfactor its inner part", blk.Name, loop.Var.Name)
	}
	if tail {
		// The init covers every slot, so it drops the tail's conjuncts:
		// they may mention l and reduce loops only (a spatial loop's
		// bound there would be dropped with them).
		for _, c := range conjuncts(blk.Predicate) {
			if !usesLoop(c, loop) {
				continue
			}
			for _, lp := range at.loops() {
				if lp != loop && !slices.Contains(reduceLoops, lp) && usesLoop(c, lp) {
					return Block{}, illegal(prim, s.f, []ast.Node{blk, loop, lp}, "the predicate of block %s ties loop %s (a split's tail) to spatial loop %s: the slots of the rfactor buffer it leaves without a term cannot be initialized apart", blk.Name, loop.Var.Name, lp.Var.Name)
				}
			}
		}
	}
	// The rf buffer is sized by l's extent, and the rf block's domains
	// are the reduction loops' ranges: both must be fixed by the sizes
	// alone (a triangle's inner loop, of extent i + 1, is not).
	for _, lp := range reduceLoops {
		for _, e := range []ast.Expr{lp.Min, lp.Extent} {
			if dep := loopVarIn(e, loopsAbove); dep != nil {
				return Block{}, illegal(prim, s.f, []ast.Node{lp, dep}, "the range of loop %s depends on loop %s, so it cannot size the rfactor buffer nor bound a block's domain", lp.Var.Name, dep.Var.Name)
			}
		}
	}
	used := names(s.f)
	t := loop.Var.DType
	// The rf buffer: [extent of l] + the output's shape.
	rfBuf := &ast.Buffer{Name: fresh(used, st.Buffer.Name+"_rf"), DType: st.Buffer.DType, Shape: append([]ast.Expr{loop.Extent}, st.Buffer.Shape...)}
	// The rf block's iteration variables: the spatial ones, vl for l, and a
	// reduce variable per other reduction loop; the old reduce variables
	// become expressions of these.
	rf := &ast.ScheduleBlock{Name: fresh(blockNames(s.f), blk.Name+"_rf"), Predicate: blk.Predicate}
	vl := ast.NewVar(fresh(used, "v"+loop.Var.Name), t)
	loopIter := map[string]ast.Expr{loop.Var.Name: vl}
	rf.Iters = append(rf.Iters, &ast.IterVar{Var: vl, Kind: ast.Spatial, Dom: ast.Range{Min: loop.Min, Extent: loop.Extent}, Binding: loop.Var})
	for _, it := range blk.Iters {
		if it.Kind == ast.Spatial {
			rf.Iters = append(rf.Iters, it)
		}
	}
	for _, lp := range reduceLoops {
		if lp == loop {
			continue
		}
		v := ast.NewVar(fresh(used, "v"+lp.Var.Name), lp.Var.DType)
		loopIter[lp.Var.Name] = v
		rf.Iters = append(rf.Iters, &ast.IterVar{Var: v, Kind: ast.Reduce, Dom: ast.Range{Min: lp.Min, Extent: lp.Extent}, Binding: lp.Var})
	}
	oldReduce := map[string]ast.Expr{}
	for _, it := range blk.Iters {
		if it.Kind == ast.Reduce {
			oldReduce[it.Var.Name] = ast.Simplify(ast.Substitute(it.Binding, loopIter))
		}
	}
	spatialIdx := st.Indices
	rfIdx := append([]ast.Expr{vl}, spatialIdx...)
	f := ast.Substitute(rhs, oldReduce)
	rfLoad := ast.NewLoad(rfBuf, rfIdx...)
	rf.Init = ast.NewStore(rfBuf, identity(op, st.Buffer.DType), rfIdx...)
	rf.Body = ast.NewStore(rfBuf, combineOp(op, rfLoad, f), rfIdx...)
	loads := []*ast.Load{rfLoad}
	if !rf.IsReduction() {
		// l was the only reduction loop: each partial result is one term.
		rf.Init, rf.Body, loads = nil, ast.NewStore(rfBuf, f, rfIdx...), nil
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if ld, ok := n.(*ast.Load); ok {
			loads = append(loads, ld)
		}
		return true
	})
	rf.Reads = ast.RegionsOf(loads)
	rf.Writes = []ast.Region{pointRegion(rfBuf, rfIdx)}

	// The write-back block: the output combined with the partial results,
	// a reduction over l's range.
	wb := &ast.ScheduleBlock{Name: blk.Name, Init: blk.Init}
	rv := ast.NewVar(fresh(used, "v"+loop.Var.Name+"_r"), t)
	rl := ast.NewVar(fresh(used, loop.Var.Name+"_wb"), t)
	out := ast.NewLoad(st.Buffer, spatialIdx...)
	part := ast.NewLoad(rfBuf, append([]ast.Expr{rv}, spatialIdx...)...)
	wb.Body = ast.NewStore(st.Buffer, combineOp(op, out, part), spatialIdx...)
	wb.Reads = ast.RegionsOf([]*ast.Load{out, part})
	wb.Writes = []ast.Region{pointRegion(st.Buffer, spatialIdx)}
	reduceOverL := func(body ast.Stmt) ast.Stmt {
		return &ast.For{Var: rl, Min: loop.Min, Extent: loop.Extent, Body: body}
	}

	// Where no term is summed at all (a reduce loop of symbolic extent at
	// 0) the write-back still runs: the partial results hold the identity
	// (their init runs for every slot, ast.InitEmptyReductions), so the
	// output gets the empty reduction's value.

	g := replace(s.f, blk, rf)
	_, rfAt, _ := findBlock(g, rf.Name)
	top, _ := topLevel(g, rfAt)
	g = insertTop(g, top, false, &ast.Alloc{Buffer: rfBuf})

	// Where the reduction starts: the outermost loop binding a reduce
	// variable. If the spatial variables depend only on the loops outside
	// it, the write-back goes right after it, under those loops, before
	// anything that follows in them (a consumer computed at them).
	rfLoops := rfAt.loops() // loops of g: copies of s.f's, known by name
	first := slices.IndexFunc(rfLoops, func(lp *ast.For) bool {
		return slices.ContainsFunc(reduceLoops, func(r *ast.For) bool { return r.Var.Name == lp.Var.Name })
	})
	local := first >= 0
	for _, it := range blk.Iters {
		if it.Kind != ast.Spatial {
			continue
		}
		for _, lp := range rfLoops[max(first, 0):] {
			if usesLoop(it.Binding, lp) {
				local = false
			}
		}
	}
	if local && blk.Predicate != nil {
		// A conjunct over loops on both sides of the reduction's start (the
		// tail of a split of a loop fused from spatial and reduce parts)
		// has no part over the outer loops alone that the write-back could
		// keep: under them it would run for spatial values outside their
		// domain. It gets loops of its own over the spatial domains.
		for _, c := range conjuncts(blk.Predicate) {
			inner := slices.ContainsFunc(rfLoops[first:], func(lp *ast.For) bool { return usesLoop(c, lp) })
			outer := slices.ContainsFunc(rfLoops[:first], func(lp *ast.For) bool { return usesLoop(c, lp) })
			if inner && outer {
				local = false
			}
		}
	}
	if local {
		for _, it := range blk.Iters {
			if it.Kind == ast.Spatial {
				wb.Iters = append(wb.Iters, it)
			}
		}
		wb.Iters = append(wb.Iters, &ast.IterVar{Var: rv, Kind: ast.Reduce, Dom: ast.Range{Min: loop.Min, Extent: loop.Extent}, Binding: rl})
		// The write-back shares the loops outside the reduction, so it
		// keeps the parts of the predicate over them (a split spatial
		// loop's tail): an output the block never wrote stays unwritten.
		if blk.Predicate != nil {
			for _, c := range conjuncts(blk.Predicate) {
				if !slices.ContainsFunc(rfLoops[first:], func(lp *ast.For) bool { return usesLoop(c, lp) }) {
					wb.Predicate = andOf(wb.Predicate, c)
				}
			}
		}
		anchor := rfLoops[first]
		g = replace(g, anchor, &ast.Seq{Stmts: []ast.Stmt{anchor, reduceOverL(wb)}})
	} else {
		// Otherwise the write-back gets loops of its own over the spatial
		// domains, after the whole nest; nothing else in the nest may
		// touch the output then.
		if other := othersTouch(top, blk, st.Buffer); other != nil {
			return Block{}, illegal(prim, s.f, []ast.Node{blk, other}, "block %s also accesses %s in the nest of %s, and the write-back of the partial results would come after it", other.Name, st.Buffer.Name, blk.Name)
		}
		var wbLoops []*ast.For
		for _, it := range blk.Iters {
			if it.Kind != ast.Spatial {
				continue
			}
			lv := ast.NewVar(fresh(used, it.Var.Name+"_wb"), it.Var.DType)
			wbLoops = append(wbLoops, &ast.For{Var: lv, Min: it.Dom.Min, Extent: it.Dom.Extent})
			wb.Iters = append(wb.Iters, &ast.IterVar{Var: it.Var, Kind: ast.Spatial, Dom: it.Dom, Binding: lv})
		}
		wb.Iters = append(wb.Iters, &ast.IterVar{Var: rv, Kind: ast.Reduce, Dom: ast.Range{Min: loop.Min, Extent: loop.Extent}, Binding: rl})
		wbNest := reduceOverL(wb)
		for i := len(wbLoops) - 1; i >= 0; i-- {
			wbLoops[i].Body = wbNest
			wbNest = wbLoops[i]
		}
		g = insertTop(g, top, true, wbNest)
	}
	if tail {
		// The partial results' init before the outermost other reduce
		// loop, over every slot.
		rfBlk, at2, _ := findBlock(g, rf.Name)
		var outer *ast.For
		for _, lp := range at2.loops() {
			if lp.Var.Name != loop.Var.Name && slices.ContainsFunc(reduceLoops, func(r *ast.For) bool { return r.Var.Name == lp.Var.Name }) {
				outer = lp
				break
			}
		}
		if outer == nil {
			return Block{}, &Error{Primitive: prim, Reason: "internal error: no reduce loop to put the partial results' init before", Func: s.f, At: here, Kind: ErrInternal}
		}
		var err error
		rfLoop, _, _ := findLoop(g, loop.Var.Name)
		if g, _, err = decomposeInit(prim, g, rfBlk, at2, outer, rfLoop); err != nil {
			return Block{}, err
		}
	}
	g = ast.SimplifyFunc(g)
	if err := s.commit(prim, g); err != nil {
		return Block{}, err
	}
	h := s.blockHandle(rf.Name)
	s.record(Inst{Kind: prim, Args: []Arg{Ref(l.rv)}, Outputs: []string{h.rv}})
	return h, nil
}

// identity returns the neutral element of op for type t.
func identity(op ast.BinaryOp, t ast.DType) ast.Expr {
	switch op {
	case ast.OpMul:
		return ast.One(t)
	case ast.OpMax:
		if t.IsFloat() {
			return ast.FloatConst(t, math.Inf(-1))
		}
		if t == ast.Int32 {
			return ast.IntConst(t, math.MinInt32)
		}
		return ast.IntConst(t, math.MinInt64)
	case ast.OpMin:
		if t.IsFloat() {
			return ast.FloatConst(t, math.Inf(1))
		}
		if t == ast.Int32 {
			return ast.IntConst(t, math.MaxInt32)
		}
		return ast.IntConst(t, math.MaxInt64)
	}
	return ast.Zero(t)
}

// andOf returns a && b, or b when a is nil.
func andOf(a, b ast.Expr) ast.Expr {
	if a == nil {
		return b
	}
	return &ast.Binary{Op: ast.OpAnd, A: a, B: b}
}

func combineOp(op ast.BinaryOp, a, b ast.Expr) ast.Expr { return &ast.Binary{Op: op, A: a, B: b} }

func pointRegion(b *ast.Buffer, idx []ast.Expr) ast.Region {
	r := ast.Region{Buffer: b}
	for _, i := range idx {
		r.Ranges = append(r.Ranges, ast.Range{Min: i, Extent: ast.One(i.Type())})
	}
	return r
}

func init() {
	register("rfactor", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			l, err := argLoop(args[0])
			if err != nil {
				return err
			}
			_, err = s.RFactor(l)
			return err
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.RFactor(%s)", args[0]) },
		outputs: "one",
	})
}

// loopVarIn returns the first of loops whose variable e mentions, or nil.
func loopVarIn(e ast.Expr, loops []*ast.For) *ast.For {
	for _, l := range loops {
		if ast.Mentions(e, l.Var.Name) {
			return l
		}
	}
	return nil
}
