package errbound_test

import (
	"math"
	"slices"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/errbound"
	"github.com/loom-go/loom/internal/workload"
)

const colsum = `func colsum[N: int32, M: int32](X: float32[N, M], Y: float32[M]) {
  ScheduleBlock(root) {
    serial for (j, 0, M) {
      serial for (i, 0, N) {
        ScheduleBlock(Y) {
          vj, vi = axis.bind(j, i)
          axis.domain(vj = spatial(0, M), vi = reduce(0, N))
          reads(Y[vj], X[vi, vj])
          writes(Y[vj])
          init {
            Y[vj] = 0.0f
          }
          Y[vj] = Y[vj] + X[vi, vj]
        }
      }
    }
  }
}`

// everyOp uses every intrinsic, select, casts and min/max, on values kept
// inside each function's domain.
const everyOp = `func ops[N: int32](X: float32[N], Z: float32[N], Y: float32[N]) {
  ScheduleBlock(root) {
    alloc T: float32[N]
    serial for (i, 0, N) {
      ScheduleBlock(T) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, N))
        reads(X[vi], Z[vi])
        writes(T[vi])
        T[vi] = select(X[vi] > 0.0f, exp(X[vi]) / (1.0f + abs(Z[vi])), tanh(X[vi]) * erf(Z[vi])) + sigmoid(X[vi]) - sqrt(abs(Z[vi]) + 1.0f) + log(abs(X[vi]) + 2.0f)
      }
    }
    serial for (j, 0, N) {
      ScheduleBlock(Y) {
        vj = axis.bind(j)
        axis.domain(vj = spatial(0, N))
        reads(T[vj], X[vj], Z[vj])
        writes(Y[vj])
        Y[vj] = pow(abs(T[vj]) + 1.0f, Z[vj]) + rsqrt(abs(Z[vj]) + 0.5f) + float32(float64(X[vj]) * 2.0) + max(T[vj], Z[vj]) - min(X[vj], Z[vj]) + floor(X[vj] * 4.0f) + sin(X[vj]) + cos(Z[vj]) + exp2(X[vj]) + log2(abs(Z[vj]) + 1.0f) + float32(vj) * 0.001f
      }
    }
  }
}`

func parse(t *testing.T, src string) *ast.Func {
	t.Helper()
	f, err := ast.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// run interprets f at sizes on the inputs of seed and returns every
// parameter's data.
func run(t *testing.T, f *ast.Func, sizes map[string]int64) map[string]any {
	t.Helper()
	args := workload.Case{Func: f, Sizes: sizes}.Args(1)
	if err := ast.Interpret(f, sizes, args); err != nil {
		t.Fatal(err)
	}
	return args
}

type twinCase struct {
	name  string
	f     *ast.Func
	sizes map[string]int64
}

// twinCases are functions the twin tests run: a long reduction, every
// operation, and two normalizations.
func twinCases(t *testing.T) []twinCase {
	return []twinCase{
		{"colsum", parse(t, colsum), map[string]int64{"N": 300, "M": 5}},
		{"every op", parse(t, everyOp), map[string]int64{"N": 200}},
		{"softmax", workload.Softmax(4, 100).Func, nil},
		{"rmsnorm", workload.RMSNorm(4, 100).Func, nil},
	}
}

// TestTwinComputesTheSameValues: the twin's outputs are the function's,
// bit for bit, and its variances are finite and not negative.
func TestTwinComputesTheSameValues(t *testing.T) {
	for _, c := range twinCases(t) {
		t.Run(c.name, func(t *testing.T) {
			g, shadows, err := errbound.Twin(c.f)
			if err != nil {
				t.Fatal(err)
			}
			want, got := run(t, c.f, c.sizes), run(t, g, c.sizes)
			if len(shadows) == 0 {
				t.Fatal("no output has shadows")
			}
			for name, sh := range shadows {
				p := c.f.Param(name)
				if d := check.MaxRelErr(got[name], want[name]); d != 0 {
					t.Errorf("%s: the twin's values differ from the function's by %g", name, d)
				}
				for i, v := range got[sh[1]].([]float64) {
					if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
						t.Fatalf("%s: variance %g at %d", name, v, i)
					}
				}
				if ex, at := errbound.Excess(p.DType, got[name], want[name], got[sh[1]].([]float64)); ex != 0 {
					t.Errorf("%s: excess %g at %d over the same values", name, ex, at)
				}
			}
		})
	}
}

