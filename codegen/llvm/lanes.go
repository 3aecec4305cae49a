package llvm

import (
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// lanes is the value of an expression where it is emitted. In scalar code
// every value is uniform. Inside a vectorized loop of W lanes a value is one
// of three shapes, the cheapest that holds it:
//
//   - uniform: the same scalar in every lane (u);
//   - ramp: the 64-bit integers base + stride*lane, the shape of an index
//     that moves with the vectorized loop (base, stride);
//   - steps: the 64-bit integers base + stride*floor(lane/group), a ramp
//     divided by a group of lanes (group > 1, a divisor of W): the input
//     channel of a grouped convolution whose vector spans several groups,
//     floordiv(c, G)*G + k, where each group's lanes read one element;
//   - vector: one element per lane (v).
//
// Keeping ramps symbolic is what lets a load of A[i, j] with j vectorized
// become one contiguous vector load instead of a gather: the offset is a
// ramp of stride 1.
//
// Index values (i64) also keep their constant part apart, in off: a
// uniform index is u + off, a ramp base + off + stride*lane. The addresses
// of an unrolled tile then share one variable part and differ by
// constants, which is what lets LLVM's alias analysis tell them apart (and
// keep a tile of accumulators in registers).
type lanes struct {
	u      value.Value
	base   value.Value
	stride int64
	group  int64 // steps: lanes of one value, > 1; 0 for a ramp
	off    int64
	v      value.Value
}

// uniform returns the lanes all equal to x; an i64 constant goes to off.
func uniform(x value.Value) lanes { return lanes{u: x}.normal() }

var zero64 = constant.NewInt(types.I64, 0)

func vector(x value.Value) lanes { return lanes{v: x} }

// ramp returns base + stride*lane; a ramp of stride 0 is uniform.
func ramp(base value.Value, stride int64) lanes {
	return lanes{base: base, stride: stride}.normal()
}

// normal moves the constant part of an index's u or base into off, and
// makes a ramp of stride 0 uniform.
func (l lanes) normal() lanes {
	if l.base != nil && l.stride == 0 {
		l.u, l.base, l.group = l.base, nil, 0
	}
	for _, p := range []*value.Value{&l.u, &l.base} {
		if c, ok := (*p).(*constant.Int); ok && c.Typ.BitSize == 64 && c.X.IsInt64() && c.X.Int64() != 0 {
			l.off += c.X.Int64()
			*p = zero64
		}
	}
	return l
}

// scalar returns the value of uniform lanes l.
func (e *emitter) scalar(l lanes) value.Value {
	if l.u == nil {
		panic(internalf("scalar of lanes that differ"))
	}
	if l.off == 0 {
		return l.u
	}
	return e.add64(l.u, i64(l.off))
}

// rampBase returns the value of ramp l in lane 0.
func (e *emitter) rampBase(l lanes) value.Value {
	if l.off == 0 {
		return l.base
	}
	return e.add64(l.base, i64(l.off))
}

func (l lanes) isUniform() bool { return l.u != nil }
func (l lanes) isRamp() bool    { return l.base != nil && l.group == 0 }
func (l lanes) isSteps() bool   { return l.base != nil && l.group > 1 }

// lane returns the ramp or steps l's offset from lane 0's value in lane i.
func (l lanes) lane(i int64) int64 {
	if l.group > 1 {
		i /= l.group
	}
	return l.stride * i
}

// scalarType returns the element type of l.
func (l lanes) scalarType() types.Type {
	switch {
	case l.u != nil:
		return l.u.Type()
	case l.base != nil:
		return l.base.Type()
	}
	return scalarOf(l.v.Type())
}

// i64 returns the constant n as an i64.
func i64(n int64) *constant.Int { return constant.NewInt(types.I64, n) }

// i32 returns the constant n as an i32.
func i32(n int64) *constant.Int { return constant.NewInt(types.I32, n) }

// constInt returns the value of x if it is an integer constant.
func constInt(x value.Value) (int64, bool) {
	if c, ok := x.(*constant.Int); ok && c.X.IsInt64() {
		return c.X.Int64(), true
	}
	return 0, false
}

// constLanes returns the vector constant of type t (scalar element) with
// the given integer elements.
func constIntVector(t *types.IntType, elems []int64) *constant.Vector {
	cs := make([]constant.Constant, len(elems))
	for i, x := range elems {
		cs[i] = constant.NewInt(t, x)
	}
	return constant.NewVector(types.NewVector(uint64(len(elems)), t), cs...)
}

// splat returns the constant vector of n copies of c.
func splat(c constant.Constant, n int) constant.Constant {
	if n == 0 {
		return c
	}
	cs := make([]constant.Constant, n)
	for i := range cs {
		cs[i] = c
	}
	return constant.NewVector(types.NewVector(uint64(n), c.Type()), cs...)
}

// boolMask returns the constant <n x i1> whose first k lanes are true.
func boolMask(n, k int) *constant.Vector {
	cs := make([]constant.Constant, n)
	for i := range cs {
		cs[i] = constant.NewBool(i < k)
	}
	return constant.NewVector(types.NewVector(uint64(n), types.I1), cs...)
}

// vec returns l as a vector of the emitter's width: a uniform value is
// broadcast, a ramp expanded. In scalar code it returns the scalar.
func (e *emitter) vec(l lanes) value.Value {
	switch {
	case l.v != nil:
		return l.v
	case e.width == 0:
		if l.u == nil {
			panic(internalf("ramp outside a vectorized loop"))
		}
		return e.scalar(l)
	case l.u != nil:
		return e.broadcast(e.scalar(l), e.width)
	}
	steps := make([]int64, e.width)
	for i := range steps {
		steps[i] = l.lane(int64(i))
	}
	return e.nsw(e.b.NewAdd(e.broadcast(e.rampBase(l), e.width), constIntVector(types.I64, steps)))
}

// broadcast returns a vector of n copies of the scalar x.
func (e *emitter) broadcast(x value.Value, n int) value.Value {
	if c, ok := x.(constant.Constant); ok {
		return splat(c, n)
	}
	vt := types.NewVector(uint64(n), x.Type())
	one := e.b.NewInsertElement(constant.NewUndef(vt), x, i32(0))
	return e.b.NewShuffleVector(one, constant.NewUndef(vt), constant.NewZeroInitializer(types.NewVector(uint64(n), types.I32)))
}

// apply computes op lane by lane: on the scalars when both operands are
// uniform, else on vectors.
func (e *emitter) apply(a, b lanes, op func(x, y value.Value) value.Value) lanes {
	if a.isUniform() && b.isUniform() {
		return uniform(op(e.scalar(a), e.scalar(b)))
	}
	return vector(op(e.vec(a), e.vec(b)))
}

// apply1 computes op lane by lane on one operand.
func (e *emitter) apply1(a lanes, op func(x value.Value) value.Value) lanes {
	if a.isUniform() {
		return uniform(op(e.scalar(a)))
	}
	return vector(op(e.vec(a)))
}

// apply3 computes op lane by lane on three operands.
func (e *emitter) apply3(a, b, c lanes, op func(x, y, z value.Value) value.Value) lanes {
	if a.isUniform() && b.isUniform() && c.isUniform() {
		return uniform(op(e.scalar(a), e.scalar(b), e.scalar(c)))
	}
	return vector(op(e.vec(a), e.vec(b), e.vec(c)))
}
