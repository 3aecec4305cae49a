package llvm

import (
	"github.com/llir/llvm/ir"
	"math/bits"

	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
	"github.com/loom-go/loom/ast"
)

// Index arithmetic.
//
// Integer expressions over loop variables, iteration variables, symbolic
// sizes and constants (the indices, bindings, extents and shapes of a
// function), and widening casts of variables and constants, are computed
// in 64 bits, whatever their declared type, so that they never wrap before
// the buffer offsets they feed. Integer expressions over data (loaded
// values, other casts) keep their declared type and wrap as the
// interpreter's do.

// isIndexExpr reports whether x is computed as index arithmetic.
func isIndexExpr(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Const:
		return x.DType.IsInt()
	case *ast.Var:
		return x.DType.IsInt()
	case *ast.Cast:
		// A widening cast of a variable or constant (an int32 loop
		// variable in an int64 origin) changes nothing in 64 bits;
		// computing it through the narrow type would hide from LLVM
		// that j - j is 0. A cast of arithmetic stays data: the
		// interpreter wraps the narrow product before widening it.
		switch x.X.(type) {
		case *ast.Var, *ast.Const:
			return widens(x) && isIndexExpr(x.X)
		}
		return false
	case *ast.Binary:
		switch x.Op {
		case ast.OpAdd, ast.OpSub, ast.OpMul, ast.OpDiv, ast.OpMod, ast.OpFloorDiv, ast.OpFloorMod, ast.OpMin, ast.OpMax:
			return x.A.Type().IsInt() && isIndexExpr(x.A) && isIndexExpr(x.B)
		}
	}
	return false
}

// widens reports whether c converts an integer to an integer type at
// least as wide.
func widens(c *ast.Cast) bool {
	from := c.X.Type()
	return c.To.IsInt() && from.IsInt() && c.To.Bytes() >= from.Bytes()
}

// index returns the integer expression x as 64-bit lanes.
func (e *emitter) index(x ast.Expr) lanes {
	if !isIndexExpr(x) {
		v := e.value(x)
		if !x.Type().IsInt() {
			panic(bailout{&Error{Func: e.f, Node: x, Reason: "an index must be an integer expression"}})
		}
		return e.apply1(v, func(v value.Value) value.Value { return e.ext64(v) })
	}
	switch x := x.(type) {
	case *ast.Const:
		return uniform(i64(x.Int))
	case *ast.Var:
		return e.lookup(x)
	case *ast.Cast:
		return e.index(x.X)
	case *ast.Binary:
		return e.intBinary(x, x.Op, e.index(x.A), e.index(x.B), true)
	}
	panic(internalf("index of %T", x))
}

// lookup returns the value of an integer variable.
func (e *emitter) lookup(v *ast.Var) lanes {
	l, ok := e.env[v.Name]
	if !ok {
		panic(internalf("variable %s has no value", v.Name))
	}
	return l
}

// ext64 sign-extends an integer (or vector of them) to 64 bits.
func (e *emitter) ext64(v value.Value) value.Value {
	t := scalarOf(v.Type()).(*types.IntType)
	switch {
	case t.BitSize == 64:
		return v
	case t.BitSize == 1:
		return e.b.NewZExt(v, withLanes(types.I64, lanesOf(v.Type())))
	}
	return e.b.NewSExt(v, withLanes(types.I64, lanesOf(v.Type())))
}

// add64, sub64 and mul64 fold constants, so that index arithmetic on
// constant shapes stays constant.
func (e *emitter) add64(x, y value.Value) value.Value {
	a, aok := constInt(x)
	b, bok := constInt(y)
	switch {
	case aok && bok:
		return i64(a + b)
	case aok && a == 0:
		return y
	case bok && b == 0:
		return x
	}
	return e.nsw(e.b.NewAdd(x, y))
}

func (e *emitter) sub64(x, y value.Value) value.Value {
	a, aok := constInt(x)
	b, bok := constInt(y)
	switch {
	case aok && bok:
		return i64(a - b)
	case bok && b == 0:
		return x
	}
	return e.nsw(e.b.NewSub(x, y))
}

func (e *emitter) mul64(x, y value.Value) value.Value {
	a, aok := constInt(x)
	b, bok := constInt(y)
	switch {
	case aok && bok:
		return i64(a * b)
	case aok && a == 1:
		return y
	case bok && b == 1:
		return x
	case aok && a == 0 || bok && b == 0:
		return i64(0)
	}
	return e.nsw(e.b.NewMul(x, y))
}

