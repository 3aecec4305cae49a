package schedule

import (
	"errors"
	"fmt"
	"strings"

	"github.com/loom-go/loom/ast"
)

// maxSplitFactors bounds the loops one split makes: far beyond any
// tiling, and few enough that the nest stays cheap to analyze.
const maxSplitFactors = 32

// Split replaces loop l by a nest of len(factors) loops, outermost first,
// whose extents are the factors. At most one factor may be -1: it is
// inferred as the extent divided by the other factors, rounded up. When the
// factors' product does not equal the extent (always the case for a
// symbolic extent with an inferred factor) the blocks inside get a
// predicate that skips the tail, so nothing runs out of bounds.
//
// The loop must be serial; change its kind after splitting. Split returns
// the new loops, outermost first. A loop splits into at most 32 loops.
func (s *Schedule) Split(l Loop, factors ...int) ([]Loop, error) {
	vals := make([]int64, len(factors))
	args := make([]Arg, len(factors))
	for i, f := range factors {
		vals[i] = int64(f)
		args[i] = IntArg(int64(f))
	}
	return s.split(l, vals, args)
}

// SplitBy is Split with factors decided by sampling (SamplePerfectTile,
// SampleCategorical); the trace links them, so a replay with another
// decision splits differently. The zero Value stands for an inferred
// factor (-1 in Split).
func (s *Schedule) SplitBy(l Loop, factors []Value) ([]Loop, error) {
	vals := make([]int64, len(factors))
	args := make([]Arg, len(factors))
	for i, f := range factors {
		if f == (Value{}) {
			vals[i], args[i] = -1, IntArg(-1)
			continue
		}
		if f.s != s {
			return nil, badHandle("split", s.f, "factor %d is not a value of this schedule", i)
		}
		vals[i], args[i] = f.v, Ref(f.rv)
	}
	return s.split(l, vals, args)
}

func (s *Schedule) split(l Loop, factors []int64, args []Arg) ([]Loop, error) {
	const prim = "split"
	loop, place, err := s.loop(prim, l)
	if err != nil {
		return nil, err
	}
	at := nodes(loop)
	if loop.Kind != ast.Serial {
		return nil, illegal(prim, s.f, at, "loop %s is %s; split it while it is serial, then change its kind", loop.Var.Name, loop.Kind)
	}
	if len(factors) < 2 {
		return nil, badArg(prim, s.f, at, "split needs at least two factors, got %d", len(factors))
	}
	if len(factors) > maxSplitFactors {
		return nil, badArg(prim, s.f, at, "split takes at most %d factors, got %d", maxSplitFactors, len(factors))
	}
	t := loop.Extent.Type()
	inferred := -1
	known := int64(1)
	for i, f := range factors {
		switch {
		case f == -1 && inferred < 0:
			inferred = i
		case f == -1:
			return nil, badArg(prim, s.f, at, "only one factor may be inferred (-1)")
		case f < 1:
			return nil, badArg(prim, s.f, at, "factor %d is %d; factors are positive (or -1 to infer one)", i, f)
		default:
			if known > (1<<31-1)/f {
				return nil, badArg(prim, s.f, at, "the factors' product overflows")
			}
			known *= f
		}
	}
	extent := ast.Simplify(loop.Extent)
	exts := make([]ast.Expr, len(factors))
	for i, f := range factors {
		exts[i] = ast.IntConst(t, f)
	}
	if c, ok := ast.ConstIntValue(extent); ok && inferred >= 0 {
		// ceil(extent / known), in 64 bits: extent + known - 1 may not
		// fit the loop's type.
		exts[inferred] = ast.IntConst(t, (c+known-1)/known)
	} else if inferred >= 0 {
		exts[inferred] = ast.Simplify(ast.FloorDiv(ast.Add(extent, ast.IntConst(t, known-1)), ast.IntConst(t, known)))
	}
	// The product of the new extents, and whether it is exactly the extent.
	var total ast.Expr = exts[0]
	for _, e := range exts[1:] {
		total = ast.Mul(total, e)
	}
	total = ast.Simplify(total)
	exact := ast.Equal(total, extent)
	if c, ok := ast.ConstIntValue(extent); ok {
		// The product in 64 bits (it may pass the loop type's range by
		// the rounding up of an inferred factor).
		p := int64(1)
		for _, e := range exts {
			v, _ := ast.ConstIntValue(e)
			p *= v
		}
		if p < c {
			return nil, badArg(prim, s.f, at, "the factors cover %d iterations of the %d of loop %s", p, c, loop.Var.Name)
		}
		exact = p == c
	} else if !exact && inferred < 0 {
		// A symbolic extent: the factors must cover it for every value of
		// the sizes, which only an inferred factor can promise in general.
		covers := analyzerFor(s.f, place.loops()).Simplify(ast.GE(total, extent))
		if v, ok := ast.ConstIntValue(covers); !ok || v == 0 {
			return nil, badArg(prim, s.f, at, "the factors cover %s iterations, which may be fewer than the %s of loop %s; infer one factor with -1", ast.Print(total), ast.Print(extent), loop.Var.Name)
		}
	}

	// New loop variables, and the old one as their combination:
	// min + ((x0*e1 + x1)*e2 + x2)...
	used := names(s.f)
	vars := make([]*ast.Var, len(factors))
	for i := range vars {
		vars[i] = ast.NewVar(fresh(used, fmt.Sprintf("%s_%d", loop.Var.Name, i)), t)
	}
	var index ast.Expr = vars[0]
	for i := 1; i < len(vars); i++ {
		index = ast.Add(ast.Mul(index, exts[i]), vars[i])
	}
	index = ast.Simplify(index)
	old := ast.Simplify(ast.Add(loop.Min, index))
	body := ast.Substitute(loop.Body, map[string]ast.Expr{loop.Var.Name: old})
	if !exact {
		body = guard(body, ast.LT(index, extent))
	}
	var nest ast.Stmt = body
	for i := len(vars) - 1; i >= 0; i-- {
		nest = &ast.For{Var: vars[i], Min: ast.Zero(t), Extent: exts[i], Body: nest}
	}
	nest.(*ast.For).Annotations = loop.Annotations.Clone()
	g := ast.SimplifyFunc(replace(s.f, loop, nest))
	// A loop whose extent depends on a parallel or vectorized loop (a
	// triangle's inner loop under a vectorized row loop) puts that loop
	// in its parts' bindings: where loom cannot prove that each of its
	// iterations owns its own reductions, the result would race.
	if err := ast.Verify(g); err != nil {
		var ve *ast.VerifyError
		if errors.As(err, &ve) {
			return nil, illegal(prim, s.f, at, "the split would leave a function loom cannot prove well-formed: %s", strings.TrimPrefix(ve.Msg, "ast: verify: "))
		}
	}
	if err := s.commit(prim, g); err != nil {
		return nil, err
	}
	outs := make([]Loop, len(vars))
	rvs := make([]string, len(vars))
	for i, v := range vars {
		outs[i] = s.loopHandle(v.Name)
		rvs[i] = outs[i].rv
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(l.rv), ListArg(args...)}, Outputs: rvs})
	return outs, nil
}

