package poly

import (
	"math"
	"math/big"
	"math/bits"
)

// Int is an exact integer. It holds an int64 while the value fits and
// switches to a big.Int only when it does not, so the common case costs no
// allocation and no operation can overflow. The zero value is 0. Ints are
// values: operations return new Ints and never change their operands.
type Int struct {
	small int64
	big   *big.Int // non-nil only for values outside the int64 range
}

// IntOf returns v as an Int.
func IntOf(v int64) Int { return Int{small: v} }

// intFromBig returns the Int of b, small when it fits.
func intFromBig(b *big.Int) Int {
	if b.IsInt64() {
		return Int{small: b.Int64()}
	}
	return Int{big: b}
}

func (x Int) toBig() *big.Int {
	if x.big != nil {
		return x.big
	}
	return big.NewInt(x.small)
}

// Int64 returns x as an int64 and whether it fits.
func (x Int) Int64() (int64, bool) { return x.small, x.big == nil }

// Sign returns -1, 0 or +1.
func (x Int) Sign() int {
	if x.big != nil {
		return x.big.Sign()
	}
	switch {
	case x.small < 0:
		return -1
	case x.small > 0:
		return 1
	}
	return 0
}

// IsZero reports whether x == 0.
func (x Int) IsZero() bool { return x.big == nil && x.small == 0 }

// IsOne reports whether x == 1.
func (x Int) IsOne() bool { return x.big == nil && x.small == 1 }

// Cmp returns -1, 0 or +1 as x is less than, equal to or greater than y.
func (x Int) Cmp(y Int) int {
	if x.big == nil && y.big == nil {
		switch {
		case x.small < y.small:
			return -1
		case x.small > y.small:
			return 1
		}
		return 0
	}
	return x.toBig().Cmp(y.toBig())
}

// Equal reports whether x == y.
func (x Int) Equal(y Int) bool { return x.Cmp(y) == 0 }

// Add returns x + y.
func (x Int) Add(y Int) Int {
	if x.big == nil && y.big == nil {
		s := x.small + y.small
		if (x.small >= 0) == (y.small >= 0) && (s >= 0) != (x.small >= 0) {
			return Int{big: new(big.Int).Add(big.NewInt(x.small), big.NewInt(y.small))}
		}
		return Int{small: s}
	}
	return intFromBig(new(big.Int).Add(x.toBig(), y.toBig()))
}

// Sub returns x - y.
func (x Int) Sub(y Int) Int {
	if x.big == nil && y.big == nil {
		d := x.small - y.small
		if (x.small >= 0) != (y.small >= 0) && (d >= 0) != (x.small >= 0) {
			return Int{big: new(big.Int).Sub(big.NewInt(x.small), big.NewInt(y.small))}
		}
		return Int{small: d}
	}
	return intFromBig(new(big.Int).Sub(x.toBig(), y.toBig()))
}

// Neg returns -x.
func (x Int) Neg() Int {
	if x.big == nil {
		if x.small == math.MinInt64 {
			return Int{big: new(big.Int).Neg(big.NewInt(x.small))}
		}
		return Int{small: -x.small}
	}
	return intFromBig(new(big.Int).Neg(x.big))
}

// Abs returns |x|.
func (x Int) Abs() Int {
	if x.Sign() < 0 {
		return x.Neg()
	}
	return x
}

// Mul returns x * y.
func (x Int) Mul(y Int) Int {
	if x.big == nil && y.big == nil {
		a, b := x.small, y.small
		if a == 0 || b == 0 {
			return Int{}
		}
		if a != math.MinInt64 && b != math.MinInt64 {
			hi, lo := bits.Mul64(uabs(a), uabs(b))
			if hi == 0 && lo < 1<<63 {
				if (a < 0) != (b < 0) {
					return Int{small: -int64(lo)}
				}
				return Int{small: int64(lo)}
			}
		}
	}
	return intFromBig(new(big.Int).Mul(x.toBig(), y.toBig()))
}

func uabs(a int64) uint64 {
	if a < 0 {
		return uint64(-a)
	}
	return uint64(a)
}

// FloorDiv returns floor(x / y). It panics if y is zero.
func (x Int) FloorDiv(y Int) Int {
	if x.big == nil && y.big == nil && !(x.small == math.MinInt64 && y.small == -1) {
		q := x.small / y.small
		if (x.small%y.small != 0) && ((x.small < 0) != (y.small < 0)) {
			q--
		}
		return Int{small: q}
	}
	q, m := new(big.Int).QuoRem(x.toBig(), y.toBig(), new(big.Int))
	if m.Sign() != 0 && (m.Sign() < 0) != (y.Sign() < 0) {
		q.Sub(q, big.NewInt(1))
	}
	return intFromBig(q)
}

// CeilDiv returns ceil(x / y). It panics if y is zero.
func (x Int) CeilDiv(y Int) Int { return x.Neg().FloorDiv(y).Neg() }

// Mod returns x - y*floor(x/y), which has the sign of y. It panics if y is
// zero.
func (x Int) Mod(y Int) Int { return x.Sub(y.Mul(x.FloorDiv(y))) }

// ExactDiv returns x / y for a y that divides x.
func (x Int) ExactDiv(y Int) Int {
	if x.big == nil && y.big == nil && !(x.small == math.MinInt64 && y.small == -1) {
		return Int{small: x.small / y.small}
	}
	return intFromBig(new(big.Int).Quo(x.toBig(), y.toBig()))
}

// Gcd returns the greatest common divisor of |x| and |y| (Gcd(0, 0) = 0).
func Gcd(x, y Int) Int {
	if x.big == nil && y.big == nil && x.small != math.MinInt64 && y.small != math.MinInt64 {
		a, b := uabs(x.small), uabs(y.small)
		for b != 0 {
			a, b = b, a%b
		}
		return Int{small: int64(a)}
	}
	return intFromBig(new(big.Int).GCD(nil, nil, new(big.Int).Abs(x.toBig()), new(big.Int).Abs(y.toBig())))
}

// String returns x in decimal.
func (x Int) String() string {
	if x.big != nil {
		return x.big.String()
	}
	return big.NewInt(x.small).String()
}
