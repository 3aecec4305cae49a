package llvm

import (
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/poly"
)

// checkLoopKinds refuses f when a loop it marks parallel or vectorized
// carries a dependence: running its iterations at once would change the
// result. The schedule primitives check this when they mark a loop; this
// check catches functions written or edited by hand. GPU-bound loops run
// serially on the CPU, so they need no proof here.
func checkLoopKinds(f *ast.Func) error {
	var loops []*ast.For
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.For); ok && (l.Kind == ast.Parallel || l.Kind == ast.Vectorized) {
			loops = append(loops, l)
		}
		return true
	})
	if len(loops) == 0 {
		return nil
	}
	p, err := poly.Extract(f)
	if err != nil {
		return &Error{Func: f, Node: loops[0], Err: err,
			Reason: fmt.Sprintf("cannot prove that %s loop %s carries no dependence: %v (set Options.TrustLoopKinds to skip the proof)", loops[0].Kind, loops[0].Var.Name, err)}
	}
	for _, l := range loops {
		if deps := p.CarriedBy(l); len(deps) > 0 {
			d := deps[0]
			return &Error{Func: f, Node: l,
				Reason: fmt.Sprintf("%s loop %s carries a dependence on %s from block %s to block %s; its iterations cannot run at once", l.Kind, l.Var.Name, d.Buffer.Name, d.Source.Block.Name, d.Sink.Block.Name)}
		}
	}
	return nil
}
