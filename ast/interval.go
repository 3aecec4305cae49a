package ast

import (
	"fmt"
	"math"
	"math/bits"
)

// Interval is a set of integers [Min, Max], both ends included. Min ==
// NegInf or Max == PosInf marks an unbounded end.
type Interval struct {
	Min, Max int64
}

// The unbounded ends of an Interval.
const (
	NegInf = math.MinInt64
	PosInf = math.MaxInt64
)

// Everything is the interval of all integers.
var Everything = Interval{NegInf, PosInf}

// Point returns the interval holding only v.
func Point(v int64) Interval { return Interval{v, v} }

// IsPoint reports whether iv holds exactly one, finite, value.
func (iv Interval) IsPoint() bool { return iv.Min == iv.Max && iv.Min != NegInf && iv.Max != PosInf }

// String returns iv as [min, max], with -inf and +inf for unbounded ends.
func (iv Interval) String() string {
	lo, hi := "-inf", "+inf"
	if iv.Min != NegInf {
		lo = fmt.Sprint(iv.Min)
	}
	if iv.Max != PosInf {
		hi = fmt.Sprint(iv.Max)
	}
	return "[" + lo + ", " + hi + "]"
}

// satAdd adds two interval ends; an infinite end absorbs, an overflow
// saturates to the infinite end of its sign.
func satAdd(a, b int64) int64 {
	switch {
	case a == NegInf || b == NegInf:
		return NegInf
	case a == PosInf || b == PosInf:
		return PosInf
	}
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		if a > 0 {
			return PosInf
		}
		return NegInf
	}
	return s
}

func satNeg(a int64) int64 {
	switch a {
	case NegInf:
		return PosInf
	case PosInf:
		return NegInf
	}
	return -a
}

// satMul multiplies two interval ends with saturation.
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	neg := (a < 0) != (b < 0)
	inf := int64(PosInf)
	if neg {
		inf = NegInf
	}
	if a == NegInf || a == PosInf || b == NegInf || b == PosInf {
		return inf
	}
	hi, lo := bits.Mul64(uabs(a), uabs(b))
	if hi != 0 || lo >= 1<<63 {
		return inf
	}
	if neg {
		return -int64(lo)
	}
	return int64(lo)
}

func uabs(a int64) uint64 {
	if a < 0 {
		return uint64(-a)
	}
	return uint64(a)
}

func (iv Interval) add(o Interval) Interval {
	return Interval{satAdd(iv.Min, o.Min), satAdd(iv.Max, o.Max)}
}

func (iv Interval) neg() Interval { return Interval{satNeg(iv.Max), satNeg(iv.Min)} }

func (iv Interval) mul(o Interval) Interval {
	p := [4]int64{satMul(iv.Min, o.Min), satMul(iv.Min, o.Max), satMul(iv.Max, o.Min), satMul(iv.Max, o.Max)}
	r := Interval{p[0], p[0]}
	for _, v := range p[1:] {
		r.Min, r.Max = min(r.Min, v), max(r.Max, v)
	}
	return r
}

func (iv Interval) scale(c int64) Interval { return iv.mul(Point(c)) }

func (iv Interval) union(o Interval) Interval {
	return Interval{min(iv.Min, o.Min), max(iv.Max, o.Max)}
}

func (iv Interval) intersect(o Interval) Interval {
	return Interval{max(iv.Min, o.Min), min(iv.Max, o.Max)}
}

// floorDivConst divides by a constant c > 0, rounding down.
func (iv Interval) floorDivConst(c int64) Interval {
	f := func(v int64) int64 {
		if v == NegInf || v == PosInf {
			return v
		}
		return floorDiv(v, c)
	}
	return Interval{f(iv.Min), f(iv.Max)}
}

// truncDivConst divides by a constant c > 0, rounding toward zero; like
// floor division it is monotone in the dividend.
func (iv Interval) truncDivConst(c int64) Interval {
	f := func(v int64) int64 {
		if v == NegInf || v == PosInf {
			return v
		}
		return v / c
	}
	return Interval{f(iv.Min), f(iv.Max)}
}

// typeRange returns the interval of all values of integer type t.
func typeRange(t DType) Interval {
	if t == Int32 {
		return Interval{math.MinInt32, math.MaxInt32}
	}
	return Everything
}
