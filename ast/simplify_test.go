package ast

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// vars declares int32 variables with bounds: "i:0:15" is i in [0, 15]; a
// bare name is unbounded.
func analyzerFor(t *testing.T, decls ...string) (*Analyzer, []Node) {
	t.Helper()
	a := NewAnalyzer()
	var scope []Node
	for _, d := range decls {
		parts := strings.Split(d, ":")
		scope = append(scope, NewVar(parts[0], Int32))
		if len(parts) == 3 {
			var lo, hi int64
			fmt.Sscan(parts[1], &lo)
			fmt.Sscan(parts[2], &hi)
			a.Bind(parts[0], Interval{lo, hi})
		}
	}
	return a, scope
}

func TestSimplify(t *testing.T) {
	cases := []struct {
		vars []string
		in   string
		want string
	}{
		// The canonical affine form.
		{[]string{"i", "j"}, "j + i * 64 - 1", "i * 64 + j - 1"},
		{[]string{"i"}, "i - i", "0"},
		{[]string{"i"}, "(i + 1) * 2 - 2", "i * 2"},
		{[]string{"i", "j"}, "0 - i + j", "j - i"},
		{[]string{"i", "j"}, "0 - i - j * 3", "0 - j * 3 - i"},
		{[]string{"i"}, "5 - i * 2", "5 - i * 2"},
		{[]string{"i", "j"}, "j * i + i * j", "i * j * 2"},
		{[]string{"i"}, "2 * (3 * i)", "i * 6"},
		// Division and modulus by constants, with and without bounds.
		{[]string{"i:0:15", "j:0:63"}, "(i * 64 + j) / 64", "i"},
		{[]string{"i:0:15", "j:0:63"}, "(i * 64 + j) % 64", "j"},
		{[]string{"i:0:15", "j:0:63"}, "floordiv(i * 64 + j, 64)", "i"},
		{[]string{"i:0:15", "j:0:63"}, "floormod(i * 64 + j, 64)", "j"},
		{[]string{"i", "j:0:63"}, "floordiv(i * 64 + j, 64)", "i"},
		{[]string{"i", "j:0:63"}, "floordiv(i * 64 + j + 128, 64)", "i + 2"},
		{[]string{"i:0:100", "j:-1000:1000"}, "floordiv(i * 64 + j, 64)", "floordiv(j, 64) + i"},
		// Unbounded, j alone might overflow where i*64 + j does not: no split.
		{[]string{"i", "j"}, "floordiv(i * 64 + j, 64)", "floordiv(i * 64 + j, 64)"},
		{[]string{"i", "j", "k"}, "floordiv(i * 2 + j - k, 2)", "floordiv(i * 2 + j - k, 2)"},
		{[]string{"i"}, "floordiv(i * 4 + 2, 8)", "floordiv(i * 2 + 1, 4)"},
		{[]string{"i"}, "floormod(i * 4 + 2, 8)", "floormod(i * 2 + 1, 4) * 2"},
		{[]string{"i"}, "floormod(i * 8 + 3, 4)", "3"},
		{[]string{"i:0:1000"}, "floordiv(i + 70, 64)", "floordiv(i + 6, 64) + 1"},
		{[]string{"i"}, "floordiv(i + 70, 64)", "floordiv(i + 70, 64)"},
		{[]string{"i"}, "floordiv(floordiv(i, 4), 8)", "floordiv(i, 32)"},
		{[]string{"i"}, "floormod(floormod(i, 32), 8)", "floormod(i, 8)"},
		{[]string{"i"}, "floormod(floormod(i, 8), 32)", "floormod(i, 8)"}, // the inner one is in [0, 8)
		{[]string{"i"}, "floordiv(i, 1) + floormod(i, 1)", "i"},
		{[]string{"i"}, "i / 4", "i / 4"}, // i may be negative: truncation differs
		{[]string{"i:0:100"}, "i / 4", "floordiv(i, 4)"},
		{[]string{"i", "n"}, "floordiv(i, n)", "floordiv(i, n)"},
		{[]string{"io:0:3", "ii:0:31"}, "floordiv(io * 32 + ii, 32) * 32 + floormod(io * 32 + ii, 32)", "io * 32 + ii"},
		// Comparisons, min and max decided by bounds.
		{[]string{"i:0:63"}, "i < 64", "true"},
		{[]string{"i:0:63"}, "i >= 64", "false"},
		{[]string{"i"}, "i < i + 1", "true"},
		{[]string{"io:0:3", "ii:0:31"}, "io * 32 + ii < 100", "io * 32 + ii < 100"},
		{[]string{"io:0:2", "ii:0:31"}, "io * 32 + ii < 100", "true"},
		{[]string{"i:0:63"}, "min(i, 64)", "i"},
		{[]string{"i:0:63"}, "max(i, 0)", "i"},
		{[]string{"i", "j"}, "min(j, i)", "min(i, j)"},
		{[]string{"i"}, "max(i + 1, i)", "i + 1"},
		// A comparison with one min or max in its difference splits when
		// half of it is decided.
		{[]string{"x:0:2", "k"}, "x < min(7, k * 3 + 2) - k * 3 + 1", "k * 3 + x < 8"},
		{[]string{"x:0:2", "k"}, "x < min(8 - k * 3, 3)", "k * 3 + x < 8"},
		{[]string{"x:0:9", "k:0:3"}, "x < max(k, 20)", "true"},
		{[]string{"x:0:9", "k"}, "max(k, 20) <= x", "false"},
		{[]string{"x", "k"}, "x < min(k, 3)", "x < min(3, k)"},
		// Logic, select, cast, constant folding.
		{[]string{"i"}, "i < 4 && true", "i < 4"},
		{[]string{"i"}, "i < 4 || true", "true"},
		{[]string{"i"}, "!(i < 4)", "i >= 4"},
		{[]string{"i"}, "!!(i < 4)", "i < 4"},
		{[]string{"i"}, "select(3 > 2, i, 0)", "i"},
		{[]string{"i"}, "select(i < 3, i + 1, 1 + i)", "i + 1"},
		{[]string{"i"}, "int32(i)", "i"},
		{nil, "int64(7)", "7L"},
		{nil, "1.5f * 2.0f", "3.0f"},
		{nil, "float32(0.1)", "0.1f"},
		{nil, "sqrt(4.0f)", "2.0f"},
		{nil, "floordiv(-7, 2)", "-4"},
		{nil, "7 / 0", "7 / 0"}, // left for the run time to report
		{[]string{"i:2:2"}, "i * 3", "6"},
	}
	for _, c := range cases {
		a, scope := analyzerFor(t, c.vars...)
		e, err := ParseExpr(c.in, scope...)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := Print(a.Simplify(e)); got != c.want {
			t.Errorf("Simplify(%s) with %v = %s, want %s", c.in, c.vars, got, c.want)
		}
	}
}

