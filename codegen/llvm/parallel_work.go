package llvm

import (
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"
	"github.com/loom-go/loom/ast"
)

// The work of a parallel loop.
//
// The runtime runs a parallel loop on one thread when it has too little
// work to pay for waking another: loom_parallel_for takes, besides the
// iteration count, an estimate of one iteration's work, in units of about
// one scalar operation (a load, an arithmetic operation, a store; a call
// of a transcendental function counts callWork), and runs the loop inline
// when count × work is under inlineWork (the runtime's LOOM_INLINE_WORK).
// A loop whose count and work are both constant is decided here instead:
// under inlineWork it is emitted as a serial loop, with a remark.
//
// The estimate multiplies each statement's operations by the extents of
// the loops around it inside the body, and adds both branches of an if (an
// upper bound: a loop is never wrongly made serial). An extent the caller
// can compute before the loop (constants, symbolic sizes, enclosing
// loops' variables) is computed there; an extent that depends on the
// body's own variables, or divides by a variable, makes the work unknown
// (0), and the runtime shares the loop out as it would any large one.

// inlineWork is the runtime's LOOM_INLINE_WORK (native/runtime/loomrt.c;
// TestInlineWorkAgrees checks that they agree).
const inlineWork = 1 << 15

// callWork is the work counted for a call of a math function.
const callWork = 16

// workCap bounds each factor, term and sum of the estimate, so that the
// arithmetic never wraps; work is only ever compared with inlineWork and
// the runtime's chunk sizes, far below it.
const workCap = 1 << 24

// maxWorkTerms bounds the terms of an estimate (products of different
// run-time extents); past it the work is unknown.
const maxWorkTerms = 16

// workTerm is c × the product of run-time extents.
type workTerm struct {
	c       int64
	factors []ast.Expr
}

// workEstimate is the sum of its terms; unknown when a term could not be
// formed.
type workEstimate struct {
	terms   []workTerm
	unknown bool
}

// bodyWork estimates the work of one iteration of body, in which the
// names of bound are bound (the parallel loop's variable, and those the
// walk meets).
func bodyWork(s ast.Stmt, bound map[string]bool) workEstimate {
	switch s := s.(type) {
	case nil:
		return workEstimate{}
	case *ast.Seq:
		var w workEstimate
		for _, x := range s.Stmts {
			w = w.plus(bodyWork(x, bound))
		}
		return w
	case *ast.Alloc:
		return workEstimate{}
	case *ast.Store:
		return constWork(1 + exprWork(s.Value))
	case *ast.IfThenElse:
		return constWork(exprWork(s.Cond)).plus(bodyWork(s.Then, bound)).plus(bodyWork(s.Else, bound))
	case *ast.ScheduleBlock:
		inner := withBound(bound, nil)
		for _, it := range s.Iters {
			inner[it.Var.Name] = true
		}
		w := constWork(exprWork(s.Predicate))
		return w.plus(bodyWork(s.Init, inner)).plus(bodyWork(s.Body, inner))
	case *ast.For:
		w := bodyWork(s.Body, withBound(bound, s.Var))
		return w.times(s.Extent, bound)
	}
	return workEstimate{unknown: true}
}

func withBound(bound map[string]bool, v *ast.Var) map[string]bool {
	m := make(map[string]bool, len(bound)+1)
	for k := range bound {
		m[k] = true
	}
	if v != nil {
		m[v.Name] = true
	}
	return m
}

// exprWork counts the operations of x: one per load, arithmetic operation,
// cast and select; callWork per call.
func exprWork(x ast.Expr) int64 {
	if x == nil {
		return 0
	}
	var n int64
	ast.Inspect(x, func(node ast.Node) bool {
		switch node.(type) {
		case *ast.Call:
			n += callWork
		case *ast.Load, *ast.Binary, *ast.Cast, *ast.Select, *ast.Not:
			n++
		}
		return true
	})
	return min(n, workCap)
}

func constWork(c int64) workEstimate {
	if c == 0 {
		return workEstimate{}
	}
	return workEstimate{terms: []workTerm{{c: min(c, workCap)}}}
}

// plus adds two estimates, merging terms with the same factors.
func (w workEstimate) plus(o workEstimate) workEstimate {
	if w.unknown || o.unknown {
		return workEstimate{unknown: true}
	}
	out := workEstimate{terms: append([]workTerm(nil), w.terms...)}
next:
	for _, t := range o.terms {
		for i := range out.terms {
			if sameFactors(out.terms[i].factors, t.factors) {
				out.terms[i].c = min(out.terms[i].c+t.c, workCap)
				continue next
			}
		}
		out.terms = append(out.terms, t)
	}
	if len(out.terms) > maxWorkTerms {
		return workEstimate{unknown: true}
	}
	return out
}

