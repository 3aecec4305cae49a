package schedule

import (
	"fmt"
	"slices"

	"github.com/loom-go/loom/ast"
)

// DecomposeReduction moves the init of reduction block b into a block of
// its own, b_init, placed just before loop l, which must hold every loop
// that binds a reduce variable of b. The new block repeats the loops
// between l and b that bind spatial variables, so each output element is
// initialized once, before its first update; b keeps only its update. Code
// generators need this to vectorize or parallelize the initialization.
func (s *Schedule) DecomposeReduction(b Block, l Loop) (Block, error) {
	const prim = "decompose_reduction"
	blk, at, err := s.block(prim, b)
	if err != nil {
		return Block{}, err
	}
	loop, lat, err := s.loop(prim, l)
	if err != nil {
		return Block{}, err
	}
	if err := leafAtRoot(prim, s.f, blk, at); err != nil {
		return Block{}, err
	}
	if outer := nestOf(s.f, lat); outer != nil {
		return Block{}, inNest(prim, s.f, loop, outer)
	}
	here := []ast.Node{blk, loop}
	if blk.Init == nil {
		return Block{}, illegal(prim, s.f, here, "block %s has no init to decompose", blk.Name)
	}
	g, initName, err := decomposeInit(prim, s.f, blk, at, loop, nil)
	if err != nil {
		return Block{}, err
	}
	if err := s.commit(prim, g); err != nil {
		return Block{}, err
	}
	h := s.blockHandle(initName)
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv), Ref(l.rv)}, Outputs: []string{h.rv}})
	return h, nil
}

// decomposeInit returns f with the init of reduction block blk (at place
// at) moved into a block of its own before loop, and that block's name:
// DecomposeReduction's transformation, which RFactor also makes of the
// partial results' block when a tail leaves some of them without an
// update. The init covers every iteration of loop whole (when not nil):
// the conjuncts of blk's predicate that mention it are dropped.
func decomposeInit(prim string, f *ast.Func, blk *ast.ScheduleBlock, at place, loop, whole *ast.For) (*ast.Func, string, error) {
	here := []ast.Node{blk, loop}
	loops := at.loops()
	k := slices.Index(loops, loop)
	if k < 0 {
		return nil, "", illegal(prim, f, here, "loop %s is not around block %s", loop.Var.Name, blk.Name)
	}
	uses := func(e ast.Expr, lp *ast.For) bool { return ast.Mentions(e, lp.Var.Name) }
	bindsReduce := func(lp *ast.For) bool {
		for _, it := range blk.Iters {
			if it.Kind == ast.Reduce && uses(it.Binding, lp) {
				return true
			}
		}
		return false
	}
	for _, lp := range loops[:k] {
		if bindsReduce(lp) {
			return nil, "", illegal(prim, f, []ast.Node{blk, loop, lp}, "loop %s, outside loop %s, binds a reduce variable of block %s: the init would run before updates that precede it", lp.Var.Name, loop.Var.Name, blk.Name)
		}
	}
	// The init moves before loop: another block under it that writes
	// what the init writes (a cache's fill) would overwrite the init's
	// values before the update reads them, and one that reads them would
	// see the init's values where it saw others.
	for _, w := range blk.Writes {
		writers, readers := accessors(f, w.Buffer)
		for _, other := range append(writers, readers...) {
			if other != blk && encloses(loop, other) {
				return nil, "", illegal(prim, f, []ast.Node{blk, loop, other}, "block %s also accesses %s under loop %s: the init, moved before the loop, would change what it reads or be overwritten by it", other.Name, w.Buffer.Name, loop.Var.Name)
			}
		}
	}
	// The spatial loops from l down, repeated for the init.
	used := names(f)
	sub := map[string]ast.Expr{}
	var initLoops []*ast.For
	for _, lp := range loops[k:] {
		if bindsReduce(lp) {
			for _, it := range blk.Iters {
				if it.Kind == ast.Spatial && uses(it.Binding, lp) {
					return nil, "", illegal(prim, f, []ast.Node{blk, lp}, "loop %s binds both spatial and reduce variables of block %s", lp.Var.Name, blk.Name)
				}
			}
			continue
		}
		nv := ast.NewVar(fresh(used, lp.Var.Name+"_init"), lp.Var.DType)
		sub[lp.Var.Name] = nv
		initLoops = append(initLoops, &ast.For{Var: nv, Min: ast.Substitute(lp.Min, sub), Extent: ast.Substitute(lp.Extent, sub)})
	}
	initBlk := &ast.ScheduleBlock{Name: fresh(blockNames(f), blk.Name+"_init")}
	for _, it := range blk.Iters {
		if it.Kind == ast.Spatial {
			initBlk.Iters = append(initBlk.Iters, &ast.IterVar{Var: it.Var, Kind: ast.Spatial, Dom: it.Dom, Binding: ast.Substitute(it.Binding, sub)})
		}
	}
	if blk.Predicate != nil {
		// Keep the conjuncts about spatial loops; one about a reduce loop
		// cannot be kept.
		for _, c := range conjuncts(blk.Predicate) {
			reduce := false
			for _, lp := range loops {
				if bindsReduce(lp) && uses(c, lp) {
					reduce = true
				}
			}
			if reduce || whole != nil && uses(c, whole) {
				continue
			}
			c = ast.Substitute(c, sub)
			if initBlk.Predicate == nil {
				initBlk.Predicate = c
			} else {
				initBlk.Predicate = ast.And(initBlk.Predicate, c)
			}
		}
	}
	// The init runs for every element the spatial loops reach, also one
	// whose reduce loops run no update (a reduction over an axis of size
	// 0, or a loop bound by a spatial loop, as in a triangle): it holds
	// the init, as the block before decomposition gives it
	// (ast.InitEmptyReductions).
	initBlk.Body = blk.Init
	var loads []*ast.Load
	ast.Inspect(blk.Init, func(n ast.Node) bool {
		if ld, ok := n.(*ast.Load); ok {
			loads = append(loads, ld)
		}
		return true
	})
	initBlk.Reads = ast.RegionsOf(loads)
	initBlk.Writes = blk.Writes
	var nest ast.Stmt = initBlk
	for i := len(initLoops) - 1; i >= 0; i-- {
		initLoops[i].Body = nest
		nest = initLoops[i]
	}
	nb := *blk
	nb.Init = nil
	g := replace(f, blk, &nb)
	loop2, _, _ := findLoop(g, loop.Var.Name)
	g = replace(g, loop2, &ast.Seq{Stmts: []ast.Stmt{nest, loop2}})
	return ast.SimplifyFunc(g), initBlk.Name, nil
}

// encloses reports whether block b is in the body of loop l.
func encloses(l *ast.For, b *ast.ScheduleBlock) bool {
	found := false
	ast.Inspect(l.Body, func(n ast.Node) bool {
		if n == ast.Node(b) {
			found = true
		}
		return !found
	})
	return found
}

// conjuncts splits a && b && ... into its parts.
func conjuncts(e ast.Expr) []ast.Expr {
	if b, ok := e.(*ast.Binary); ok && b.Op == ast.OpAnd {
		return append(conjuncts(b.A), conjuncts(b.B)...)
	}
	return []ast.Expr{e}
}

func init() {
	register("decompose_reduction", instKind{
		args: 2,
		replay: func(s *Schedule, args []any) error {
			b, l, err := argBlockLoop(args)
			if err != nil {
				return err
			}
			_, err = s.DecomposeReduction(b, l)
			return err
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.DecomposeReduction(%s, %s)", args[0], args[1]) },
		outputs: "one",
	})
}
