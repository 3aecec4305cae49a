package schedule

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
)

// maxBlockizeTile bounds the extent of the part of a binding that the
// blockized nest's loops make: far beyond any tile, and small enough that
// the arithmetic of the division stays exact.
const maxBlockizeTile = 1 << 30

// Blockize makes the loop nest at loop l (l and everything inside it) the
// body of a new block, placed where l was, and returns the new block: the
// unit of an intrinsic (TensorizeBlock) or of a later schedule of its own.
// It is TVM's blockize.
//
// The nest must be loops around exactly one block B, nothing else. Each
// binding of B is divided into a part over the loops outside l and a part
// over the nest's loops, binding = outer*c + inner with inner in [0, c):
// the new block, named B_o, gets an iteration variable bound to each outer
// part (of the same kind as B's, over B's domain divided by c, rounded up),
// and B's binding becomes that variable times c plus the inner part. A
// binding over the nest's loops alone keeps its form and needs no
// variable; one over the outer loops alone is all outer (c = 1). The new
// block reads and writes what B does over all the iterations of the nest,
// as regions over its variables. The conjuncts of B's predicate over the
// outer loops alone become the new block's predicate; the others stay on
// B, as does B's init (each instance of B is the same as before).
//
// Blockize refuses a nest with another statement than loops and B, a
// binding that is not such a sum (the nest's loops times constants plus a
// part free of them), an outer part that is not a multiple of c, an inner
// part whose range is not bounded by a constant (a symbolic tile), and a
// loop bound or predicate of the nest over an outer loop that no variable
// of the new block stands for. It changes no instance of B, so it never
// changes what the function computes.
func (s *Schedule) Blockize(l Loop) (Block, error) {
	const prim = "blockize"
	loop, lat, err := s.loop(prim, l)
	if err != nil {
		return Block{}, err
	}
	at := nodes(loop)
	var found []*ast.ScheduleBlock
	ast.Inspect(loop, func(n ast.Node) bool {
		if b, ok := n.(*ast.ScheduleBlock); ok {
			found = append(found, b)
		}
		return true
	})
	switch {
	case len(found) == 0:
		return Block{}, illegal(prim, s.f, at, "loop %s holds no block; blockize needs exactly one", loop.Var.Name)
	case len(found) > 1:
		var names []string
		for _, b := range found {
			names = append(names, b.Name)
		}
		return Block{}, illegal(prim, s.f, append(at, nodes(found...)...), "loop %s holds %d blocks (%s); blockize needs exactly one", loop.Var.Name, len(found), strings.Join(names, ", "))
	}
	blk := found[0]
	at = append(at, blk)
	// The nest: loops down to the block, nothing else.
	var chain []*ast.For
	for st := ast.Stmt(loop); ; {
		switch x := st.(type) {
		case *ast.For:
			chain = append(chain, x)
			st = x.Body
			continue
		case *ast.Seq:
			if len(x.Stmts) == 1 {
				st = x.Stmts[0]
				continue
			}
			return Block{}, illegal(prim, s.f, at, "the nest under loop %s holds a list of %d statements; blockize needs loops around block %s alone", loop.Var.Name, len(x.Stmts), blk.Name)
		case *ast.ScheduleBlock:
		default:
			return Block{}, illegal(prim, s.f, append(at, x), "the nest under loop %s holds %s, which is not a loop; blockize needs loops around block %s alone", loop.Var.Name, stmtKind(x), blk.Name)
		}
		break
	}
	for _, it := range blk.Iters {
		if ast.ContainsLoad(it.Binding) {
			return Block{}, illegal(prim, s.f, at, "the binding of %s in block %s reads a buffer", it.Var.Name, blk.Name)
		}
	}
	if blk.Predicate != nil && ast.ContainsLoad(blk.Predicate) {
		return Block{}, illegal(prim, s.f, at, "the predicate of block %s reads a buffer", blk.Name)
	}

	inNest := map[string]bool{}
	for _, x := range chain {
		inNest[x.Var.Name] = true
	}
	sizes := map[string]bool{}
	nestAndSizes := map[string]bool{}
	for _, v := range s.f.Sizes {
		sizes[v.Name] = true
		nestAndSizes[v.Name] = true
	}
	for name := range inNest {
		nestAndSizes[name] = true
	}
	above := lat.loops()
	above = above[:len(above)-1] // the loops outside l
	// The ranges of the loops outside l, of the iteration variables of the
	// blocks around it, and of the nest's loops: the inner parts are
	// bounded over every iteration of the nest that runs (a loop of the
	// nest may start where an outer loop is), the outer parts over every
	// iteration of the loops outside.
	a := analyzerFor(s.f, above)
	for _, st := range lat[:len(lat)-1] {
		if b, ok := st.(*ast.ScheduleBlock); ok {
			for _, it := range b.Iters {
				a.BindRange(it.Var.Name, it.Dom.Min, it.Dom.Extent)
			}
		}
	}
	for _, x := range chain {
		a.BindRange(x.Var.Name, x.Min, x.Extent)
	}

	used := names(s.f)
	var outerIters []*ast.IterVar
	var guards []ast.Expr
	newBinding := map[string]ast.Expr{} // B's iteration variables, by name
	sub := map[string]ast.Expr{}        // outer variables the new block's variables stand for
	for _, it := range blk.Iters {
		t := it.Var.DType
		e := ast.Simplify(it.Binding)
		if _, outside := invisible(e, nestAndSizes); !outside {
			// All inner: the binding stays, over the nest's loops.
			newBinding[it.Var.Name] = e
			continue
		}
		coefs, rest, ok := linearIn(e, inNest)
		if !ok {
			return Block{}, illegal(prim, s.f, at, "the binding of %s in block %s (%s) is not a sum of the nest's loops times constants and a part free of them, so it cannot be divided into a part outside loop %s and one inside", it.Var.Name, blk.Name, ast.Print(e), loop.Var.Name)
		}
		var c int64 = 1
		inner := ast.Expr(ast.Zero(t))
		outer := e
		if len(coefs) > 0 {
			var innerRaw ast.Expr = ast.Zero(t)
			for _, name := range sortedKeys(coefs) {
				v := nestVar(chain, name)
				innerRaw = ast.Add(innerRaw, ast.Mul(v, ast.IntConst(t, coefs[name])))
			}
			innerRaw = ast.Simplify(innerRaw)
			iv := a.Bound(innerRaw)
			if iv.Min == ast.NegInf || iv.Max == ast.PosInf || iv.Max-iv.Min >= maxBlockizeTile {
				return Block{}, illegal(prim, s.f, at, "the part of the binding of %s in block %s over the nest's loops (%s) has no constant range, so it cannot be divided from the part outside loop %s", it.Var.Name, blk.Name, ast.Print(innerRaw), loop.Var.Name)
			}
			c = iv.Max - iv.Min + 1
			inner = a.Simplify(ast.Sub(innerRaw, ast.IntConst(t, iv.Min))) // inside the nest: a loop of one iteration is its value
			outerRaw := ast.Simplify(ast.Add(rest, ast.IntConst(t, iv.Min)))
			outer = ast.Simplify(ast.FloorDiv(outerRaw, ast.IntConst(t, c)))
			if back := ast.Simplify(ast.Sub(outerRaw, ast.Mul(outer, ast.IntConst(t, c)))); !ast.IsConstInt(back, 0) {
				return Block{}, illegal(prim, s.f, at, "the binding of %s in block %s (%s) is %s outside loop %s plus %s inside, which ranges over %d values: the outer part is not a multiple of %d", it.Var.Name, blk.Name, ast.Print(e), ast.Print(outerRaw), loop.Var.Name, ast.Print(inner), c, c)
			}
		}
		v := ast.NewVar(fresh(used, it.Var.Name+"_o"), t)
		dom := it.Dom
		if c > 1 {
			k := ast.IntConst(t, c)
			if ast.IsConstInt(ast.Simplify(it.Dom.Min), 0) {
				dom = ast.Range{Min: ast.Zero(t), Extent: ast.Simplify(ast.FloorDiv(ast.Add(it.Dom.Extent, ast.IntConst(t, c-1)), k))}
			} else {
				lo := ast.FloorDiv(it.Dom.Min, k)
				hi := ast.FloorDiv(ast.Sub(ast.Add(it.Dom.Min, it.Dom.Extent), ast.One(t)), k)
				dom = ast.Range{Min: ast.Simplify(lo), Extent: ast.Simplify(ast.Add(ast.Sub(hi, lo), ast.One(t)))}
			}
		}
		if it.Kind == ast.Reduce {
			if x := racingLoop(outer, above); x != nil {
				return Block{}, illegal(prim, s.f, append(at, x), "the new block's reduce variable %s would be bound to %s loop %s, whose iterations would race on the reduction", v.Name, x.Kind, x.Var.Name)
			}
		}
		outerIters = append(outerIters, &ast.IterVar{Var: v, Kind: it.Kind, Dom: dom, Binding: outer})
		// The new block's binding lies in its domain wherever B runs; where
		// the loops outside run iterations without B (a tail), a guard
		// keeps it there unless the bounds of those loops prove it.
		end := ast.Add(dom.Min, dom.Extent)
		if !a.CanProve(ast.GE(outer, dom.Min)) {
			guards = append(guards, ast.Simplify(ast.GE(outer, dom.Min)))
		}
		if !a.CanProve(ast.LT(outer, end)) {
			guards = append(guards, ast.Simplify(ast.LT(outer, end)))
		}
		switch {
		case c == 1 && ast.IsConstInt(inner, 0):
			newBinding[it.Var.Name] = v
		default:
			newBinding[it.Var.Name] = ast.Simplify(ast.Add(ast.Mul(v, ast.IntConst(t, c)), inner))
		}
		if x, k, ok := shiftedVar(outer, sizes); ok && sub[x] == nil {
			sub[x] = ast.Simplify(ast.Sub(v, ast.IntConst(t, k)))
		}
	}

	// B's predicate: the conjuncts over the outer loops alone guard the new
	// block; the others stay, their outer variables replaced by the new
	// block's.
	var outerConds []ast.Expr
	var innerPred ast.Expr
	if blk.Predicate != nil {
		for _, c := range conjuncts(blk.Predicate) {
			if !mentionsNames(c, inNest) {
				outerConds = append(outerConds, c)
			} else {
				innerPred = andOf(innerPred, ast.Substitute(c, sub))
			}
		}
	}
	var outerPred ast.Expr
	for _, g := range append(outerConds, guards...) {
		if !slices.ContainsFunc(conjunctsOf(outerPred), func(c ast.Expr) bool { return ast.Equal(ast.Simplify(c), ast.Simplify(g)) }) {
			outerPred = andOf(outerPred, g)
		}
	}
	// The nest rebuilt inside the new block.
	visible := map[string]bool{}
	for name := range sizes {
		visible[name] = true
	}
	for _, it := range outerIters {
		visible[it.Var.Name] = true
	}
	nb := *blk
	nb.Predicate = innerPred
	nb.Iters = make([]*ast.IterVar, len(blk.Iters))
	for i, it := range blk.Iters {
		nb.Iters[i] = &ast.IterVar{Var: it.Var, Kind: it.Kind, Dom: it.Dom, Binding: newBinding[it.Var.Name]}
	}
	newChain := make([]*ast.For, len(chain))
	for i, x := range chain {
		c := *x
		c.Min, c.Extent = ast.Substitute(x.Min, sub), ast.Substitute(x.Extent, sub)
		if name, ok := invisible(c.Min, visible); ok {
			return Block{}, illegal(prim, s.f, append(at, x), "loop %s of the nest starts at %s, over %s outside loop %s, which no iteration variable of the new block stands for", x.Var.Name, ast.Print(x.Min), name, loop.Var.Name)
		}
		if name, ok := invisible(c.Extent, visible); ok {
			return Block{}, illegal(prim, s.f, append(at, x), "loop %s of the nest runs %s times, over %s outside loop %s, which no iteration variable of the new block stands for", x.Var.Name, ast.Print(x.Extent), name, loop.Var.Name)
		}
		visible[x.Var.Name] = true
		newChain[i] = &c
	}
	if innerPred != nil {
		if name, ok := invisible(innerPred, visible); ok {
			return Block{}, illegal(prim, s.f, at, "the predicate of block %s (%s) combines the nest's loops with %s outside loop %s, which no iteration variable of the new block stands for", blk.Name, ast.Print(blk.Predicate), name, loop.Var.Name)
		}
	}
	var body ast.Stmt = &nb
	for i := len(newChain) - 1; i >= 0; i-- {
		newChain[i].Body = body
		body = newChain[i]
	}

	outerBlk := &ast.ScheduleBlock{
		Name:      fresh(used, blk.Name+"_o"),
		Iters:     outerIters,
		Predicate: outerPred,
		Body:      body,
	}
	// Its regions: B's over every iteration of the nest.
	outerBlk.Reads, outerBlk.Writes = nestRegions(s.f, outerBlk)
	g := replace(s.f, loop, outerBlk)
	if err := s.commit(prim, g); err != nil {
		return Block{}, err
	}
	h := s.blockHandle(outerBlk.Name)
	s.record(Inst{Kind: prim, Args: []Arg{Ref(l.rv)}, Outputs: []string{h.rv}})
	return h, nil
}

