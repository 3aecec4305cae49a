package schedule

import (
	"fmt"

	"github.com/loom-go/loom/ast"
)

// CacheWrite makes block b write buffer buf through a cache: b writes (and,
// for a reduction, updates) a new buffer of the given scope ("C_local"),
// and a new block of that name, placed just after the top-level statement
// holding b, copies the region b writes back to buf. Move the copy next to
// b with ReverseComputeAt. No other block in b's top-level statement may
// access buf. CacheWrite returns the copy block.
func (s *Schedule) CacheWrite(b Block, buf, scope string) (Block, error) {
	const prim = "cache_write"
	blk, at, err := s.block(prim, b)
	if err != nil {
		return Block{}, err
	}
	here := nodes(blk)
	sc, ok := scopes[scope]
	if !ok {
		return Block{}, badArg(prim, s.f, here, "unknown scope %q (want global, shared or local)", scope)
	}
	dst := findBuffer(blk, buf)
	writes := false
	for _, w := range blk.Writes {
		writes = writes || w.Buffer == dst && dst != nil
	}
	if !writes {
		return Block{}, badArg(prim, s.f, here, "block %s does not write a buffer named %q", blk.Name, buf)
	}
	top, _ := topLevel(s.f, at)
	if other := othersTouch(top, blk, dst); other != nil {
		return Block{}, illegal(prim, s.f, nodes(blk, other), "block %s also accesses %s next to block %s, so it would see the cache not yet copied back", other.Name, dst.Name, blk.Name)
	}
	p, err := s.model()
	if err != nil {
		return Block{}, illegal(prim, s.f, here, "cannot analyze the function: %v", err)
	}
	box, err := p.Footprint(blk.Name, dst, true)
	if err != nil {
		return Block{}, illegal(prim, s.f, here, "%v", err)
	}
	used := names(s.f)
	cache := &ast.Buffer{Name: fresh(used, dst.Name+"_"+scope), DType: dst.DType, Shape: dst.Shape, Scope: sc}
	blockName := fresh(blockNames(s.f), cache.Name)
	nest, ok := copyBlock(s.f, blockName, cache, dst, box, used)
	if !ok {
		return Block{}, illegal(prim, s.f, here, "the region of %s that block %s writes has no bounds", dst.Name, blk.Name)
	}
	g := replace(s.f, blk, replaceBuffer(blk, dst, cache, true, true))
	_, at2, _ := findBlock(g, blk.Name)
	top2, _ := topLevel(g, at2)
	g = insertTop(g, top2, false, &ast.Alloc{Buffer: cache})
	g = insertTop(g, top2, true, nest)
	g = ast.SimplifyFunc(g)
	if err := s.commit(prim, g); err != nil {
		return Block{}, err
	}
	out := s.blockHandle(blockName)
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv), Str(buf), Str(scope)}, Outputs: []string{out.rv}})
	return out, nil
}

// SetScope moves the temporary buffer named buf, which block b writes, to
// another storage scope ("global", "shared" or "local"). Parameters stay in
// global memory.
func (s *Schedule) SetScope(b Block, buf, scope string) error {
	const prim = "set_scope"
	blk, _, err := s.block(prim, b)
	if err != nil {
		return err
	}
	here := nodes(blk)
	sc, ok := scopes[scope]
	if !ok {
		return badArg(prim, s.f, here, "unknown scope %q (want global, shared or local)", scope)
	}
	target := findBuffer(blk, buf)
	if target == nil {
		return badArg(prim, s.f, here, "block %s does not access a buffer named %q", blk.Name, buf)
	}
	if isParam(s.f, target) {
		return illegal(prim, s.f, here, "%s is a parameter of the function; parameters live in global memory", target.Name)
	}
	nb := *target
	nb.Scope = sc
	g := rebindBuffer(s.f, target, &nb)
	if err := s.commit(prim, g); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv), Str(buf), Str(scope)}})
	return nil
}

// rebindBuffer returns f with every reference to old (its Alloc, accesses
// and regions) pointing to new.
func rebindBuffer(f *ast.Func, old, new *ast.Buffer) *ast.Func {
	var expr func(e ast.Expr) ast.Expr
	var stmt func(s ast.Stmt) ast.Stmt
	expr = func(e ast.Expr) ast.Expr {
		e = ast.MapChildren(e, stmt, expr)
		if l, ok := e.(*ast.Load); ok && l.Buffer == old {
			return &ast.Load{Buffer: new, Indices: l.Indices}
		}
		return e
	}
	stmt = func(s ast.Stmt) ast.Stmt {
		switch x := s.(type) {
		case *ast.Alloc:
			if x.Buffer == old {
				return &ast.Alloc{Buffer: new}
			}
			return s
		case *ast.ScheduleBlock:
			c := *ast.MapChildren(x, stmt, expr)
			for _, rs := range []*[]ast.Region{&c.Reads, &c.Writes} {
				list := append([]ast.Region(nil), (*rs)...)
				for i := range list {
					if list[i].Buffer == old {
						list[i].Buffer = new
					}
				}
				*rs = list
			}
			return &c
		case *ast.Store:
			n := ast.MapChildren(s, stmt, expr).(*ast.Store)
			if n.Buffer == old {
				return &ast.Store{Buffer: new, Indices: n.Indices, Value: n.Value}
			}
			return n
		}
		return ast.MapChildren(s, stmt, expr)
	}
	return ast.MapChildren(f, stmt, expr)
}

func init() {
	register("cache_write", instKind{
		args: 3,
		replay: func(s *Schedule, args []any) error {
			b, err := argBlock(args[0])
			if err != nil {
				return err
			}
			buf, err := argString(args[1])
			if err != nil {
				return err
			}
			scope, err := argString(args[2])
			if err != nil {
				return err
			}
			_, err = s.CacheWrite(b, buf, scope)
			return err
		},
		goCall: func(args []string) string {
			return fmt.Sprintf("sch.CacheWrite(%s, %s, %s)", args[0], args[1], args[2])
		},
		outputs: "one",
	})
	register("set_scope", instKind{
		args: 3,
		replay: func(s *Schedule, args []any) error {
			b, err := argBlock(args[0])
			if err != nil {
				return err
			}
			buf, err := argString(args[1])
			if err != nil {
				return err
			}
			scope, err := argString(args[2])
			if err != nil {
				return err
			}
			return s.SetScope(b, buf, scope)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.SetScope(%s, %s, %s)", args[0], args[1], args[2]) },
		outputs: "none",
	})
}