// TestColumnSumInAnyOrder: sums of 4096 floats taken in other orders (the
// rfactor and vectorized schedules a tuner finds) are within the bounds,
// which a fixed relative tolerance of 1e-5 rejects; a sum with one term
// dropped, doubled or taken from the next column is not.
func TestColumnSumInAnyOrder(t *testing.T) {
	const n, m = 4096, 256
	f := parse(t, colsum)
	g, shadows, err := errbound.Twin(f)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{"N": n, "M": m}
	out := run(t, g, sizes)
	want, variance := out["Y"].([]float32), out[shadows["Y"][1]].([]float64)
	x := workload.Case{Func: f, Sizes: sizes}.Args(1)["X"].([]float32)
	col := func(j int) []float32 {
		c := make([]float32, n)
		for i := range c {
			c[i] = x[i*m+j]
		}
		return c
	}
	orders := map[string]func([]float32) float32{
		"reversed": func(c []float32) float32 {
			s := float32(0)
			for i := len(c) - 1; i >= 0; i-- {
				s += c[i]
			}
			return s
		},
		"pairwise": pairwise,
		"16 partial sums": func(c []float32) float32 {
			var p [16]float32
			for i, v := range c {
				p[i%16] += v
			}
			return pairwise(p[:])
		},
		"sorted by size": func(c []float32) float32 {
			c = slices.Clone(c)
			slices.SortFunc(c, func(a, b float32) int { return cmpAbs(b, a) })
			s := float32(0)
			for _, v := range c {
				s += v
			}
			return s
		},
		"exact": func(c []float32) float32 {
			s := 0.0
			for _, v := range c {
				s += float64(v)
			}
			return float32(s)
		},
	}
	fixed := 0
	for name, sum := range orders {
		got := make([]float32, m)
		for j := range got {
			got[j] = sum(col(j))
		}
		if ex, at := errbound.Excess(ast.Float32, got, want, variance); ex > 1 {
			t.Errorf("%s: a correct sum is rejected: %g of the tolerance at column %d", name, ex, at)
		}
		if e := check.MaxRelErr(got, want); e > check.Tolerance(ast.Float32) {
			t.Logf("%s: beyond the fixed tolerance (%g), within the bounds", name, e)
			fixed++
		}
	}
	if fixed == 0 {
		t.Error("every order passed the fixed tolerance too: the test shows nothing")
	}
	wrong := map[string]func(c []float32, j int) float32{
		"a term dropped":         func(c []float32, j int) float32 { return pairwise(c) - c[j*37%n] },
		"a term counted twice":   func(c []float32, j int) float32 { return pairwise(c) + c[j*37%n] },
		"a term of the next col": func(c []float32, j int) float32 { return pairwise(c) - c[j*37%n] + x[(j*37%n)*m+(j+1)%m] },
	}
	for name, sum := range wrong {
		caught := 0
		for j := range 16 {
			got := slices.Clone(want)
			c := col(j)
			got[j] = sum(c, j)
			if ex, _ := errbound.Excess(ast.Float32, got, want, variance); ex > 1 {
				caught++
			}
		}
		// A term smaller than the rounding error itself cannot be told
		// from it; on uniform data in [-1, 1) that is about one in ten.
		if caught < 12 {
			t.Errorf("%s: caught in %d of 16 columns", name, caught)
		}
	}
}

func pairwise(c []float32) float32 {
	if len(c) <= 2 {
		s := float32(0)
		for _, v := range c {
			s += v
		}
		return s
	}
	h := len(c) / 2
	return pairwise(c[:h]) + pairwise(c[h:])
}

