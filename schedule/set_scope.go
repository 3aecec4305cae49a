package schedule

import (
	"fmt"

	"github.com/loom-go/loom/ast"
)

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
	register("set_scope", instKind{
		args: 3,
		replay: func(s *Schedule, args []any) error {
			b, buf, scope, err := replayBlockBufferScope(args)
			if err != nil {
				return err
			}
			return s.SetScope(b, buf, scope)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.SetScope(%s, %s, %s)", args[0], args[1], args[2]) },
		outputs: "none",
	})
}