// nsw marks index arithmetic as never wrapping: indices stay far inside
// 64 bits (they address memory), and saying so lets LLVM's alias analysis
// see that two addresses differ by a constant.
func (e *emitter) nsw(v value.Value) value.Value {
	switch i := v.(type) {
	case *ir.InstAdd:
		i.OverflowFlags = []enum.OverflowFlag{enum.OverflowFlagNSW}
	case *ir.InstSub:
		i.OverflowFlags = []enum.OverflowFlag{enum.OverflowFlagNSW}
	case *ir.InstMul:
		i.OverflowFlags = []enum.OverflowFlag{enum.OverflowFlagNSW}
	}
	return v
}

// intBinary applies an integer arithmetic operator of expression n to a
// and b. In index arithmetic (index true, 64-bit operands) it keeps ramps
// symbolic where it can and marks + - * as not wrapping; on data it wraps
// like the interpreter.
func (e *emitter) intBinary(n ast.Node, op ast.BinaryOp, a, b lanes, index bool) lanes {
	index = index && a.scalarType().Equal(types.I64)
	if index {
		switch op {
		case ast.OpAdd, ast.OpSub:
			sign := int64(1)
			if op == ast.OpSub {
				sign = -1
			}
			var l lanes
			switch {
			case a.isUniform() && b.isUniform():
				l = lanes{u: e.combine(op, a.u, b.u)}
			case a.base != nil && b.isUniform(): // a ramp or steps
				l = lanes{base: e.combine(op, a.base, b.u), stride: a.stride, group: a.group}
			case a.isUniform() && b.base != nil:
				l = lanes{base: e.combine(op, a.u, b.base), stride: sign * b.stride, group: b.group}
			case a.base != nil && b.base != nil && a.group == b.group:
				l = lanes{base: e.combine(op, a.base, b.base), stride: a.stride + sign*b.stride, group: a.group}
			}
			if l.u != nil || l.base != nil {
				l.off = a.off + sign*b.off
				return l.normal()
			}
		case ast.OpMul:
			if c, ok := constUniform(b); ok && a.v == nil {
				return e.scale(a, c)
			}
			if c, ok := constUniform(a); ok && b.v == nil {
				return e.scale(b, c)
			}
			if a.isUniform() && b.isUniform() {
				return uniform(e.mul64(e.scalar(a), e.scalar(b)))
			}
		case ast.OpFloorDiv, ast.OpFloorMod:
			if l, ok := e.rampDivMod(op, a, b); ok {
				return l
			}
		}
	}
	flag := func(v value.Value) value.Value {
		if index {
			return e.nsw(v)
		}
		return v
	}
	switch op {
	case ast.OpAdd:
		return e.apply(a, b, func(x, y value.Value) value.Value { return flag(e.b.NewAdd(x, y)) })
	case ast.OpSub:
		return e.apply(a, b, func(x, y value.Value) value.Value { return flag(e.b.NewSub(x, y)) })
	case ast.OpMul:
		return e.apply(a, b, func(x, y value.Value) value.Value { return flag(e.b.NewMul(x, y)) })
	case ast.OpMin:
		return e.apply(a, b, func(x, y value.Value) value.Value { return e.b.NewSelect(e.b.NewICmp(enum.IPredSLT, x, y), x, y) })
	case ast.OpMax:
		return e.apply(a, b, func(x, y value.Value) value.Value { return e.b.NewSelect(e.b.NewICmp(enum.IPredSGT, x, y), x, y) })
	case ast.OpDiv, ast.OpMod, ast.OpFloorDiv, ast.OpFloorMod:
		return e.intDivMod(n, op, a, b)
	}
	panic(internalf("integer operator %v", op))
}

// scale multiplies uniform, ramp or steps index lanes by the constant c.
func (e *emitter) scale(l lanes, c int64) lanes {
	if l.isUniform() {
		return lanes{u: e.mul64(l.u, i64(c)), off: l.off * c}.normal()
	}
	return lanes{base: e.mul64(l.base, i64(c)), stride: l.stride * c, group: l.group, off: l.off * c}.normal()
}

func (e *emitter) combine(op ast.BinaryOp, x, y value.Value) value.Value {
	if op == ast.OpAdd {
		return e.add64(x, y)
	}
	return e.sub64(x, y)
}

func constUniform(l lanes) (int64, bool) {
	if !l.isUniform() {
		return 0, false
	}
	c, ok := constInt(l.u)
	return c + l.off, ok
}

