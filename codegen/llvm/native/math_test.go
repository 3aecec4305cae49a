package native

import (
	"fmt"
	"math"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// mathInputs are the arguments each intrinsic is checked on: a sweep of
// ordinary values and the special ones (zeros, infinities, NaN,
// subnormals, the edges of exp's range).
func mathInputs() []float64 {
	xs := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1e-40, -1e-40, 1e-45,
		88.7, 88.8, -87.3, -103, -104, -150, 1e30, -1e30, 0.5, -0.5, 0.625, -0.625, 1, -1, 2, 10, -10, 100}
	for x := -20.0; x <= 20; x += 0.173 {
		xs = append(xs, x)
	}
	for e := -30; e <= 30; e += 3 {
		xs = append(xs, math.Pow(10, float64(e)), 1.5*math.Pow(2, float64(e)))
	}
	return xs
}

// TestMathIntrinsics checks every intrinsic on every float type, in a
// vectorized loop (the lanes' implementations) and a serial one, against
// the interpreter: within a few units in the last place (under rerunSubset
// each type in one loop, vectorized and serial in turn).
func TestMathIntrinsics(t *testing.T) {
	xs := mathInputs()
	n := len(xs)
	types := []ast.DType{ast.Float32, ast.Float64, ast.Float16, ast.BFloat16}
	for di, dt := range types {
		for _, kind := range pick(di, []string{"vectorized", "serial"}) {
			var body string
			for f := ast.IntrinsicExp; f <= ast.IntrinsicCos; f++ {
				call := fmt.Sprintf("%s(A[vi])", f)
				if f == ast.IntrinsicPow {
					call = "pow(A[vi], 0.75" + suffix(dt) + ")"
				}
				body += fmt.Sprintf("          R[%d, vi] = %s\n", int(f)-1, call)
			}
			nf := int(ast.IntrinsicCos)
			src := fmt.Sprintf(`func m(A: %[1]s[%[2]d], R: %[1]s[%[3]d, %[2]d]) {
  ScheduleBlock(root) {
    %[4]s for (i, 0, %[2]d) {
      ScheduleBlock(R) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, %[2]d))
        reads(A[vi])
        writes(R[0:+%[3]d, vi])
%[5]s      }
    }
  }
}`, dt, n, nf, kind, body)
			f, err := ast.Parse(src)
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			k, err := Compile(f, llvm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			a := encode(dt, xs)
			got, want := newData(dt, nf*n), newData(dt, nf*n)
			if err := ast.Interpret(f, nil, map[string]any{"A": a, "R": want}); err != nil {
				t.Fatal(err)
			}
			if err := k.Run(nil, map[string]any{"A": a, "R": got}); err != nil {
				t.Fatal(err)
			}
			g, w := ast.Float64s(dt, got), ast.Float64s(dt, want)
			for j := range w {
				fn := ast.Intrinsic(j/n + 1)
				if !nearlyEqual(g[j], w[j], ulpTolerance(dt, fn)) {
					t.Errorf("%s %s %s(%g) = %g, interpreter %g", dt, kind, fn, ast.Float64s(dt, a)[j%n], g[j], w[j])
				}
			}
		}
	}
}

func suffix(t ast.DType) string {
	switch t {
	case ast.Float32:
		return "f"
	case ast.Float64:
		return ""
	case ast.Float16:
		return "h"
	}
	return "bf"
}

// ulpTolerance is the relative error allowed: loom's float32
// implementations are within a few ulp of float32 (2^-23); float64 goes
// to the C library; the 16-bit types round a float32 result once more.
func ulpTolerance(t ast.DType, f ast.Intrinsic) float64 {
	switch t {
	case ast.Float64:
		return 1e-14
	case ast.Float16:
		return 1.0 / 1024
	case ast.BFloat16:
		return 1.0 / 128
	}
	return 4.0 / (1 << 23)
}

func nearlyEqual(g, w, tol float64) bool {
	switch {
	case math.IsNaN(w) || math.IsNaN(g):
		return math.IsNaN(w) && math.IsNaN(g)
	case math.IsInf(w, 0) || math.IsInf(g, 0):
		return g == w
	case w == 0:
		return math.Abs(g) < 1e-37
	}
	return math.Abs(g-w) <= tol*math.Abs(w) || math.Abs(g-w) < 1e-38
}

func newData(t ast.DType, n int) any {
	switch t {
	case ast.Float32:
		return make([]float32, n)
	case ast.Float64:
		return make([]float64, n)
	}
	return make([]uint16, n)
}

func encode(t ast.DType, xs []float64) any {
	switch t {
	case ast.Float32:
		d := make([]float32, len(xs))
		for i, x := range xs {
			d[i] = float32(x)
		}
		return d
	case ast.Float64:
		return append([]float64(nil), xs...)
	}
	d := make([]uint16, len(xs))
	for i, x := range xs {
		if t == ast.Float16 {
			d[i] = ast.Float16Bits(x)
		} else {
			d[i] = ast.BFloat16Bits(x)
		}
	}
	return d
}

// TestMinMax checks min and max against the interpreter bit for bit on
// every pair of special values (NaN in either operand, zeros of both signs,
// infinities, subnormals), at every vector width and serially, with and
// without the AVX-512DQ range instruction (under rerunSubset each type
// and feature set at one width, in turn).
func TestMinMax(t *testing.T) {
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		1, -1, 2, -3, 1e-40, -1e-40, 1e30, -1e30}
	var xs, ys []float64
	for _, x := range specials {
		for _, y := range specials {
			xs, ys = append(xs, x), append(ys, y)
		}
	}
	n := len(xs)
	for di, dt := range []ast.DType{ast.Float32, ast.Float64} {
		src := fmt.Sprintf(`func m(A: %[1]s[%[2]d], B: %[1]s[%[2]d], R: %[1]s[2, %[2]d]) {
  ScheduleBlock(root) {
    vectorized for (i, 0, %[2]d) {
      ScheduleBlock(R) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, %[2]d))
        reads(A[vi], B[vi])
        writes(R[0:+2, vi])
        R[0, vi] = min(A[vi], B[vi])
        R[1, vi] = max(A[vi], B[vi])
      }
    }
  }
}`, dt, n)
		f, err := ast.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		a, b := encode(dt, xs), encode(dt, ys)
		want := newData(dt, 2*n)
		if err := ast.Interpret(f, nil, map[string]any{"A": a, "B": b, "R": want}); err != nil {
			t.Fatal(err)
		}
		for fi, features := range []string{"", "-avx512dq"} {
			for _, bits := range pick(2*di+fi, []int{128, 256, 512}) {
				opts := llvm.Options{VectorBits: bits, Target: llvm.Target{CPU: "native", Features: features}}
				k, err := Compile(f, opts)
				if err != nil {
					t.Fatal(err)
				}
				got := newData(dt, 2*n)
				if err := k.Run(nil, map[string]any{"A": a, "B": b, "R": got}); err != nil {
					t.Fatal(err)
				}
				g, w := ast.Float64s(dt, got), ast.Float64s(dt, want)
				for j := range w {
					same := math.Float64bits(g[j]) == math.Float64bits(w[j]) || math.IsNaN(g[j]) && math.IsNaN(w[j])
					if !same {
						op := [2]string{"min", "max"}[j/n]
						t.Errorf("%s %d bits %q: %s(%g, %g) = %g, interpreter %g", dt, bits, features, op, xs[j%n], ys[j%n], g[j], w[j])
					}
				}
			}
		}
	}
}