// times multiplies an estimate by a loop's extent: a constant folds in; an
// extent over names outside the body (and with no division by a
// variable) becomes a factor; any other makes the work unknown.
func (w workEstimate) times(ext ast.Expr, bound map[string]bool) workEstimate {
	if w.unknown || len(w.terms) == 0 {
		return w
	}
	if c, ok := ext.(*ast.Const); ok && c.DType.IsInt() {
		k := max(c.Int, 0)
		out := workEstimate{}
		for _, t := range w.terms {
			if k == 0 {
				break
			}
			out.terms = append(out.terms, workTerm{c: satMul(t.c, k), factors: t.factors})
		}
		return out
	}
	if !outsideBody(ext, bound) {
		return workEstimate{unknown: true}
	}
	out := workEstimate{}
	for _, t := range w.terms {
		f := append(append([]ast.Expr(nil), t.factors...), ext)
		out.terms = append(out.terms, workTerm{c: t.c, factors: f})
	}
	return out
}

// outsideBody reports whether ext can be computed before the parallel
// loop: index arithmetic over names not bound in its body, dividing only
// by constants (a division by a variable might fault there when the loop
// would not have run).
func outsideBody(ext ast.Expr, bound map[string]bool) bool {
	if !isIndexExpr(ext) {
		return false
	}
	ok := true
	ast.Inspect(ext, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Var:
			if bound[n.Name] {
				ok = false
			}
		case *ast.Binary:
			switch n.Op {
			case ast.OpDiv, ast.OpMod, ast.OpFloorDiv, ast.OpFloorMod:
				if _, c := n.B.(*ast.Const); !c {
					ok = false
				}
			}
		}
		return ok
	})
	return ok
}

func sameFactors(a, b []ast.Expr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if ast.Print(a[i]) != ast.Print(b[i]) {
			return false
		}
	}
	return true
}

// satMul multiplies two values in [0, workCap], saturating at workCap.
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > workCap/b {
		return workCap
	}
	return a * b
}

// constant returns the estimate's value when it has no run-time factor.
func (w workEstimate) constant() (int64, bool) {
	if w.unknown {
		return 0, false
	}
	var sum int64
	for _, t := range w.terms {
		if len(t.factors) > 0 {
			return 0, false
		}
		sum = min(sum+t.c, workCap)
	}
	return sum, true
}

// emitWork computes the estimate in the caller: an i64 in [0, workCap], 0
// when unknown (or when an extent names a variable the caller does not
// have).
func (e *emitter) emitWork(w workEstimate) value.Value {
	if w.unknown {
		return i64(0)
	}
	for _, t := range w.terms {
		for _, f := range t.factors {
			inScope := true
			ast.Inspect(f, func(n ast.Node) bool {
				if v, ok := n.(*ast.Var); ok {
					if _, ok := e.env[v.Name]; !ok {
						inScope = false
					}
				}
				return inScope
			})
			if !inScope {
				return i64(0)
			}
		}
	}
	var sum value.Value = i64(0)
	for _, t := range w.terms {
		// Each factor and each partial product is at most workCap, so
		// a product is at most workCap² < 2^48 and a sum of
		// maxWorkTerms of them fits too.
		var p value.Value = i64(t.c)
		for i, f := range t.factors {
			if i > 0 {
				p = e.capWork(p)
			}
			p = e.mul64(p, e.clampWork(e.scalar(e.index(f))))
		}
		sum = e.add64(sum, p)
	}
	return e.capWork(sum)
}

// clampWork clamps v to [0, workCap].
func (e *emitter) clampWork(v value.Value) value.Value {
	if c, ok := constInt(v); ok {
		return i64(min(max(c, 0), workCap))
	}
	v = e.sel(e.icmp(enum.IPredSLT, v, i64(0)), i64(0), v)
	return e.capWork(v)
}

// capWork lowers a value that is not negative to at most workCap.
func (e *emitter) capWork(v value.Value) value.Value {
	if c, ok := constInt(v); ok {
		return i64(min(c, workCap))
	}
	return e.sel(e.icmp(enum.IPredSGT, v, i64(workCap)), i64(workCap), v)
}
