package schedule

import (
	"slices"
	"sync/atomic"

	"github.com/loom-go/loom/ast"
)

// Quick proofs of legality for the common case of a nest of loops holding
// one reduction block and nothing else, as a tiled matmul or convolution
// is. The exact check (poly) stays the judge of every other case; these
// only spare it the work where a few syntactic facts settle the question,
// and a nest of a dozen loops from multi-level tiling takes poly long.
//
// The facts: the block is an update, it writes one element of one buffer
// per spatial instance (indexed by its spatial iteration variables, each
// once) and reads that buffer only at that element, so two of its
// instances depend on each other only when their spatial variables are
// equal; and every iteration variable is bound injectively (a mixed-radix
// sum of distinct loops, as splits make, each loop in one binding and
// every loop in some binding), so that each instance runs once, and
// instances in different iterations of a loop that binds spatial variables
// write different elements. Both need loop bounds that no loop of the nest moves: a
// skewed or triangular nest is left to poly.

// quickProofs turns the quick proofs on; tests turn them off to check
// that the exact analysis agrees with them.
var quickProofs atomic.Bool

// quickProved counts the questions the quick proofs settled (for tests).
var quickProved atomic.Int64

func init() { quickProofs.Store(true) }

// soleNest is what soleUpdate learns of a nest: its block and, for each
// loop of the nest, whether spatial or reduce bindings use it.
type soleNest struct {
	block           *ast.ScheduleBlock
	spatial, reduce map[*ast.For]bool
}

// soleUpdate returns the block of the perfect nest of loops below (and
// including) top when it is that nest's only statement and an update as
// described above, with its spatial bindings injective in the nest's
// loops. ok is false whenever any of that cannot be seen at once.
func soleUpdate(top ast.Stmt) (u soleNest, ok bool) {
	var nest []*ast.For
	s := top
	for {
		l, isLoop := s.(*ast.For)
		if !isLoop {
			break
		}
		nest = append(nest, l)
		s = l.Body
	}
	b, isBlock := s.(*ast.ScheduleBlock)
	if !isBlock || !b.IsUpdate() {
		return soleNest{}, false
	}
	// The mixed-radix argument counts iterations from each loop's start:
	// a start or extent that moves with another loop of the nest (a skewed
	// or triangular nest) breaks it.
	for _, l := range nest {
		for _, m := range nest {
			if ast.Mentions(l.Min, m.Var.Name) || ast.Mentions(l.Extent, m.Var.Name) {
				return soleNest{}, false
			}
		}
	}
	u = soleNest{block: b, spatial: map[*ast.For]bool{}, reduce: map[*ast.For]bool{}}
	for _, it := range b.Iters {
		coefs, ok := ast.AffineCoefs(it.Binding)
		if !ok {
			return soleNest{}, false
		}
		var terms []radixTerm
		for _, l := range nest {
			c := coefs[l.Var.Name]
			if c == 0 {
				continue
			}
			if u.spatial[l] || u.reduce[l] {
				return soleNest{}, false // one loop in two bindings
			}
			if it.Kind == ast.Reduce {
				u.reduce[l] = true
			} else {
				u.spatial[l] = true
			}
			ext, isConst := ast.ConstIntValue(ast.Simplify(l.Extent))
			if !isConst {
				return soleNest{}, false
			}
			terms = append(terms, radixTerm{coef: c, extent: ext})
		}
		if !mixedRadix(terms) {
			return soleNest{}, false
		}
	}
	for _, l := range nest {
		if !u.spatial[l] && !u.reduce[l] {
			// A loop no binding uses runs the same instances again, which
			// poly tells apart only by the loops around them: leave such
			// a nest to it, unless the loop has one iteration.
			if n, isConst := ast.ConstIntValue(ast.Simplify(l.Extent)); !isConst || n != 1 {
				return soleNest{}, false
			}
		}
	}
	return u, true
}

type radixTerm struct{ coef, extent int64 }

// mixedRadix reports whether sum(coef * x) over x in [0, extent) takes
// each value once: sorted by magnitude, each coefficient exceeds the
// span of the terms below it.
func mixedRadix(terms []radixTerm) bool {
	slices.SortFunc(terms, func(a, b radixTerm) int { return int(abs64(a.coef) - abs64(b.coef)) })
	var span int64
	for _, t := range terms {
		if abs64(t.coef) <= span || t.extent > 1<<30 || abs64(t.coef) > 1<<30 {
			return false
		}
		span += abs64(t.coef) * (t.extent - 1)
	}
	return true
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// reorderKeepsUpdate reports whether putting the loops of chain (a
// perfect nest holding one update block) in the order given keeps every
// dependence: the loops the reduce bindings use keep their relative order,
// so the instances that write one element run in the same order.
func reorderKeepsUpdate(chain, order []*ast.For) bool {
	if !quickProofs.Load() {
		return false
	}
	u, ok := soleUpdate(chain[0])
	if !ok {
		return false
	}
	var before, after []*ast.For
	for _, l := range chain {
		if u.reduce[l] {
			before = append(before, l)
		}
	}
	for _, l := range order {
		if u.reduce[l] {
			after = append(after, l)
		}
	}
	if !slices.Equal(before, after) {
		return false
	}
	quickProved.Add(1)
	return true
}

// carriesNoUpdate reports whether loop, holding a perfect nest with one
// update block, binds only spatial variables of it: its iterations write
// different elements and read none another writes.
func carriesNoUpdate(loop *ast.For) bool {
	if !quickProofs.Load() {
		return false
	}
	if u, ok := soleUpdate(loop); !ok || u.reduce[loop] {
		return false
	}
	quickProved.Add(1)
	return true
}

func sameIndices(a, b []ast.Expr) bool {
	return slices.EqualFunc(a, b, func(x, y ast.Expr) bool { return ast.Equal(x, y) })
}