// TestMinMaxConstant checks min and max of a value and a constant (a
// ReLU's 0, a ReLU6's 6; compiled as one compare and select) against the
// interpreter bit for bit, the constant on either side, for every special
// value of the other operand (NaN, zeros of both signs, infinities,
// subnormals), at every vector width and serially.
func TestMinMaxConstant(t *testing.T) {
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		1, -1, 6, -3, 1e-40, -1e-40, 1e30, -1e30}
	n := len(specials)
	for _, dt := range []ast.DType{ast.Float32, ast.Float64} {
		suffix := map[ast.DType]string{ast.Float32: "f", ast.Float64: ""}[dt]
		for _, k := range []string{"0.0", "-0.0", "6.0", "-1.0", "1e30"} {
			c := k + suffix
			src := fmt.Sprintf(`func m(A: %[1]s[%[2]d], R: %[1]s[4, %[2]d]) {
  ScheduleBlock(root) {
    vectorized for (i, 0, %[2]d) {
      ScheduleBlock(R) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, %[2]d))
        reads(A[vi])
        writes(R[0:+4, vi])
        R[0, vi] = min(A[vi], %[3]s)
        R[1, vi] = max(A[vi], %[3]s)
        R[2, vi] = min(%[3]s, A[vi])
        R[3, vi] = max(%[3]s, A[vi])
      }
    }
  }
}`, dt, n, c)
			f, err := ast.Parse(src)
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			a := encode(dt, specials)
			want := newData(dt, 4*n)
			if err := ast.Interpret(f, nil, map[string]any{"A": a, "R": want}); err != nil {
				t.Fatal(err)
			}
			for _, bits := range []int{0, 256} {
				k, err := Compile(f, llvm.Options{VectorBits: bits})
				if err != nil {
					t.Fatal(err)
				}
				got := newData(dt, 4*n)
				if err := k.Run(nil, map[string]any{"A": a, "R": got}); err != nil {
					t.Fatal(err)
				}
				g, w := ast.Float64s(dt, got), ast.Float64s(dt, want)
				for j := range w {
					if math.Float64bits(g[j]) != math.Float64bits(w[j]) && !(math.IsNaN(g[j]) && math.IsNaN(w[j])) {
						op := [4]string{"min(x, c)", "max(x, c)", "min(c, x)", "max(c, x)"}[j/n]
						t.Errorf("%s, %d bits: %s with x = %g, c = %s: %g, interpreter %g", dt, bits, op, specials[j%n], c, g[j], w[j])
					}
				}
			}
		}
	}
}

