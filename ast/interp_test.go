package ast_test

import (
	"errors"
	"github.com/loom-go/loom/internal/golden"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/workload"
)

// checkSame fails unless got and want hold the same data, bit for bit.
func checkSame(t *testing.T, name string, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		switch w := w.(type) {
		case []float32:
			g := got[k].([]float32)
			for i := range w {
				if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
					t.Fatalf("%s: %s[%d] = %v, reference %v", name, k, i, g[i], w[i])
				}
			}
		case []int32:
			g := got[k].([]int32)
			for i := range w {
				if g[i] != w[i] {
					t.Fatalf("%s: %s[%d] = %v, reference %v", name, k, i, g[i], w[i])
				}
			}
		default:
			t.Fatalf("%s: unexpected data %T", name, w)
		}
	}
}

// TestInterpretWorkloads runs every workload of the corpus and compares it
// with its plain Go reference. The references do the same float32
// operations in the same order, so the results must match exactly.
func TestInterpretWorkloads(t *testing.T) {
	cases := workload.All()
	// The chain at several values of its symbolic sizes, empty ones too.
	for _, s := range [][2]int{{1, 1}, {2, 5}, {0, 3}} {
		cases = append(cases, workload.Chain(s[0], s[1], 1024))
	}
	for _, c := range cases {
		args := c.Args(7)
		want := check.Clone(args)
		if err := ast.Interpret(c.Func, c.Sizes, args); err != nil {
			t.Fatalf("%s: %s", c.Name, ast.Explain(c.Func, err))
		}
		c.Ref(want)
		checkSame(t, c.Name, args, want)
	}
}