// guard makes the statements of body run only where cond holds: blocks get
// cond as (part of) their predicate; statements outside any block are
// wrapped in an if.
func guard(body ast.Stmt, cond ast.Expr) ast.Stmt {
	outside := false
	var scan func(s ast.Stmt)
	scan = func(s ast.Stmt) {
		switch s := s.(type) {
		case *ast.For:
			scan(s.Body)
		case *ast.Seq:
			for _, st := range s.Stmts {
				scan(st)
			}
		case *ast.IfThenElse:
			scan(s.Then)
			if s.Else != nil {
				scan(s.Else)
			}
		case *ast.ScheduleBlock:
		default:
			outside = true
		}
	}
	scan(body)
	if outside {
		return ast.NewIf(cond, body, nil)
	}
	var stmt func(s ast.Stmt) ast.Stmt
	stmt = func(s ast.Stmt) ast.Stmt {
		if b, ok := s.(*ast.ScheduleBlock); ok {
			c := *b
			if b.Predicate == nil {
				c.Predicate = cond
			} else {
				c.Predicate = ast.And(cond, b.Predicate)
			}
			return &c
		}
		return ast.MapChildren(s, stmt, keepExpr)
	}
	return stmt(body)
}

func init() {
	register("split", instKind{
		args: 2,
		replay: func(s *Schedule, args []any) error {
			if len(args) != 2 {
				return fmt.Errorf("split takes a loop and a list of factors")
			}
			l, err := argLoop(args[0])
			if err != nil {
				return err
			}
			list, err := argList(args[1])
			if err != nil {
				return err
			}
			var vals []int64
			var fargs []Arg
			for _, x := range list {
				v, err := argInt(x)
				if err != nil {
					return err
				}
				vals = append(vals, v)
				if val, ok := x.(Value); ok {
					fargs = append(fargs, Ref(val.rv))
				} else {
					fargs = append(fargs, IntArg(v))
				}
			}
			_, err = s.split(l, vals, fargs)
			return err
		},
		goCall: func(args []string) string { return fmt.Sprintf("sch.Split(%s, %s)", args[0], args[1]) },
		goTyped: func(args []string, kinds []byte) string {
			if len(args) > 1 && kinds[1] == 'v' {
				// Sampled factors; an inferred one is the zero Value.
				parts := strings.Split(args[1], ", ")
				for i, p := range parts {
					if p == "-1" {
						parts[i] = "{}"
					}
				}
				return fmt.Sprintf("sch.SplitBy(%s, []schedule.Value{%s})", args[0], strings.Join(parts, ", "))
			}
			return fmt.Sprintf("sch.Split(%s, %s)", args[0], args[1])
		},
		outputs: "list",
	})
	register("get_block", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			name, err := argString(args[0])
			if err != nil {
				return err
			}
			_, err = s.GetBlock(name)
			return err
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.GetBlock(%s)", args[0]) },
		outputs: "one",
	})
	register("get_loop", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			name, err := argString(args[0])
			if err != nil {
				return err
			}
			_, err = s.GetLoop(name)
			return err
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.GetLoop(%s)", args[0]) },
		outputs: "one",
	})
	register("get_loops", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			b, err := argBlock(args[0])
			if err != nil {
				return err
			}
			_, err = s.GetLoops(b)
			return err
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.GetLoops(%s)", args[0]) },
		outputs: "list",
	})
}
