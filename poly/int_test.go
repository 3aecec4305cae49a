package poly

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestIntAgainstBig compares every operation with math/big on values around
// the int64 limits, where the small representation must hand over.
func TestIntAgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	edge := []int64{0, 1, -1, 2, -2, 3, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1,
		1 << 31, -1 << 31, 1 << 32, 3037000499, -3037000499, 3037000500}
	pick := func() Int {
		switch r.IntN(4) {
		case 0:
			return IntOf(edge[r.IntN(len(edge))])
		case 1:
			return IntOf(int64(r.Uint64()))
		case 2:
			return IntOf(r.Int64N(200) - 100)
		}
		// A big value.
		b := new(big.Int).Lsh(big.NewInt(r.Int64N(1000)+1), uint(64+r.IntN(10)))
		if r.IntN(2) == 0 {
			b.Neg(b)
		}
		return intFromBig(b)
	}
	check := func(op string, got Int, want *big.Int) {
		t.Helper()
		if got.toBig().Cmp(want) != 0 {
			t.Fatalf("%s = %s, want %s", op, got, want)
		}
		if got.big != nil && got.big.IsInt64() {
			t.Fatalf("%s = %s is stored big although it fits in int64", op, got)
		}
	}
	for n := 0; n < 200000; n++ {
		x, y := pick(), pick()
		bx, by := x.toBig(), y.toBig()
		check("add", x.Add(y), new(big.Int).Add(bx, by))
		check("sub", x.Sub(y), new(big.Int).Sub(bx, by))
		check("mul", x.Mul(y), new(big.Int).Mul(bx, by))
		check("neg", x.Neg(), new(big.Int).Neg(bx))
		check("gcd", Gcd(x, y), new(big.Int).GCD(nil, nil, new(big.Int).Abs(bx), new(big.Int).Abs(by)))
		if x.Cmp(y) != bx.Cmp(by) {
			t.Fatalf("cmp(%s, %s)", x, y)
		}
		if y.Sign() != 0 {
			// floor(x/y) is the q with q*y <= x < (q+1)*y (reversed for y < 0).
			fq := x.FloorDiv(y)
			lo := fq.Mul(y)
			hi := fq.Add(IntOf(1)).Mul(y)
			if y.Sign() > 0 && !(lo.Cmp(x) <= 0 && x.Cmp(hi) < 0) || y.Sign() < 0 && !(lo.Cmp(x) >= 0 && x.Cmp(hi) > 0) {
				t.Fatalf("floordiv(%s, %s) = %s", x, y, fq)
			}
			m := x.Mod(y)
			if !m.Add(fq.Mul(y)).Equal(x) || (m.Sign() != 0 && m.Sign() != y.Sign()) {
				t.Fatalf("mod(%s, %s) = %s", x, y, m)
			}
			c := x.CeilDiv(y)
			if !(c.Equal(fq) || c.Equal(fq.Add(IntOf(1)))) || (c.Equal(fq) != m.IsZero()) {
				t.Fatalf("ceildiv(%s, %s) = %s", x, y, c)
			}
		}
	}
}