// TestFloat32MathDense checks loom's own float32 implementations on a
// dense sample of each one's interesting range (every 251st float32,
// both signs) in a vectorized loop, within 2 ulp of the exact result
// (2.5 for sigmoid, whose e^-|x|, sum and quotient each round): the
// sweep of TestMathIntrinsics is too coarse to find a polynomial's worst
// point.
func TestFloat32MathDense(t *testing.T) {
	type check struct {
		lo, hi float32
		exact  func(float64) float64
	}
	checks := map[ast.Intrinsic]check{
		ast.IntrinsicErf:     {1e-6, 6, math.Erf},
		ast.IntrinsicExp:     {1e-6, 88, math.Exp},
		ast.IntrinsicExp2:    {1e-6, 127, math.Exp2},
		ast.IntrinsicLog:     {1e-30, 1e30, math.Log},
		ast.IntrinsicTanh:    {1e-6, 10, math.Tanh},
		ast.IntrinsicSigmoid: {1e-6, 80, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
	}
	step := uint32(251)
	if testing.Short() {
		step = 4001
	}
	for fn, c := range checks {
		var xs []float32
		for b := math.Float32bits(c.lo); b <= math.Float32bits(c.hi); b += step {
			x := math.Float32frombits(b)
			xs = append(xs, x)
			if fn != ast.IntrinsicLog {
				xs = append(xs, -x)
			}
		}
		n := len(xs)
		src := fmt.Sprintf(`func m(A: float32[%[1]d], R: float32[%[1]d]) {
  ScheduleBlock(root) {
    vectorized for (i, 0, %[1]d) {
      ScheduleBlock(R) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, %[1]d))
        reads(A[vi])
        writes(R[vi])
        R[vi] = %[2]s(A[vi])
      }
    }
  }
}`, n, fn)
		f, err := ast.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		k, err := Compile(f, llvm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float32, n)
		if err := k.Run(nil, map[string]any{"A": xs, "R": got}); err != nil {
			t.Fatal(err)
		}
		worst, at := 0.0, float32(0)
		for i, x := range xs {
			exact := c.exact(float64(x))
			w := float32(exact)
			if w == 0 || math.IsInf(float64(w), 0) || math.Abs(exact) < 0x1p-126 {
				continue
			}
			_, e := math.Frexp(exact) // the exact value's binade: |exact| in [2^(e-1), 2^e)
			ulp := math.Ldexp(1, e-24)
			if d := math.Abs(float64(got[i])-exact) / ulp; d > worst {
				worst, at = d, x
			}
		}
		t.Logf("%s: %d values, worst %.2f ulp at %g", fn, n, worst, at)
		bound := 2.0
		if fn == ast.IntrinsicSigmoid {
			bound = 2.5
		}
		if worst > bound {
			t.Errorf("%s(%g) is %.2f ulp from the exact value", fn, at, worst)
		}
	}
}