func cmpAbs(a, b float32) int {
	a, b = float32(math.Abs(float64(a))), float32(math.Abs(float64(b)))
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestEveryOpInFloat64: the function computed in float64 and rounded at
// the end (a kernel that keeps more precision) is within the bounds.
func TestEveryOpInFloat64(t *testing.T) {
	f := parse(t, everyOp)
	g, shadows, err := errbound.Twin(f)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{"N": 500}
	out := run(t, g, sizes)
	wide := widen(f)
	in := workload.Case{Func: f, Sizes: sizes}.Args(1)
	exact := map[string]any{}
	for name, d := range in {
		exact[name] = ast.Float64s(ast.Float32, d)
	}
	if err := ast.Interpret(wide, sizes, exact); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 500)
	for i, v := range exact["Y"].([]float64) {
		got[i] = float32(v)
	}
	if ex, at := errbound.Excess(ast.Float32, got, out["Y"], out[shadows["Y"][1]].([]float64)); ex > 1 {
		t.Errorf("the float64 result is rejected: %g of the tolerance at %d (got %g, want %g)", ex, at, got[at], out["Y"].([]float32)[at])
	}
}

// widen returns f with every float32 buffer, constant and cast made
// float64.
func widen(f *ast.Func) *ast.Func {
	bufs := map[*ast.Buffer]*ast.Buffer{}
	buf := func(b *ast.Buffer) *ast.Buffer {
		if b.DType != ast.Float32 {
			return b
		}
		if w := bufs[b]; w != nil {
			return w
		}
		w := *b
		w.DType = ast.Float64
		bufs[b] = &w
		return &w
	}
	var expr func(ast.Expr) ast.Expr
	var stmt func(ast.Stmt) ast.Stmt
	expr = func(e ast.Expr) ast.Expr {
		e = ast.MapChildren(e, stmt, expr)
		switch e := e.(type) {
		case *ast.Load:
			return &ast.Load{Buffer: buf(e.Buffer), Indices: e.Indices}
		case *ast.Const:
			if e.DType == ast.Float32 {
				return ast.F64(e.Float)
			}
		case *ast.Cast:
			if e.To == ast.Float32 {
				return ast.NewCast(ast.Float64, e.X)
			}
		}
		return e
	}
	stmt = func(s ast.Stmt) ast.Stmt {
		s = ast.MapChildren(s, stmt, expr)
		switch s := s.(type) {
		case *ast.Store:
			return &ast.Store{Buffer: buf(s.Buffer), Indices: s.Indices, Value: s.Value}
		case *ast.Alloc:
			return &ast.Alloc{Buffer: buf(s.Buffer)}
		case *ast.ScheduleBlock:
			c := *s
			c.Reads, c.Writes = nil, nil
			for _, r := range s.Reads {
				c.Reads = append(c.Reads, ast.Region{Buffer: buf(r.Buffer), Ranges: r.Ranges})
			}
			for _, r := range s.Writes {
				c.Writes = append(c.Writes, ast.Region{Buffer: buf(r.Buffer), Ranges: r.Ranges})
			}
			return &c
		}
		return s
	}
	g := &ast.Func{Name: f.Name, Sizes: f.Sizes, Body: stmt(f.Body)}
	for _, p := range f.Params {
		g.Params = append(g.Params, buf(p))
	}
	return g
}

// TestTwinCompiles: the twin is an ordinary function; compiled, it gives
// the interpreter's values and variances (the autotuner runs it compiled,
// on tasks too large to interpret).
func TestTwinCompiles(t *testing.T) {
	for _, c := range twinCases(t) {
		t.Run(c.name, func(t *testing.T) {
			g, shadows, err := errbound.Twin(c.f)
			if err != nil {
				t.Fatal(err)
			}
			k, err := native.Compile(g, llvm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := run(t, g, c.sizes)
			got := workload.Case{Func: g, Sizes: c.sizes}.Args(1)
			if err := k.Run(c.sizes, got); err != nil {
				t.Fatal(err)
			}
			for name, sh := range shadows {
				for _, b := range []string{name, sh[0], sh[1]} {
					if d := check.MaxRelErr(got[b], want[b]); d > 1e-5 {
						t.Errorf("%s: compiled and interpreted differ by %g", b, d)
					}
				}
			}
		})
	}
}