// conjunctsOf is conjuncts, of nothing for a nil e.
func conjunctsOf(e ast.Expr) []ast.Expr {
	if e == nil {
		return nil
	}
	return conjuncts(e)
}

// stmtKind names a statement for a message.
func stmtKind(s ast.Stmt) string {
	switch s.(type) {
	case *ast.Store:
		return "a store"
	case *ast.IfThenElse:
		return "an if"
	case *ast.Alloc:
		return "an allocation"
	case *ast.Seq:
		return "a statement list"
	}
	return fmt.Sprintf("a %T", s)
}

// linearIn splits the integer expression e into the sum of coefs[x] * x
// over the variables x named in vars and a rest that mentions none of
// them; ok is false when e is not of that form (a product of two of them,
// a division of one).
func linearIn(e ast.Expr, vars map[string]bool) (coefs map[string]int64, rest ast.Expr, ok bool) {
	coefs = map[string]int64{}
	t := e.Type()
	rest = ast.Zero(t)
	var walk func(e ast.Expr, scale int64) bool
	walk = func(e ast.Expr, scale int64) bool {
		if !mentionsNames(e, vars) {
			rest = ast.Add(rest, ast.Mul(e, ast.IntConst(t, scale)))
			return true
		}
		switch x := e.(type) {
		case *ast.Var:
			coefs[x.Name] += scale
			return abs64(coefs[x.Name]) < maxBlockizeTile
		case *ast.Binary:
			switch x.Op {
			case ast.OpAdd:
				return walk(x.A, scale) && walk(x.B, scale)
			case ast.OpSub:
				return walk(x.A, scale) && walk(x.B, -scale)
			case ast.OpMul:
				if c, isConst := ast.ConstIntValue(x.B); isConst && abs64(c) < maxBlockizeTile && abs64(scale*c) < maxBlockizeTile {
					return walk(x.A, scale*c)
				}
				if c, isConst := ast.ConstIntValue(x.A); isConst && abs64(c) < maxBlockizeTile && abs64(scale*c) < maxBlockizeTile {
					return walk(x.B, scale*c)
				}
			}
		}
		return false
	}
	if !walk(e, 1) {
		return nil, nil, false
	}
	for name, c := range coefs {
		if c == 0 {
			delete(coefs, name)
		}
	}
	return coefs, ast.Simplify(rest), true
}

