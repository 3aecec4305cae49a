package schedule

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Align makes the blocks of several adjacent loop nests share their loops:
// the given loops, consecutive statements of one sequence, serial, with the
// same minimum and extent, become one loop (the first one) whose body runs
// their bodies in order. Repeated on the inner loops it lines up whole
// nests, as the blocks of a fused group need before they are tiled
// together. Align is refused when a block would then read something
// another produces only in a later iteration.
func (s *Schedule) Align(loops ...Loop) (Loop, error) {
	const prim = "align"
	if len(loops) < 2 {
		return Loop{}, badArg(prim, s.f, nil, "align needs at least two loops, got %d", len(loops))
	}
	fs, places, err := s.loops(prim, loops)
	if err != nil {
		return Loop{}, err
	}
	parent := places[0].parent()
	for i, f := range fs {
		if places[i].parent() != parent {
			return Loop{}, illegal(prim, s.f, nodes(fs[0], f), "loops %s and %s are not in the same statement list", fs[0].Var.Name, f.Var.Name)
		}
	}
	seq, ok := parent.(*ast.Seq)
	if !ok {
		return Loop{}, illegal(prim, s.f, nodes(fs...), "the loops are not statements of one list")
	}
	first := slices.Index(seq.Stmts, ast.Stmt(fs[0]))
	for i, f := range fs {
		if first+i >= len(seq.Stmts) || seq.Stmts[first+i] != ast.Stmt(f) {
			return Loop{}, illegal(prim, s.f, nodes(fs...), "loop %s does not directly follow loop %s", f.Var.Name, fs[max(i-1, 0)].Var.Name)
		}
		if f.Kind != ast.Serial {
			return Loop{}, illegal(prim, s.f, nodes(f), "loop %s is %s; only serial loops can be aligned", f.Var.Name, f.Kind)
		}
		if !ast.Equal(ast.Simplify(f.Min), ast.Simplify(fs[0].Min)) || !ast.Equal(ast.Simplify(f.Extent), ast.Simplify(fs[0].Extent)) {
			return Loop{}, illegal(prim, s.f, nodes(fs[0], f), "loop %s runs over (%s, %s) but loop %s over (%s, %s)", f.Var.Name, f.Min, f.Extent, fs[0].Var.Name, fs[0].Min, fs[0].Extent)
		}
	}
	var body []ast.Stmt
	for _, f := range fs {
		b := ast.Substitute(f.Body, map[string]ast.Expr{f.Var.Name: fs[0].Var})
		if inner, ok := b.(*ast.Seq); ok {
			body = append(body, inner.Stmts...)
		} else {
			body = append(body, b)
		}
	}
	merged := *fs[0]
	merged.Body = &ast.Seq{Stmts: body}
	stmts := slices.Clone(seq.Stmts)
	stmts = slices.Replace(stmts, first, first+len(fs), ast.Stmt(&merged))
	var newParent ast.Stmt = &ast.Seq{Stmts: stmts}
	if len(stmts) == 1 {
		newParent = stmts[0]
	}
	g := replace(s.f, seq, newParent)
	g = ast.SimplifyFunc(g)
	if err := s.checkOrder(prim, g, nodes(fs...), nil); err != nil {
		return Loop{}, err
	}
	if err := s.commit(prim, g); err != nil {
		return Loop{}, err
	}
	out := s.loopHandle(fs[0].Var.Name)
	s.record(Inst{Kind: prim, Args: loopArgs(loops), Outputs: []string{out.rv}})
	return out, nil
}

func init() {
	register("align", instKind{
		args: -1,
		replay: func(s *Schedule, args []any) error {
			ls, err := argLoops(args)
			if err != nil {
				return err
			}
			_, err = s.Align(ls...)
			return err
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.Align(%s)", strings.Join(args, ", ")) },
		outputs: "one",
	})
}
