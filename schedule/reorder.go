package schedule

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// Reorder puts the given loops in the given order, outermost first. They
// must lie on one chain of perfectly nested loops (each loop of the chain,
// from the outermost to the innermost given, the whole body of the one
// above); loops of the chain not given keep their places. The loops must be
// rectangular with respect to each other. Reorder is refused when it would
// run dependent instances in the other order, except the updates of one
// element by a reduction (out = out + f, *, min, max), which may run in
// any order that still starts with the instance at its reduce variables'
// minimum, where its init runs: the result changes only by the rounding
// of a reassociated sum, as rfactor's does.
func (s *Schedule) Reorder(loops ...Loop) error {
	const prim = "reorder"
	if len(loops) < 2 {
		return badArg(prim, s.f, nil, "reorder needs at least two loops, got %d", len(loops))
	}
	fs, places, err := s.loops(prim, loops)
	if err != nil {
		return err
	}
	for i, f := range fs {
		if slices.Contains(fs[:i], f) {
			return badArg(prim, s.f, nodes(f), "loop %s is given twice", f.Var.Name)
		}
	}
	// The deepest loop's place holds the whole chain.
	deepest := 0
	for i := range places {
		if len(places[i]) > len(places[deepest]) {
			deepest = i
		}
	}
	path := places[deepest]
	top := len(path)
	for _, f := range fs {
		k := slices.Index(path, ast.Stmt(f))
		if k < 0 {
			return illegal(prim, s.f, nodes(f, fs[deepest]), "loops %s and %s are not nested one inside the other", f.Var.Name, fs[deepest].Var.Name)
		}
		top = min(top, k)
	}
	bottom := slices.Index(path, ast.Stmt(fs[deepest]))
	var chain []*ast.For
	for k := top; k <= bottom; k++ {
		l, ok := path[k].(*ast.For)
		if !ok {
			return illegal(prim, s.f, nodes(path[k]), "%s stands between the loops to reorder", describe(path[k]))
		}
		if k < bottom && l.Body != path[k+1] {
			return illegal(prim, s.f, nodes(l), "loop %s holds other statements besides loop %s: reordered loops must be perfectly nested", l.Var.Name, path[k+1].(*ast.For).Var.Name)
		}
		chain = append(chain, l)
	}
	if err := rectangular(prim, s.f, chain); err != nil {
		return err
	}
	// The chain positions of the given loops get them in the given order.
	given := map[*ast.For]bool{}
	for _, f := range fs {
		given[f] = true
	}
	order := make([]*ast.For, len(chain))
	next := 0
	for k, l := range chain {
		if given[l] {
			order[k] = fs[next]
			next++
		} else {
			order[k] = l
		}
	}
	var nest ast.Stmt = chain[len(chain)-1].Body
	for k := len(order) - 1; k >= 0; k-- {
		l := *order[k]
		l.Body = nest
		nest = &l
	}
	g := replace(s.f, chain[0], nest)
	if !reorderKeepsUpdate(chain, order) {
		if err := s.checkOrder(prim, g, nodes(fs...), reassociates); err != nil {
			return err
		}
	}
	if err := s.commit(prim, g); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: loopArgs(loops)})
	return nil
}

// reassociates reports whether d is the dependence of a reduction's
// updates of one element on each other, whose order a loop order may
// change (poly.Instances.Reassociable).
func reassociates(d *poly.Dependence) bool {
	return d.Source == d.Sink && d.Source.Reassociable(d.Buffer)
}

func init() {
	register("reorder", instKind{
		args: -1,
		replay: func(s *Schedule, args []any) error {
			ls, err := argLoops(args)
			if err != nil {
				return err
			}
			return s.Reorder(ls...)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.Reorder(%s)", strings.Join(args, ", ")) },
		outputs: "none",
	})
}