func goldenFunc(t *testing.T, name string) *ast.Func {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("..", "testdata", "ast", "print", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	text, _ := golden.Section(ar, "func.loom")
	f, err := ast.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestInterpretGPUMatmul runs the GPU-bound matrix multiply with its shared
// buffer (loops bound to blocks and threads run serially) against the
// unscheduled one.
func TestInterpretGPUMatmul(t *testing.T) {
	f := goldenFunc(t, "gpu_matmul_shared")
	ref := workload.Matmul(64, 64, 64)
	args := ref.Args(3)
	want := check.Clone(args)
	if err := ast.Interpret(f, nil, args); err != nil {
		t.Fatal(ast.Explain(f, err))
	}
	ref.Ref(want)
	checkSame(t, "gpu matmul", args, want)
}

func TestInterpretTailPredicate(t *testing.T) {
	f := goldenFunc(t, "tail_predicate")
	a := make([]float32, 100)
	for i := range a {
		a[i] = float32(i)
	}
	b := make([]float32, 100)
	if err := ast.Interpret(f, nil, map[string]any{"A": a, "B": b}); err != nil {
		t.Fatal(ast.Explain(f, err))
	}
	for i := range b {
		if b[i] != 2*float32(i) {
			t.Fatalf("B[%d] = %v, want %v", i, b[i], 2*float32(i))
		}
	}
}

func mustParse(t *testing.T, src string) *ast.Func {
	t.Helper()
	f, err := ast.Parse(src)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return f
}

// elementwise returns a one-block function over A[n] -> B[n] whose read
// index, binding and domain the test chooses.
func elementwise(read, binding, extent string) string {
	return `func f(A: float32[4], B: float32[4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      ScheduleBlock(B) {
        vi = axis.bind(` + binding + `)
        axis.domain(vi = spatial(0, ` + extent + `))
        reads(A[vi])
        writes(B[vi])
        B[vi] = A[` + read + `]
      }
    }
  }
}
`
}

func TestInterpretFaults(t *testing.T) {
	four := func() map[string]any { return map[string]any{"A": make([]float32, 4), "B": make([]float32, 4)} }
	cases := []struct {
		name, src string
		sizes     map[string]int64
		args      map[string]any
		is        error
		msg       string
	}{
		{
			name: "out of bounds",
			src: `func f(A: float32[4]) {
  serial for (i, 0, 5) {
    A[i] = 1.0f
  }
}
`,
			args: map[string]any{"A": make([]float32, 4)},
			is:   ast.ErrOutOfBounds,
			msg:  `ast: interpret: out-of-bounds store to A[4]: A has shape [4]; statement "A[i] = 1.0f"`,
		},
		{
			name: "outside the read region",
			src:  elementwise("vi + 1", "i", "3"),
			args: four(),
			is:   ast.ErrRuntime,
			msg:  "ast: interpret: block B accesses A[1], outside the region its reads declare for A",
		},
		{
			name: "binding outside the domain",
			src:  elementwise("vi", "i", "3"),
			args: four(),
			is:   ast.ErrRuntime,
			msg:  "ast: interpret: block B: vi = 3 is outside its domain [0, 3)",
		},
		{
			name: "division by zero",
			src: `func f(A: int32[4]) {
  serial for (i, 0, 4) {
    A[i] = 8 / (i - 2)
  }
}
`,
			args: map[string]any{"A": make([]int32, 4)},
			is:   ast.ErrRuntime,
			msg:  `ast: interpret: integer division by zero in "8 / (i - 2)"`,
		},
		{
			name: "missing size",
			src:  "func f[N: int32](A: float32[N]) {\n}\n",
			args: map[string]any{"A": make([]float32, 4)},
			is:   ast.ErrRuntime,
			msg:  "ast: interpret: no value given for size N",
		},
		{
			name:  "negative size",
			src:   "func f[N: int32](A: float32[N]) {\n}\n",
			sizes: map[string]int64{"N": -1},
			args:  map[string]any{"A": make([]float32, 4)},
			is:    ast.ErrRuntime,
			msg:   "ast: interpret: size N = -1 is negative or out of the int32 range",
		},
		{
			name:  "unknown size",
			src:   "func f[N: int32](A: float32[N]) {\n}\n",
			sizes: map[string]int64{"N": 4, "M": 2},
			args:  map[string]any{"A": make([]float32, 4)},
			is:    ast.ErrRuntime,
			msg:   "ast: interpret: M is not a symbolic size of f",
		},
		{
			name:  "wrong length",
			src:   "func f[N: int32](A: float32[N, 2]) {\n}\n",
			sizes: map[string]int64{"N": 4},
			args:  map[string]any{"A": make([]float32, 4)},
			is:    ast.ErrRuntime,
			msg:   "ast: interpret: buffer A has shape [4 2] (8 elements), but its data has 4 elements",
		},
		{
			name: "wrong element type",
			src:  "func f(A: float32[4]) {\n}\n",
			args: map[string]any{"A": make([]float64, 4)},
			is:   ast.ErrRuntime,
			msg:  "ast: interpret: buffer A holds float32, so its data must be a []float32, not []float64",
		},
		{
			name: "missing buffer",
			src:  "func f(A: float32[4]) {\n}\n",
			args: map[string]any{},
			is:   ast.ErrRuntime,
			msg:  "ast: interpret: no data given for buffer A",
		},
		{
			name: "unknown buffer",
			src:  "func f(A: float32[4]) {\n}\n",
			args: map[string]any{"A": make([]float32, 4), "Z": make([]float32, 1)},
			is:   ast.ErrRuntime,
			msg:  "ast: interpret: Z is not a buffer parameter of f",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := mustParse(t, c.src)
			err := ast.Interpret(f, c.sizes, c.args)
			if !errors.Is(err, c.is) {
				t.Fatalf("got %v, want an error wrapping %v", err, c.is)
			}
			if err.Error() != c.msg {
				t.Errorf("message:\n got %s\nwant %s", err, c.msg)
			}
			// Every fault points at nodes that Explain can mark.
			if c.is == ast.ErrOutOfBounds || strings.Contains(c.msg, "block") || strings.Contains(c.msg, "zero") {
				if ex := ast.Explain(f, err); !strings.Contains(ex, "\n> ") && !strings.Contains(ex, "^") {
					t.Errorf("Explain marks nothing:\n%s", ex)
				}
			}
		})
	}
}

func TestInterpretOutOfBoundsDetails(t *testing.T) {
	f := mustParse(t, `func f(A: float32[4], B: float32[4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      ScheduleBlock(B) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 4))
        reads(A[vi + 1])
        writes(B[vi])
        B[vi] = A[vi + 1]
      }
    }
  }
}
`)
	err := ast.Interpret(f, nil, map[string]any{"A": make([]float32, 4), "B": make([]float32, 4)})
	oob, ok := errors.AsType[*ast.OutOfBoundsError](err)
	if !ok {
		t.Fatalf("got %v, want an *OutOfBoundsError", err)
	}
	if oob.Buffer.Name != "A" || oob.Block != "B" || len(oob.Index) != 1 || oob.Index[0] != 4 {
		t.Errorf("got buffer %s block %s index %v", oob.Buffer.Name, oob.Block, oob.Index)
	}
	if _, ok := oob.Access.(*ast.Load); !ok {
		t.Errorf("access is %T, want *ast.Load", oob.Access)
	}
	want := `ast: interpret: out-of-bounds load from A[4] in block B: A has shape [4]; statement "B[vi] = A[vi + 1]"`
	if err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
	ex := ast.Explain(f, err)
	if !strings.Contains(ex, ">         B[vi] = A[vi + 1]\n"+strings.Repeat(" ", 18)+"^^^^^^^^^\n") {
		t.Errorf("Explain does not mark the load:\n%s", ex)
	}
}

// TestInterpretInit checks that a reduction's init runs once per output
// element, when every reduce variable is at its minimum, even when the
// reduce loop is split and its outer part is outside the spatial loop.
func TestInterpretInit(t *testing.T) {
	f := mustParse(t, `func rowsum(X: float32[3, 8], Y: float32[3]) {
  ScheduleBlock(root) {
    serial for (ko, 0, 2) {
      serial for (i, 0, 3) {
        serial for (ki, 0, 4) {
          ScheduleBlock(Y) {
            vi, vk = axis.bind(i, ko * 4 + ki)
            axis.domain(vi = spatial(0, 3), vk = reduce(0, 8))
            reads(Y[vi], X[vi, vk])
            writes(Y[vi])
            init {
              Y[vi] = 0.0f
            }
            Y[vi] = Y[vi] + X[vi, vk]
          }
        }
      }
    }
  }
}
`)
	x := make([]float32, 24)
	for i := range x {
		x[i] = float32(i)
	}
	y := []float32{-1, -1, -1} // init must overwrite these
	if err := ast.Interpret(f, nil, map[string]any{"X": x, "Y": y}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float32{28, 92, 156} {
		if y[i] != want {
			t.Errorf("Y[%d] = %v, want %v", i, y[i], want)
		}
	}
}

// TestInterpretPoison checks that a temporary read before it is written
// shows up as NaN in the result.
func TestInterpretPoison(t *testing.T) {
	f := mustParse(t, `func f(A: float32[4]) {
  alloc T: float32[4]
  serial for (i, 0, 4) {
    A[i] = T[i] + 1.0f
  }
}
`)
	a := make([]float32, 4)
	if err := ast.Interpret(f, nil, map[string]any{"A": a}); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(a[0])) {
		t.Errorf("A[0] = %v, want NaN from the uninitialized temporary", a[0])
	}
}

// TestInterpretSemantics pins the arithmetic the interpreter defines and the
// code generators must reproduce.
func TestInterpretSemantics(t *testing.T) {
	f := mustParse(t, `func f(I: int32[10], L: int64[2], B: bool[2], F: float32[2]) {
  I[0] = floordiv(-7, 2)
  I[1] = floormod(-7, 2)
  I[2] = -7 / 2
  I[3] = -7 % 2
  I[4] = 2147483647 + 1
  I[5] = int32(3.9e+09f)
  I[6] = int32(-2.7f)
  I[7] = int32(nanf)
  I[8] = abs(-5)
  I[9] = select(I[0] < 0 || I[100] > 0, 1, 2)
  L[0] = int64(2147483647) + 1L
  L[1] = int64(-1)
  B[0] = float32(1) > 0.5f && !false
  B[1] = bool(0.0f)
  F[0] = float32(16777217)
  F[1] = float32(0.1)
}
`)
	i32, i64, bs, fs := make([]int32, 10), make([]int64, 2), make([]bool, 2), make([]float32, 2)
	if err := ast.Interpret(f, nil, map[string]any{"I": i32, "L": i64, "B": bs, "F": fs}); err != nil {
		t.Fatal(ast.Explain(f, err))
	}
	wantI := []int32{-4, 1, -3, -1, math.MinInt32, math.MaxInt32, -2, 0, 5, 1}
	for i, w := range wantI {
		if i32[i] != w {
			t.Errorf("I[%d] = %d, want %d", i, i32[i], w)
		}
	}
	if i64[0] != 2147483648 || i64[1] != -1 {
		t.Errorf("L = %v", i64)
	}
	if !bs[0] || bs[1] {
		t.Errorf("B = %v", bs)
	}
	if fs[0] != 16777216 || fs[1] != float32(0.1) {
		t.Errorf("F = %v", fs)
	}
}

func TestInterpretHalf(t *testing.T) {
	f := mustParse(t, `func f(H: float16[3], Bf: bfloat16[3]) {
  serial for (i, 0, 3) {
    H[i] = H[i] + 1.0h
    Bf[i] = Bf[i] * 2.0bf
  }
}
`)
	h := []uint16{ast.Float16Bits(0.5), ast.Float16Bits(2048), ast.Float16Bits(65504)}
	bf := []uint16{ast.BFloat16Bits(1.5), ast.BFloat16Bits(-3), ast.BFloat16Bits(3e38)}
	if err := ast.Interpret(f, nil, map[string]any{"H": h, "Bf": bf}); err != nil {
		t.Fatal(err)
	}
	// 2048 + 1 and 65504 + 1 are not float16 values: they round back down.
	for i, want := range []float64{1.5, 2048, 65504} {
		if got := ast.Float16Value(h[i]); got != want {
			t.Errorf("H[%d] = %v, want %v", i, got, want)
		}
	}
	for i, want := range []float64{3, -6, math.Inf(1)} {
		if got := ast.BFloat16Value(bf[i]); got != want {
			t.Errorf("Bf[%d] = %v, want %v", i, got, want)
		}
	}
}

func TestHalfEncodings(t *testing.T) {
	for _, c := range []struct {
		v    float64
		bits uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {math.Ldexp(1, -24), 0x0001},
		{math.Ldexp(1, -25), 0x0000}, {math.Ldexp(3, -25), 0x0002}, {1 + math.Ldexp(1, -11), 0x3c00},
		{1 + 3*math.Ldexp(1, -11), 0x3c02}, {math.Inf(-1), 0xfc00}, {math.Copysign(0, -1), 0x8000},
	} {
		if got := ast.Float16Bits(c.v); got != c.bits {
			t.Errorf("Float16Bits(%v) = %#04x, want %#04x", c.v, got, c.bits)
		}
	}
	for _, c := range []struct {
		v    float64
		bits uint16
	}{
		{1, 0x3f80}, {-2, 0xc000}, {1 + math.Ldexp(1, -8), 0x3f80}, {1 + 3*math.Ldexp(1, -8), 0x3f82},
		{math.Inf(1), 0x7f80}, {math.Ldexp(1, -133), 0x0001},
	} {
		if got := ast.BFloat16Bits(c.v); got != c.bits {
			t.Errorf("BFloat16Bits(%v) = %#04x, want %#04x", c.v, got, c.bits)
		}
	}
	// Every encoding decodes to a value that encodes back to it (NaNs aside).
	for b := 0; b < 1<<16; b++ {
		for _, f := range []struct {
			enc func(float64) uint16
			dec func(uint16) float64
		}{{ast.Float16Bits, ast.Float16Value}, {ast.BFloat16Bits, ast.BFloat16Value}} {
			v := f.dec(uint16(b))
			if math.IsNaN(v) {
				continue
			}
			if got := f.enc(v); got != uint16(b) {
				t.Fatalf("encoding %#04x decodes to %v, which encodes to %#04x", b, v, got)
			}
		}
	}
}

// TestInterpretWithin: the budget counts loop iterations; a run within it
// reports what it spent and the results of Interpret, one beyond it stops
// with ErrBudget, naming the loop it stopped in.
func TestInterpretWithin(t *testing.T) {
	f := goldenFunc(t, "tail_predicate")
	run := func(budget int64) (int64, []float32, error) {
		a, b := make([]float32, 100), make([]float32, 100)
		for i := range a {
			a[i] = float32(i)
		}
		n, err := ast.InterpretWithin(f, nil, map[string]any{"A": a, "B": b}, budget)
		return n, b, err
	}
	spent, want, err := run(0)
	if err != nil || spent == 0 {
		t.Fatalf("no budget: spent %d, %v", spent, err)
	}
	if n, got, err := run(spent); err != nil || n != spent || !slices.Equal(got, want) {
		t.Errorf("a budget of exactly %d: spent %d, %v", spent, n, err)
	}
	n, _, err := run(spent - 1)
	if !errors.Is(err, ast.ErrBudget) || n != spent || !strings.Contains(err.Error(), "at loop") {
		t.Errorf("a budget of %d: spent %d, %v; want ErrBudget at the %dth iteration, naming its loop", spent-1, n, err, spent)
	}
}