// mentionsNames reports whether n uses one of the variables named in vars.
func mentionsNames(n ast.Node, vars map[string]bool) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if v, ok := n.(*ast.Var); ok && vars[v.Name] {
			found = true
		}
		return !found
	})
	return found
}

// invisible returns the first variable e uses that is not in visible.
func invisible(e ast.Expr, visible map[string]bool) (string, bool) {
	name := ""
	ast.Inspect(e, func(n ast.Node) bool {
		if v, ok := n.(*ast.Var); ok && !visible[v.Name] && name == "" {
			name = v.Name
		}
		return name == ""
	})
	return name, name != ""
}

// shiftedVar matches x + k (k a constant) with x a variable that is not a
// size.
func shiftedVar(e ast.Expr, sizes map[string]bool) (string, int64, bool) {
	var x string
	ast.Inspect(e, func(n ast.Node) bool {
		if v, ok := n.(*ast.Var); ok && !sizes[v.Name] && x == "" {
			x = v.Name
		}
		return true
	})
	if x == "" {
		return "", 0, false
	}
	coefs, rest, ok := linearIn(e, map[string]bool{x: true})
	if !ok || len(coefs) != 1 || coefs[x] != 1 {
		return "", 0, false
	}
	k, ok := ast.ConstIntValue(rest)
	return x, k, ok
}

// nestVar returns the variable of the loop of chain named name.
func nestVar(chain []*ast.For, name string) *ast.Var {
	for _, x := range chain {
		if x.Var.Name == name {
			return x.Var
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// racingLoop returns a loop of loops that e uses whose iterations run at
// once on a CPU or in different GPU blocks, or nil.
func racingLoop(e ast.Expr, loops []*ast.For) *ast.For {
	for _, l := range loops {
		switch k := l.Kind; {
		case k == ast.Parallel, k == ast.Vectorized, k.IsGPUBlock():
			if ast.Mentions(e, l.Var.Name) {
				return l
			}
		}
	}
	return nil
}

func init() {
	register("blockize", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			l, err := argLoop(args[0])
			if err != nil {
				return err
			}
			_, err = s.Blockize(l)
			return err
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.Blockize(%s)", args[0]) },
		outputs: "one",
	})
}
