package poly

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestBoundsKnown(t *testing.T) {
	for _, c := range []struct {
		src    string
		dim    int
		lo, hi string
		exact  bool
	}{
		{"[N] -> { [i] : 0 <= i < N }", 0, "0", "N - 1", true},
		{"[N, M] -> { [i, j] : 0 <= i < N and 0 <= j < M and j <= i }", 1, "0", "min(M - 1, N - 1)", true},
		{"[T] -> { [t, i] : 32T <= t <= 32T + 31 and t < 100 and i = t }", 1, "32T", "min(32T + 31, 99)", true},
		{"{ [i] : 3 <= 11i <= 21 }", 0, "1", "1", true},
		{"{ [i, j] : i = 2j and 0 <= j <= 5 }", 0, "0", "10", true},
		{"{ [i] : i >= 4 }", 0, "4", "+inf", true},
		{"{ [i] : i < 0 and i > 0 }", 0, "empty", "empty", true},
		{"{ [x] : exists (y : 2y = x) and 1 <= x <= 9 }", 0, "2", "8", true},
		{"{ [i] : 0 <= i < 4; [i] : 10 <= i < 12 }", 0, "0", "11", true},
	} {
		s := MustParseSet(c.src)
		lo, hi := s.DimBounds(c.dim)
		if lo.String() != c.lo || hi.String() != c.hi || (lo.Exact && hi.Exact) != c.exact {
			t.Errorf("%s dim %d: got [%s, %s] exact %v %v; want [%s, %s] exact %v", c.src, c.dim, lo, hi, lo.Exact, hi.Exact, c.lo, c.hi, c.exact)
		}
	}
	// The box of C[i*32 + ii] over the ii loop, for a fixed outer i: the
	// region compute-at asks for.
	hull := ImageHull(MustParseSet("[i] -> { [ii] : 0 <= ii < 32 and 32i + ii < 100 }"), MustParseMap("[i] -> { [ii] -> C[32i + ii] }"))
	if got := fmt.Sprint(hull[0].Lo, " ", hull[0].Hi); got != "32i min(32i + 31, 99)" {
		t.Errorf("image hull: %s", got)
	}
}