func TestSimplifyFloatIsExact(t *testing.T) {
	x := NewVar("x", Float32)
	for _, src := range []string{"x + 0.0f", "x * 1.0f", "x - x", "x * 0.0f"} {
		e, err := ParseExpr(src, x)
		if err != nil {
			t.Fatal(err)
		}
		if got := Print(Simplify(e)); got != src {
			t.Errorf("Simplify(%s) = %s; float rewrites like this are not exact", src, got)
		}
	}
}

func TestSimplifyReturnsInputWhenUnchanged(t *testing.T) {
	i := NewVar("i", Int32)
	e, _ := ParseExpr("i * 64 + floordiv(i, 3)", i)
	if Simplify(e) != e {
		t.Errorf("Simplify of a canonical expression returned a new node")
	}
}

func TestBound(t *testing.T) {
	a, scope := analyzerFor(t, "i:0:15", "j:-4:3", "n")
	for _, c := range []struct {
		in   string
		want Interval
	}{
		{"i * 64 + j", Interval{-4, 963}},
		{"i - j", Interval{-3, 19}},
		{"floordiv(j, 4)", Interval{-1, 0}},
		{"floormod(j, 4)", Interval{0, 3}},
		{"j % 4", Interval{-3, 3}},
		{"floormod(i, 32)", Interval{0, 15}},
		{"min(i, j)", Interval{-4, 3}},
		{"select(i < 3, i, 100)", Interval{0, 100}},
		{"abs(j)", Interval{0, 4}},
		{"n", Interval{-1 << 31, 1<<31 - 1}},
		{"n * 2", Interval{-1 << 31, 1<<31 - 1}},
		{"n - n", Interval{0, 0}},
	} {
		e, err := ParseExpr(c.in, scope...)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Bound(e); got != c.want {
			t.Errorf("Bound(%s) = %v, want %v", c.in, got, c.want)
		}
	}
}

