package poly

import "github.com/loom-go/loom/ast"

// Reassociable reports whether the instances of in may update each
// element of buf in any order of the loops around them: the block's body
// is out[s] = out[s] op f (ast.ReductionUpdate: op associative and
// commutative, f not reading out) with out = buf, it reads buf nowhere
// else (ast.ScheduleBlock.IsUpdate), every loop around it starts at 0, and
// its reduce bindings are sums of those loops times non-negative constants
// that give the start of the reduce domain where the loops are 0. The
// first iteration of any order of the loops is then the instance at the
// reduce variables' minimum, where the init runs; a new order changes the
// result only by the rounding of a reassociated sum (as rfactor's does).
func (in *Instances) Reassociable(buf *ast.Buffer) bool {
	b := in.Block
	if !b.IsReduction() || !b.IsUpdate() {
		return false
	}
	st := b.Body.(*ast.Store)
	if st.Buffer != buf {
		return false
	}
	if _, _, ok := ast.ReductionUpdate(st); !ok {
		return false
	}
	for _, l := range in.Loops {
		if m, ok := ast.ConstIntValue(ast.Simplify(l.Min)); !ok || m != 0 {
			return false
		}
	}
	for _, it := range b.Iters {
		if it.Kind != ast.Reduce {
			continue
		}
		zero := map[string]ast.Expr{}
		growing := true
		var walk func(e ast.Expr) bool // a sum of loops times constants ≥ 0, and constants
		walk = func(e ast.Expr) bool {
			switch e := e.(type) {
			case *ast.Const:
				return true
			case *ast.Var:
				zero[e.Name] = ast.IntConst(e.DType, 0)
				return true
			case *ast.Binary:
				switch e.Op {
				case ast.OpAdd:
					return walk(e.A) && walk(e.B)
				case ast.OpMul:
					if c, ok := ast.ConstIntValue(e.B); ok && c >= 0 {
						return walk(e.A)
					}
					if c, ok := ast.ConstIntValue(e.A); ok && c >= 0 {
						return walk(e.B)
					}
				}
			}
			return false
		}
		growing = walk(it.Binding)
		if !growing || !ast.Equal(ast.Simplify(ast.Substitute(it.Binding, zero)), ast.Simplify(it.Dom.Min)) {
			return false
		}
	}
	return true
}