// TestBoundsRandom compares DimBounds with enumeration on random sets, with
// and without a parameter: exact bounds must equal the enumerated extreme
// at every parameter value, and inexact ones must not cut off any point.
// 400 random sets (150 with -short, 1000 with -long).
func TestBoundsRandom(t *testing.T) {
	n := 400
	switch {
	case *long:
		n = 1000
	case testing.Short():
		n = 150
	}
	r := rand.New(rand.NewPCG(11, 13))
	for iter := 0; iter < n; iter++ {
		src := randomSet(r)
		withParam := r.IntN(2) == 0
		if withParam {
			src = "[N] -> " + src[:len(src)-2] + " and N >= -2 and N <= 2 and x <= N + 2 }"
			if r.IntN(2) == 0 {
				src = src[:len(src)-2] + " and y >= N - 1 }"
			}
		}
		s, err := ParseSet(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		ns := []int64{0}
		if withParam {
			ns = []int64{-2, -1, 0, 1, 2}
		}
		pointsAt := map[int64]map[string]bool{}
		for _, N := range ns {
			var params []int64
			if withParam {
				params = []int64{N}
			}
			pointsAt[N] = points(s, params, 4)
		}
		for d := 0; d < 3; d++ {
			lo, hi := s.DimBounds(d)
			for _, N := range ns {
				var params []int64
				if withParam {
					params = []int64{N}
				}
				pts := pointsAt[N]
				if len(pts) == 0 {
					continue
				}
				min, max := int64(1<<40), int64(-1<<40)
				for key := range pts {
					var x [3]int64
					fmt.Sscanf(key, "[%d %d %d]", &x[0], &x[1], &x[2])
					min, max = minI(min, x[d]), maxI(max, x[d])
				}
				check := func(b Bound, want int64, lower bool) {
					v, ok := b.Eval(params)
					if !ok {
						t.Fatalf("%s dim %d at N=%d: bound %s is unbounded or empty but the set has points", src, d, N, b)
					}
					w := IntOf(want)
					if b.Exact && !v.Equal(w) || lower && v.Cmp(w) > 0 || !lower && v.Cmp(w) < 0 {
						t.Fatalf("%s dim %d at N=%d: bound %s = %s (exact %v), extreme %d", src, d, N, b, v, b.Exact, want)
					}
				}
				check(lo, min, true)
				check(hi, max, false)
			}
		}
	}
}

func minI(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

func maxI(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// TestDimBoundsGivesUp: eliminating y from 130 lower and 130 upper bounds
// would make 16 900 inequalities in one Fourier-Motzkin step, past
// maxShadowRows: x's bounds come back unbounded and inexact (valid, if
// useless) instead of the elimination growing without bound.
func TestDimBoundsGivesUp(t *testing.T) {
	var cs []string
	for i := 1; i <= 130; i++ {
		cs = append(cs, fmt.Sprintf("y >= %dx - %d", i, i*i), fmt.Sprintf("y <= %d - %dx", 1000000+i*i, i))
	}
	s := MustParseSet("{ [x, y] : " + strings.Join(cs, " and ") + " }")
	lo, hi := s.DimBounds(0)
	for _, b := range []Bound{lo, hi} {
		if !b.Unbounded || b.Exact {
			t.Errorf("bound of x: unbounded %v, exact %v; want an unbounded, inexact bound", b.Unbounded, b.Exact)
		}
	}
}

// TestPruneConstPieces: constant pieces pruned without the solver keep
// what the solver's pairwise questions keep, ties, divisors and contexts
// that hold nowhere included.
func TestPruneConstPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	for iter := 0; iter < 2000; iter++ {
		n := 2 + r.IntN(6)
		var pieces []Aff
		for range n {
			pieces = append(pieces, Aff{Const: IntOf(int64(r.IntN(13) - 6)), Div: IntOf(int64(1 + r.IntN(3)))}.reduced())
		}
		var context []row
		for range r.IntN(3) {
			c := newRow(0)
			c[0] = IntOf(int64(r.IntN(5) - 1))
			context = append(context, c)
		}
		lower := r.IntN(2) == 0
		got := pruneConstPieces(pieces, context, lower)
		want := prunePiecesSolved(pieces, context, lower)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("pieces %v, context %v, lower %v: got %v, the solver %v", pieces, context, lower, got, want)
		}
	}
}

// TestConstUpper: a bound with a constant piece in each part has a
// constant upper bound, at least every value the dimension takes; one
// without (N alone) has none.
func TestConstUpper(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int64
		ok   bool
	}{
		{"[N] -> { A[i] : 0 <= i < 4 and i < N }", 3, true},
		{"[N] -> { A[i] : 0 <= i < N }", 0, false},
		{"[N] -> { A[i] : 0 <= i < 4 and 2i < N + 4 }", 3, true},
		{"[N] -> { A[i] : 0 <= i < 4 or 10 <= i < 12 and i < N }", 11, true},
	} {
		s := MustParseSet(c.src)
		_, hi := s.DimBounds(0)
		got, ok := hi.ConstUpper()
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%s: upper bound %v: ConstUpper = %d, %v; want %d, %v", c.src, hi, got, ok, c.want, c.ok)
		}
		if !ok {
			continue
		}
		for n := int64(0); n < 20; n++ {
			for i := got + 1; i < got+20; i++ {
				if s.Contains([]int64{n}, []int64{i}) {
					t.Errorf("%s: contains %d at N = %d, beyond %d", c.src, i, n, got)
				}
			}
		}
	}
	lower, _ := MustParseSet("{ A[i] : 0 <= i < 4 }").DimBounds(0)
	if _, ok := lower.ConstUpper(); ok {
		t.Error("a lower bound gave a constant upper bound")
	}
}

// TestParamsAtLeast: the part of a set where every parameter is at least
// the value.
func TestParamsAtLeast(t *testing.T) {
	s := MustParseSet("[N, K] -> { A[i] : 0 <= i < N + K }")
	p := s.ParamsAtLeast(1)
	for n := int64(0); n < 4; n++ {
		for k := int64(0); k < 4; k++ {
			for i := int64(0); i < 8; i++ {
				want := s.Contains([]int64{n, k}, []int64{i}) && n >= 1 && k >= 1
				if got := p.Contains([]int64{n, k}, []int64{i}); got != want {
					t.Errorf("N=%d K=%d i=%d: %v, want %v", n, k, i, got, want)
				}
			}
		}
	}
}

// TestExactShadowDeclinesHugeProducts: a Fourier-Motzkin step whose
// shadow would take more than maxShadowRows rows is declined (the local
// stays, which is still exact) instead of built: ComputeAt of a strided
// convolution's input phases under a tile's loop asked for 2380 x 2380
// rows and took the machine's memory. Below the bound, the step runs.
func TestExactShadowDeclinesHugeProducts(t *testing.T) {
	bounds := func(n int, sign int64) []row {
		var rs []row
		for i := range n {
			r := newRow(2) // x_0 (eliminated), x_1
			r[1] = IntOf(sign)
			r[2] = IntOf(int64(i%7) - 3)
			r[0] = IntOf(int64(i))
			rs = append(rs, r)
		}
		return rs
	}
	if _, ok := exactShadow(bounds(200, 1), bounds(200, -1), 0); ok {
		t.Errorf("a shadow of 200 x 200 rows was built, want it declined (bound %d)", maxShadowRows)
	}
	out, ok := exactShadow(bounds(20, 1), bounds(20, -1), 0)
	if !ok || len(out) != 400 {
		t.Errorf("a shadow of 20 x 20 unit rows: exact %v, %d rows, want exact, 400", ok, len(out))
	}
}