// randIntExpr builds a random int32 expression over vars whose values stay
// small, so that nothing overflows.
func randIntExpr(r *rand.Rand, vars []*Var, depth int) Expr {
	if depth == 0 || r.IntN(4) == 0 {
		if r.IntN(3) == 0 {
			return I32(int32(r.IntN(21) - 10))
		}
		return vars[r.IntN(len(vars))]
	}
	sub := func() Expr { return randIntExpr(r, vars, depth-1) }
	c := func() Expr { return I32(int32(r.IntN(9) + 1)) }
	switch r.IntN(12) {
	case 0, 1:
		return Add(sub(), sub())
	case 2:
		return Sub(sub(), sub())
	case 3:
		return Mul(sub(), I32(int32(r.IntN(11)-5)))
	case 4:
		return FloorDiv(sub(), c())
	case 5:
		return FloorMod(sub(), c())
	case 6:
		return Div(sub(), c())
	case 7:
		return Mod(sub(), c())
	case 8:
		return Min(sub(), sub())
	case 9:
		return Max(sub(), sub())
	case 10:
		ops := []BinaryOp{OpLT, OpLE, OpEQ, OpNE, OpGT, OpGE}
		cond := Expr(&Binary{Op: ops[r.IntN(len(ops))], A: sub(), B: sub()})
		if r.IntN(3) == 0 {
			cond = LogicalNot(cond)
		}
		return NewSelect(cond, sub(), sub())
	default:
		return Mul(sub(), sub())
	}
}

// TestSimplifyProperty checks on random expressions that simplification
// preserves the value at every sampled point within the variables' bounds,
// that it is idempotent, and that Bound contains every value.
func TestSimplifyProperty(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 1000
	}
	r := rand.New(rand.NewPCG(1, 2))
	vars := []*Var{NewVar("a", Int32), NewVar("b", Int32), NewVar("c", Int32)}
	for iter := 0; iter < n; iter++ {
		e := randIntExpr(r, vars, 4)
		a := NewAnalyzer()
		bounds := map[string]Interval{}
		for _, v := range vars {
			if r.IntN(4) == 0 {
				continue // unbounded
			}
			lo := int64(r.IntN(41) - 20)
			iv := Interval{lo, lo + int64(r.IntN(40))}
			bounds[v.Name] = iv
			a.Bind(v.Name, iv)
		}
		s := a.Simplify(e)
		if err := verifyExpr(s); err != nil {
			t.Fatalf("Simplify(%s) = %s is ill-typed: %v", e, s, err)
		}
		if s2 := a.Simplify(s); Print(s2) != Print(s) {
			t.Fatalf("not idempotent:\n  e   = %s\n  s   = %s\n  s(s)= %s", e, s, s2)
		}
		bound := a.Bound(e)
		for k := 0; k < 20; k++ {
			in := &interp{}
			for _, v := range vars {
				iv, ok := bounds[v.Name]
				if !ok {
					iv = Interval{-30, 30}
				}
				in.bind1(v.Name, value{i: iv.Min + int64(r.IntN(int(iv.Max-iv.Min+1)))})
			}
			var want, got value
			if err := catch(func() { want = in.eval(e) }); err != nil {
				continue
			}
			if err := catch(func() { got = in.eval(s) }); err != nil {
				t.Fatalf("Simplify(%s) = %s fails where the input does not: %v (env %v)", e, s, err, in.env)
			}
			if want.i != got.i {
				t.Fatalf("Simplify changed the value:\n  e = %s\n  s = %s\n  env %v: %d != %d", e, s, in.env, want.i, got.i)
			}
			if want.i < bound.Min || want.i > bound.Max {
				t.Fatalf("Bound(%s) = %v does not contain %d (env %v)", e, bound, want.i, in.env)
			}
		}
	}
}

