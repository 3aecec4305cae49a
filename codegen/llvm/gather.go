package llvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"
	"github.com/loom-go/loom/ast"
)

// Gathers: an index that loads from a buffer (a gather's, an embedding's
// token id) is one only the data says is in bounds. Where it is not, in
// an active lane, the kernel's status gets StatusIndexOutOfRange (the
// interpreter's error) and the access does not happen: a load yields 0
// there, a store writes nothing. The index is also clamped into its
// dimension, so that no address computed is outside the buffer.

// checkedIndex returns the value of x, an index of a dimension of the
// given extent that loads from a buffer, clamped into [0, extent), and
// the lanes where it was in range (i1 lanes).
func (e *emitter) checkedIndex(x, extent ast.Expr) (idx, ok lanes) {
	v, n := e.index(x), e.index(extent)
	zero := uniform(i64(0))
	below := e.compare64(enum.IPredSLT, v, zero)
	above := e.compare64(enum.IPredSGE, v, n)
	ok = e.apply(below, above, func(b, a value.Value) value.Value {
		return e.b.NewXor(e.b.NewOr(b, a), splat(constant.True, lanesOf(b.Type())))
	})
	last := e.intBinary(nil, ast.OpSub, n, uniform(i64(1)), true)
	idx = e.apply3(above, last, v, func(c, t, f value.Value) value.Value { return e.b.NewSelect(c, t, f) })
	idx = e.apply3(below, zero, idx, func(c, t, f value.Value) value.Value { return e.b.NewSelect(c, t, f) })
	return idx, ok
}

// andLanes returns a && b of i1 lanes.
func (e *emitter) andLanes(a, b lanes) lanes {
	return e.apply(a, b, func(x, y value.Value) value.Value { return e.b.NewAnd(x, y) })
}

// guardIndices runs access, an access through gather indices that are in
// range where ok holds (nil: everywhere), only where they are: it records
// StatusIndexOutOfRange where they are not, in an active lane; then, for a
// uniform ok, branches around access, and for lanes narrows the active
// mask to ok while it runs. The result is access's (nil for a store),
// with zero (of the result's type) where ok does not hold.
func (e *emitter) guardIndices(ok *lanes, access func() value.Value) value.Value {
	if ok == nil {
		return access()
	}
	if ok.isUniform() {
		c := e.scalar(*ok)
		e.faultIf(e.b.NewXor(c, constant.True), StatusIndexOutOfRange)
		run, join := e.newBlock("gather.ok"), e.newBlock("gather.end")
		from := e.b
		e.b.NewCondBr(c, run, join)
		e.b = run
		v := access()
		end := e.b
		e.b.NewBr(join)
		e.b = join
		if v == nil {
			return nil
		}
		return e.b.NewPhi(ir.NewIncoming(v, end), ir.NewIncoming(constant.NewZeroInitializer(v.Type()), from))
	}
	m := e.vec(*ok)
	e.faultIf(e.b.NewXor(m, splat(constant.True, e.width)), StatusIndexOutOfRange)
	saved := e.mask
	e.mask = e.andMask(m)
	v := access()
	e.mask = saved
	if v == nil {
		return nil
	}
	if lanesOf(v.Type()) == 0 { // a uniform value: the same in every lane
		v = e.broadcast(v, e.width)
	}
	return e.b.NewSelect(m, v, constant.NewZeroInitializer(v.Type()))
}
