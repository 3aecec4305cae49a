package schedule

import (
	"fmt"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Fuse replaces a perfect nest of loops (each the whole body of the one
// before, outermost first) by one loop over the product of their extents.
// The loops must be serial and rectangular: no extent or minimum may use
// another of the fused loops. The new loop is named after them
// (i_j_fused). Fusing never reorders iterations, so it is always legal.
func (s *Schedule) Fuse(loops ...Loop) (Loop, error) {
	const prim = "fuse"
	if len(loops) < 2 {
		return Loop{}, badArg(prim, s.f, nil, "fuse needs at least two loops, got %d", len(loops))
	}
	fs, ps, err := s.loops(prim, loops)
	if err != nil {
		return Loop{}, err
	}
	at := nodes(fs...)
	for i, f := range fs {
		if f.Kind != ast.Serial {
			return Loop{}, illegal(prim, s.f, nodes(f), "loop %s is %s; only serial loops can be fused", f.Var.Name, f.Kind)
		}
		if i > 0 && fs[i-1].Body != ast.Stmt(f) {
			return Loop{}, illegal(prim, s.f, nodes(fs[i-1], f), "loop %s is not the only statement in loop %s: fused loops must be perfectly nested, outermost first", f.Var.Name, fs[i-1].Var.Name)
		}
	}
	if err := rectangular(prim, s.f, fs); err != nil {
		return Loop{}, err
	}
	t := fs[0].Extent.Type()
	for _, f := range fs {
		if f.Extent.Type() != t {
			return Loop{}, illegal(prim, s.f, at, "loops %s and %s have different index types", fs[0].Var.Name, f.Var.Name)
		}
	}
	var parts []string
	for _, f := range fs {
		parts = append(parts, f.Var.Name)
	}
	used := names(s.f)
	fv := ast.NewVar(fresh(used, strings.Join(parts, "_")+"_fused"), t)
	// x_k = min_k + floormod(floordiv(fused, E_{k+1}*...*E_n), E_k)
	//
	// A loop of negative extent runs no iteration. Extents that can be
	// negative (W - 4 for W < 4; 3 - r under a loop r, as a compute_at
	// leaves) keep that in a product when only one of them is negative;
	// when several can be, all but the first count as max(E, 0), so that
	// two negative extents do not multiply into a positive one.
	above := ps[0].loops()
	a := analyzerFor(s.f, above[:len(above)-1])
	clamp := map[int]bool{}
	for k, f := range fs {
		if a.Bound(f.Extent).Min < 0 {
			clamp[k] = true
		}
	}
	if len(clamp) < 2 {
		clamp = nil
	} else {
		for k := range fs {
			if clamp[k] {
				delete(clamp, k) // the first may stay negative
				break
			}
		}
	}
	sub := map[string]ast.Expr{}
	var inner ast.Expr = ast.One(t)
	var extent ast.Expr = ast.One(t)
	for k := len(fs) - 1; k >= 0; k-- {
		f := fs[k]
		e := f.Extent
		if clamp[k] {
			e = ast.Max(e, ast.Zero(t))
		}
		var x ast.Expr = ast.FloorDiv(fv, inner)
		if k > 0 {
			x = ast.FloorMod(x, e)
		}
		sub[f.Var.Name] = ast.Simplify(ast.Add(f.Min, x))
		inner = ast.Simplify(ast.Mul(inner, e))
		extent = inner
	}
	body := ast.Substitute(fs[len(fs)-1].Body, sub)
	fused := &ast.For{Var: fv, Min: ast.Zero(t), Extent: extent, Body: body}
	g := ast.SimplifyFunc(replace(s.f, fs[0], fused))
	if err := s.commit(prim, g); err != nil {
		return Loop{}, err
	}
	out := s.loopHandle(fv.Name)
	s.record(Inst{Kind: prim, Args: loopArgs(loops), Outputs: []string{out.rv}})
	return out, nil
}

// rectangular refuses loops whose bounds use the variable of another loop
// of the set: transformations that treat them as independent dimensions
// would change their iteration spaces.
func rectangular(prim string, f *ast.Func, loops []*ast.For) error {
	vars := map[string]*ast.For{}
	for _, l := range loops {
		vars[l.Var.Name] = l
	}
	for _, l := range loops {
		for _, e := range []ast.Expr{l.Min, l.Extent} {
			var dep *ast.For
			ast.Inspect(e, func(n ast.Node) bool {
				if v, ok := n.(*ast.Var); ok && vars[v.Name] != nil && vars[v.Name] != l {
					dep = vars[v.Name]
				}
				return dep == nil
			})
			if dep != nil {
				return illegal(prim, f, nodes(l, dep), "the bounds of loop %s depend on loop %s, so the two cannot be treated as independent", l.Var.Name, dep.Var.Name)
			}
		}
	}
	return nil
}

func init() {
	register("fuse", instKind{
		args: -1,
		replay: func(s *Schedule, args []any) error {
			ls, err := argLoops(args)
			if err != nil {
				return err
			}
			_, err = s.Fuse(ls...)
			return err
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.Fuse(%s)", strings.Join(args, ", ")) },
		outputs: "one",
	})
}