// rampDivMod divides a ramp by a constant c where the lanes stay symbolic:
//   - a ramp whose stride is a multiple of c: (base + k*c*lane) floordiv c
//     = base floordiv c + k*lane, and the remainder is base floormod c in
//     every lane;
//   - a ramp of positive stride s whose W lanes never cross a multiple of
//     c: where c and the base are both known multiples of s*W (a row of
//     768 vectorized by 16 and split by floordiv and floormod 64, as a
//     reshape after a transpose leaves it), the quotient is base floordiv
//     c in every lane and the remainder the ramp (base floormod c) + s*lane.
//   - the quotient of a ramp of positive stride s by a multiple c of s
//     that spans fewer than W lanes and divides them (G = c/s), its base
//     a known multiple of c: base floordiv c + floor(lane/G), steps of G
//     lanes (a grouped convolution's vector of channels over several
//     groups, floordiv(v, G), reads one input a group).
//     Otherwise the lanes are computed one by one (and a load through
//     them is a gather).
func (e *emitter) rampDivMod(op ast.BinaryOp, a, b lanes) (lanes, bool) {
	c, ok := constUniform(b)
	if !ok || c <= 0 || !a.isRamp() {
		return lanes{}, false
	}
	if g := c / max(a.stride, 1); op == ast.OpFloorDiv && a.stride > 0 && c%a.stride == 0 && g > 1 && g < int64(e.width) &&
		int64(e.width)%g == 0 && isMultiple(a.base, c) && a.off%c == 0 {
		return lanes{base: e.exactDiv(e.rampBase(a), c), stride: 1, group: g}.normal(), true
	}
	if a.stride%c == 0 {
		q := e.intDivMod(nil, op, uniform(e.rampBase(a)), b)
		if op == ast.OpFloorDiv {
			return ramp(e.scalar(q), a.stride/c), true
		}
		return q, true
	}
	span := a.stride * int64(e.width)
	if a.stride <= 0 || e.width < 2 || c%span != 0 || knownMultiple(a.base, 0)%span != 0 || a.off%span != 0 {
		return lanes{}, false
	}
	q := e.intDivMod(nil, op, uniform(e.rampBase(a)), b)
	if op == ast.OpFloorDiv {
		return q, true
	}
	return ramp(e.scalar(q), a.stride), true
}

// knownMultiple returns a positive number the i64 value v is known to be
// a multiple of, from the constants and the multiplications, shifts,
// additions and subtractions that compute it (1 when nothing is known;
// 0 is a multiple of every number: 1<<40 stands for it). depth bounds
// the walk.
func knownMultiple(v value.Value, depth int) int64 {
	const every = 1 << 40
	if depth > 8 {
		return 1
	}
	switch x := v.(type) {
	case *constant.Int:
		if !x.X.IsInt64() {
			return 1
		}
		n := x.X.Int64()
		if n == 0 {
			return every
		}
		if n < 0 {
			n = -n
		}
		return min(n, every)
	case *ir.InstMul:
		a, b := knownMultiple(x.X, depth+1), knownMultiple(x.Y, depth+1)
		if a >= every/b {
			return every
		}
		return a * b
	case *ir.InstShl:
		if k, ok := constInt(x.Y); ok && k >= 0 && k < 40 {
			if a := knownMultiple(x.X, depth+1); a < every>>k {
				return a << k
			}
			return every
		}
	case *ir.InstAShr:
		if k, ok := constInt(x.Y); ok && x.Exact && k >= 0 && k < 40 {
			if a := knownMultiple(x.X, depth+1); a%(1<<k) == 0 {
				return max(a>>k, 1)
			}
		}
	case *ir.InstSDiv:
		if d, ok := constInt(x.Y); ok && x.Exact && d > 0 {
			if a := knownMultiple(x.X, depth+1); a%d == 0 {
				return max(a/d, 1)
			}
		}
	case *ir.InstAdd:
		return gcd64(knownMultiple(x.X, depth+1), knownMultiple(x.Y, depth+1))
	case *ir.InstSub:
		return gcd64(knownMultiple(x.X, depth+1), knownMultiple(x.Y, depth+1))
	}
	return 1
}

// exactDiv divides x, a known multiple of c > 0, by c, saying so (an
// exact shift or division), so that knownMultiple sees what the quotient
// is a multiple of.
func (e *emitter) exactDiv(x value.Value, c int64) value.Value {
	if v, ok := constInt(x); ok {
		return i64(v / c)
	}
	if c&(c-1) == 0 {
		sh := e.b.NewAShr(x, i64(int64(bits.TrailingZeros64(uint64(c)))))
		sh.Exact = true
		return sh
	}
	d := e.b.NewSDiv(x, i64(c))
	d.Exact = true
	return d
}

// isMultiple reports whether the i64 value v is known to be a multiple
// of c > 0.
func isMultiple(v value.Value, c int64) bool {
	m := knownMultiple(v, 0)
	return m == 1<<40 || m%c == 0
}