func TestSimplifyStmt(t *testing.T) {
	f, err := Parse(`func f[N: int32](A: float32[64], B: float32[N]) {
  serial for (io, 0, 4) {
    serial for (ii, 0, 16) {
      ScheduleBlock(A) {
        vi = axis.bind(floordiv(io * 16 + ii, 16) * 16 + floormod(io * 16 + ii, 16))
        axis.domain(vi = spatial(0, 64))
        predicate(io * 16 + ii < 64)
        writes(A[vi])
        if (vi < 64) {
          A[vi] = 1.0f
        }
      }
    }
  }
  serial for (i, 0, N) {
    if (i >= 0 && 1 < 2) {
      B[i] = float32(i - i)
    }
  }
}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := `func f[N: int32](A: float32[64], B: float32[N]) {
  serial for (io, 0, 4) {
    serial for (ii, 0, 16) {
      ScheduleBlock(A) {
        vi = axis.bind(io * 16 + ii)
        axis.domain(vi = spatial(0, 64))
        writes(A[vi])
        A[vi] = 1.0f
      }
    }
  }
  serial for (i, 0, N) {
    B[i] = 0.0f
  }
}
`
	g := SimplifyFunc(f)
	if got := Print(g); got != want {
		t.Errorf("SimplifyFunc:\n%s\nwant:\n%s", got, want)
	}
	if err := Verify(g); err != nil {
		t.Error(err)
	}
	if SimplifyFunc(g) != g {
		t.Error("SimplifyFunc of a simplified function returned a new function")
	}
}

// TestSimplifyNoNewOverflow checks the case where splitting a division
// would evaluate a partial sum that overflows int32 although the original
// expression does not.
func TestSimplifyNoNewOverflow(t *testing.T) {
	i, j, k := NewVar("i", Int32), NewVar("j", Int32), NewVar("k", Int32)
	e, err := ParseExpr("floordiv(i * 2 + j - k, 2)", i, j, k)
	if err != nil {
		t.Fatal(err)
	}
	s := Simplify(e)
	in := &interp{env: []binding{{"i", value{i: -1 << 30}}, {"j", value{i: 1<<31 - 1}}, {"k", value{i: -1}}}}
	if got, want := in.eval(s).i, in.eval(e).i; got != want {
		t.Errorf("Simplify(%s) = %s gives %d, want %d", e, s, got, want)
	}
}

func TestSimplifyFuncPrintsBack(t *testing.T) {
	f, err := Parse(`func f(A: float32[4]) {
  serial for (i, 0, 4) {
    if (1 < 0) {
      A[i] = 1.0f
    }
    A[i] = 2.0f
  }
}
`)
	if err != nil {
		t.Fatal(err)
	}
	text := Print(SimplifyFunc(f))
	g, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if Print(g) != text || text != "func f(A: float32[4]) {\n  serial for (i, 0, 4) {\n    A[i] = 2.0f\n  }\n}\n" {
		t.Errorf("simplified function prints as\n%s", text)
	}
}

func TestIntToHalfRoundsOnce(t *testing.T) {
	x := int64(1<<60 + 1<<52 + 1) // just above the midpoint between two bfloat16 values
	if got, want := evalCast(BFloat16, Int64, value{i: x}).f, float64(1<<60+1<<53); got != want {
		t.Errorf("bfloat16(%d) = %v, want %v", x, got, want)
	}
	if got := evalCast(Float16, Int64, value{i: x}).f; !math.IsInf(got, 1) {
		t.Errorf("float16(%d) = %v, want +Inf", x, got)
	}
	if got := evalCast(Float32, Int64, value{i: x}).f; got != float64(float32(x)) {
		t.Errorf("float32(%d) = %v", x, got)
	}
}

func TestSymbolicRanges(t *testing.T) {
	i, j, n := NewVar("i", Int32), NewVar("j", Int32), NewVar("N", Int32)
	a := NewAnalyzer()
	a.Bind("N", Interval{0, 1<<31 - 1})
	a.BindRange("i", I32(0), n)
	a.BindRange("j", i, Sub(n, i))
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{LT(i, n), "true"},
		{GE(i, n), "false"},
		{LE(j, Sub(n, I32(1))), "true"},
		{GE(j, i), "true"},
		{LT(j, i), "false"},
		{Min(i, Sub(n, I32(1))), "i"},
		{LT(Add(i, I32(1)), n), "i + 1 < N"},
	} {
		if got := Print(a.Simplify(c.e)); got != c.want {
			t.Errorf("Simplify(%s) = %s, want %s", c.e, got, c.want)
		}
	}
}

// TestSymbolicRangesProperty checks the symbolic ranges on random linear
// comparisons over nested triangular loops: whatever the analyzer decides
// must hold at every point of the ranges.
func TestSymbolicRangesProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	n, i, j, k := NewVar("N", Int32), NewVar("i", Int32), NewVar("j", Int32), NewVar("k", Int32)
	a := NewAnalyzer()
	a.Bind("N", Interval{1, 8})
	a.BindRange("i", I32(0), n)
	a.BindRange("j", i, Sub(n, i))
	a.BindRange("k", I32(0), Add(j, I32(1)))
	ops := []BinaryOp{OpLT, OpLE, OpGT, OpGE, OpEQ, OpNE}
	for iter := 0; iter < 3000; iter++ {
		var e Expr = I32(int32(r.IntN(9) - 4))
		for _, v := range []*Var{n, i, j, k} {
			if c := r.IntN(5) - 2; c != 0 {
				e = Add(e, Mul(v, I32(int32(c))))
			}
		}
		cmp := &Binary{Op: ops[r.IntN(len(ops))], A: e, B: I32(0)}
		c, ok := a.Simplify(cmp).(*Const)
		if !ok {
			continue
		}
		for N := int64(1); N <= 8; N++ {
			for I := int64(0); I < N; I++ {
				for J := I; J < N; J++ {
					for K := int64(0); K <= J; K++ {
						in := &interp{env: []binding{{"N", value{i: N}}, {"i", value{i: I}}, {"j", value{i: J}}, {"k", value{i: K}}}}
						if in.eval(cmp).i != c.Int {
							t.Fatalf("%s decided %v but is %v at N=%d i=%d j=%d k=%d", cmp, c.Int, in.eval(cmp).i, N, I, J, K)
						}
					}
				}
			}
		}
	}
}

// TestJoinDivMod: k·floordiv(x, k) + floormod(x, k) is x, as a fuse of
// split loops leaves it, inside other terms and divisions too.
func TestJoinDivMod(t *testing.T) {
	f := NewVar("f", Int32)
	g := NewVar("g", Int32)
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{Add(Mul(FloorDiv(f, I32(2)), I32(2)), FloorMod(f, I32(2))), "f"},
		{FloorDiv(Add(Mul(FloorDiv(f, I32(2)), I32(2)), FloorMod(f, I32(2))), I32(3)), "floordiv(f, 3)"},
		{Add(Add(Mul(FloorDiv(f, I32(4)), I32(12)), Mul(FloorMod(f, I32(4)), I32(3))), I32(1)), "f * 3 + 1"},
		{Add(Mul(FloorDiv(Add(f, g), I32(8)), I32(8)), FloorMod(Add(f, g), I32(8))), "f + g"},
		// Not the identity: different divisors, or coefficients.
		{Add(Mul(FloorDiv(f, I32(4)), I32(2)), FloorMod(f, I32(2))), "floordiv(f, 4) * 2 + floormod(f, 2)"},
		{Add(FloorDiv(f, I32(2)), FloorMod(f, I32(2))), "floordiv(f, 2) + floormod(f, 2)"},
	} {
		if got := Print(Simplify(c.e)); got != c.want {
			t.Errorf("Simplify(%s) = %s, want %s", Print(c.e), got, c.want)
		}
	}
}
