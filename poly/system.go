package poly

import (
	"math"
	"math/bits"
)

// row is one affine constraint or expression over the variables of a
// system: the constant term at index 0, then the coefficient of variable i
// at index i+1. As an equality it says row·(1, x) = 0, as an inequality
// row·(1, x) >= 0.
type row []Int

func newRow(n int) row { return make(row, n+1) }

func (r row) clone() row { return append(row(nil), r...) }

// coef returns the coefficient of variable i.
func (r row) coef(i int) Int { return r[i+1] }

// isConst reports whether every coefficient is zero.
func (r row) isConst() bool {
	for _, c := range r[1:] {
		if !c.IsZero() {
			return false
		}
	}
	return true
}

// eval returns r·(1, x).
func (r row) eval(x []Int) Int {
	v := r[0]
	for i, c := range r[1:] {
		if !c.IsZero() {
			v = v.Add(c.Mul(x[i]))
		}
	}
	return v
}

// scaled returns s*r.
func (r row) scaled(s Int) row {
	out := make(row, len(r))
	for i, c := range r {
		out[i] = c.Mul(s)
	}
	return out
}

// combine returns a*r + b*o.
func combine(a Int, r row, b Int, o row) row {
	out := make(row, len(r))
	for i := range r {
		out[i] = a.Mul(r[i]).Add(b.Mul(o[i]))
	}
	return out
}

// coefGcd returns the gcd of the coefficients (not the constant).
func (r row) coefGcd() Int {
	var g Int
	for _, c := range r[1:] {
		if !c.IsZero() {
			g = Gcd(g, c)
			if g.IsOne() {
				break
			}
		}
	}
	return g
}

// hashes returns hashes of the coefficients of r (not the constant) and of
// their negations, so that rows with equal or opposite coefficient vectors
// can be found without building keys. Equal vectors hash alike; callers
// compare with sameCoefs on a match.
func (r row) hashes() (pos, neg uint64) {
	const prime = 1099511628211
	pos, neg = 14695981039346656037, 14695981039346656037
	for _, c := range r[1:] {
		v, ok := c.Int64()
		if !ok {
			// Big values are rare: mix in a marker and the sign only; the
			// exact comparison resolves any collision.
			v = int64(c.Sign()) * 0x5bd1e995
		}
		pos = (pos ^ uint64(v)) * prime
		neg = (neg ^ uint64(-v)) * prime
	}
	return pos, neg
}

// sameCoefs reports whether r's coefficients equal o's (or their negations
// if neg).
func (r row) sameCoefs(o row, neg bool) bool {
	for i := 1; i < len(r); i++ {
		if a, b := r[i], o[i]; a.big == nil && b.big == nil {
			// Both small, the common case: compared in place (-b
			// of the most negative int64 would wrap to itself).
			if neg && (a.small != -b.small || b.small == math.MinInt64) || !neg && a.small != b.small {
				return false
			}
			continue
		}
		if neg {
			if !r[i].Equal(o[i].Neg()) {
				return false
			}
		} else if !r[i].Equal(o[i]) {
			return false
		}
	}
	return true
}

// rowIndex finds rows by their coefficient vectors: an open-addressing
// table of row indices keyed by the rows' hashes (see hashes), sized for
// the rows a normalization adds, so that finding a row costs a probe or
// two whatever the system's size. (A scan of the hashes, and past a few
// dozen rows a Go map, took half of normalized's time on the systems of
// a convolution's schedule: the search for each inequality's opposite
// scanned every other.)
type rowIndex struct {
	hashes []uint64 // the hash of each indexed row, by index
	slots  []int32  // 1 + the index of a row, at its hash's probe position; 0: empty
}

// newRowIndex returns an index with room for n rows.
func newRowIndex(n int) rowIndex {
	size := 8
	for size < 2*n {
		size <<= 1
	}
	return rowIndex{hashes: make([]uint64, 0, n), slots: make([]int32, size)}
}

// find returns the index (into rows) of a row whose coefficients equal r's
// (or their negations if neg), given h, the matching hash of r.
func (ix *rowIndex) find(rows []row, r row, h uint64, neg bool) (int, bool) {
	mask := uint64(len(ix.slots) - 1)
	for p := ix.start(h); ; p = (p + 1) & mask {
		s := ix.slots[p]
		if s == 0 {
			return -1, false
		}
		if i := int(s - 1); ix.hashes[i] == h && rows[i].sameCoefs(r, neg) {
			return i, true
		}
	}
}

// add records the row with hash h at the next index.
func (ix *rowIndex) add(h uint64) {
	ix.hashes = append(ix.hashes, h)
	if 2*len(ix.hashes) > len(ix.slots) {
		ix.slots = make([]int32, 2*len(ix.slots))
		for i, x := range ix.hashes {
			ix.place(x, i)
		}
		return
	}
	ix.place(h, len(ix.hashes)-1)
}

// start returns the first slot of hash h's probe sequence: the high bits
// of h times a constant of mixed bits (Fibonacci hashing), since the low
// bits of a row hash depend on the coefficients' low bits alone (rows
// whose coefficients differ by a multiple of the table's size would
// share a slot).
func (ix *rowIndex) start(h uint64) uint64 {
	return (h * 0x9e3779b97f4a7c15) >> (64 - bits.TrailingZeros(uint(len(ix.slots))))
}

// place puts row i, of hash h, at the first free slot of its probe
// sequence.
func (ix *rowIndex) place(h uint64, i int) {
	mask := uint64(len(ix.slots) - 1)
	p := ix.start(h)
	for ix.slots[p] != 0 {
		p = (p + 1) & mask
	}
	ix.slots[p] = int32(i + 1)
}

// substitute returns r with variable k replaced by the expression e (a row
// over the same variables, with no term in k), and column k removed.
func (r row) substitute(k int, e row) row {
	return r.substituteInto(make(row, len(r)-1), k, e)
}

// substituteInto is substitute writing into out (of length len(r)-1).
func (r row) substituteInto(out row, k int, e row) row {
	a := r[k+1]
	for i := range r {
		if i == k+1 {
			continue
		}
		v := r[i]
		if !a.IsZero() {
			v = v.Add(a.Mul(e[i]))
		}
		if i > k+1 {
			out[i-1] = v
		} else {
			out[i] = v
		}
	}
	return out
}

// dropCol returns r without the column of variable k.
func (r row) dropCol(k int) row {
	out := make(row, 0, len(r)-1)
	out = append(out, r[:k+1]...)
	return append(out, r[k+2:]...)
}

// addCols returns r with m zero columns appended.
func (r row) addCols(m int) row {
	out := make(row, len(r)+m)
	copy(out, r)
	return out
}

// system is a conjunction of integer equalities and inequalities over n
// integer variables.
type system struct {
	n     int
	eqs   []row
	ineqs []row
}

// satisfied reports whether the point x satisfies every constraint.
func (s *system) satisfied(x []Int) bool {
	for _, r := range s.eqs {
		if !r.eval(x).IsZero() {
			return false
		}
	}
	for _, r := range s.ineqs {
		if r.eval(x).Sign() < 0 {
			return false
		}
	}
	return true
}