func gcd64(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// intDivMod emits a division or remainder. By a positive constant it is
// shifts or LLVM's multiply-by-reciprocal; by anything else it is guarded:
// a zero divisor sets the kernel's status to StatusDivByZero and yields 0,
// and -1 never reaches the hardware's divide (which faults on MIN / -1).
func (e *emitter) intDivMod(n ast.Node, op ast.BinaryOp, a, b lanes) lanes {
	if c, ok := constUniform(b); ok && c > 0 {
		return e.apply1(a, func(x value.Value) value.Value { return e.divModConst(op, x, c) })
	}
	return e.apply(a, b, func(x, y value.Value) value.Value { return e.divModGuarded(op, x, y) })
}

// divModConst divides x by the constant c > 0.
func (e *emitter) divModConst(op ast.BinaryOp, x value.Value, c int64) value.Value {
	t := x.Type()
	k := func(v int64) value.Value { return splat(constant.NewInt(scalarOf(t).(*types.IntType), v), lanesOf(t)) }
	if c == 1 {
		if op == ast.OpMod || op == ast.OpFloorMod {
			return k(0)
		}
		return x
	}
	pow2 := c&(c-1) == 0
	switch op {
	case ast.OpFloorDiv:
		if pow2 {
			return e.b.NewAShr(x, k(int64(bits.TrailingZeros64(uint64(c)))))
		}
		q, r := e.b.NewSDiv(x, k(c)), e.b.NewSRem(x, k(c))
		return e.b.NewAdd(q, e.b.NewSExt(e.b.NewICmp(enum.IPredSLT, r, k(0)), t))
	case ast.OpFloorMod:
		if pow2 {
			return e.b.NewAnd(x, k(c-1))
		}
		r := e.b.NewSRem(x, k(c))
		return e.b.NewAdd(r, e.b.NewSelect(e.b.NewICmp(enum.IPredSLT, r, k(0)), k(c), k(0)))
	case ast.OpDiv:
		return e.b.NewSDiv(x, k(c))
	}
	return e.b.NewSRem(x, k(c))
}

// divModGuarded divides x by a divisor that may be 0 or -1.
func (e *emitter) divModGuarded(op ast.BinaryOp, x, y value.Value) value.Value {
	t := x.Type()
	k := func(v int64) value.Value { return splat(constant.NewInt(scalarOf(t).(*types.IntType), v), lanesOf(t)) }
	zero := e.b.NewICmp(enum.IPredEQ, y, k(0))
	minus1 := e.b.NewICmp(enum.IPredEQ, y, k(-1))
	e.faultIf(zero, StatusDivByZero)
	safe := e.b.NewSelect(e.b.NewOr(zero, minus1), k(1), y)
	q, r := e.b.NewSDiv(x, safe), e.b.NewSRem(x, safe)
	var res value.Value
	switch op {
	case ast.OpDiv:
		res = e.b.NewSelect(minus1, e.b.NewSub(k(0), x), q)
	case ast.OpMod:
		res = e.b.NewSelect(minus1, k(0), r)
	case ast.OpFloorDiv, ast.OpFloorMod:
		// Floor when the remainder is nonzero and its sign differs from
		// the divisor's.
		adjust := e.b.NewAnd(e.b.NewICmp(enum.IPredNE, r, k(0)),
			e.b.NewXor(e.b.NewICmp(enum.IPredSLT, r, k(0)), e.b.NewICmp(enum.IPredSLT, y, k(0))))
		if op == ast.OpFloorDiv {
			res = e.b.NewSelect(minus1, e.b.NewSub(k(0), x), e.b.NewAdd(q, e.b.NewSExt(adjust, t)))
		} else {
			res = e.b.NewSelect(minus1, k(0), e.b.NewAdd(r, e.b.NewSelect(adjust, y, k(0))))
		}
	}
	return e.b.NewSelect(zero, k(0), res)
}

// faultIf records status code in the kernel's status word when cond (an
// i1 or a vector of them) holds in an active lane.
func (e *emitter) faultIf(cond value.Value, code int64) {
	if n := lanesOf(cond.Type()); n > 0 {
		if e.mask != nil {
			cond = e.b.NewAnd(cond, e.mask)
		}
		cond = e.b.NewCall(e.intrinsic("llvm.vector.reduce.or."+mangle(cond.Type()), types.I1, cond.Type()), cond)
	}
	fault, cont := e.newBlock("fault"), e.newBlock("fault.end")
	e.b.NewCondBr(cond, fault, cont)
	// Atomic: the kernel's threads may fault at once.
	fault.NewAtomicRMW(enum.AtomicOpOr, e.status, i32(code), enum.AtomicOrderingMonotonic)
	fault.NewBr(cont)
	e.b = cont
}

// compare64 compares two 64-bit integer lanes values.
func (e *emitter) compare64(pred enum.IPred, a, b lanes) lanes {
	return e.apply(a, b, func(x, y value.Value) value.Value { return e.b.NewICmp(pred, x, y) })
}
