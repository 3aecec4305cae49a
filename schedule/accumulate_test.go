package schedule

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

// halfDot is S[i] = sum over k of X[i, k] * W[k], all float16: every
// product and every partial sum rounded to float16.
const halfDot = `func dot(X: float16[4, 512], W: float16[512], S: float16[4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      serial for (k, 0, 512) {
        ScheduleBlock(S) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, 4), vk = reduce(0, 512))
          reads(S[vi], X[vi, vk], W[vk])
          writes(S[vi])
          init {
            S[vi] = 0.0h
          }
          S[vi] = S[vi] + X[vi, vk] * W[vk]
        }
      }
    }
  }
}`

// TestAccumulate: a float16 dot product accumulated in float32 computes
// its update in float32 (the products exact, the sums rounded to
// float32) and rounds once on the way back: the printed function says
// so, and its results are at least as close to the exact dot products as
// the float16 sums, much closer on long rows, within one float16 rounding
// of the exact value. The trace replays it, and it prints as Go.
func TestAccumulate(t *testing.T) {
	f := mustParseFunc(t, halfDot)
	for _, scope := range []string{"local", "global"} {
		s, err := New(f, WithValidation(true))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.GetBlock("S")
		wb, err := s.Accumulate(b, "S", ast.Float32, scope)
		if err != nil {
			t.Fatal(Explain(err))
		}
		text := ast.Print(s.Func())
		for _, want := range []string{"S_" + scope + ": float32[4]", "S_" + scope + "[vi] = S_" + scope + "[vi] + float32(X[vi, vk]) * float32(W[vk])", "S[v0] = float16(S_" + scope + "[v0])"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: no %q in\n%s", scope, want, text)
			}
		}
		if scope == "local" {
			// Next to its block, as a cache_write's copy.
			ls, _ := s.GetLoops(b)
			if err := s.ReverseComputeAt(wb, ls[0]); err != nil {
				t.Fatal(Explain(err))
			}
		}
		r := rand.New(rand.NewPCG(3, 4))
		x, w := make([]uint16, 4*512), make([]uint16, 512)
		for i := range x {
			x[i] = ast.Float16Bits(r.Float64())
		}
		for i := range w {
			w[i] = ast.Float16Bits(r.Float64())
		}
		run := func(g *ast.Func) []float64 {
			args := map[string]any{"X": x, "W": w, "S": make([]uint16, 4)}
			if err := ast.Interpret(g, nil, args); err != nil {
				t.Fatal(err)
			}
			out := make([]float64, 4)
			for i, h := range args["S"].([]uint16) {
				out[i] = ast.Float16Value(h)
			}
			return out
		}
		half, wide := run(f), run(s.Func())
		for i := range 4 {
			exact := 0.0
			for k := range 512 {
				exact += ast.Float16Value(x[i*512+k]) * ast.Float16Value(w[k])
			}
			errHalf, errWide := math.Abs(half[i]-exact), math.Abs(wide[i]-exact)
			if ulp := exact * math.Pow(2, -10); errWide > ulp {
				t.Errorf("%s: row %d: float32 sums give %g, %g from the exact %g (more than a float16 rounding)", scope, i, wide[i], errWide, exact)
			}
			if errWide > errHalf {
				t.Errorf("%s: row %d: float32 sums (%g off) are further from the exact value than float16 sums (%g off)", scope, i, errWide, errHalf)
			}
		}
		again, err := Replay(f, s.Trace(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if ast.Hash(again.Func()) != ast.Hash(s.Func()) {
			t.Errorf("replay gives another function:\n%s", ast.Print(again.Func()))
		}
		if g := s.Trace().Go(); !strings.Contains(g, "sch.Accumulate(") || !strings.Contains(g, "ast.Float32") {
			t.Errorf("Trace.Go has no Accumulate call:\n%s", g)
		}
		if tr, err := ParseTraceText(s.Trace().String()); err != nil {
			t.Errorf("the trace's text does not read back: %v", err)
		} else if again, err := Replay(f, tr, nil); err != nil || ast.Hash(again.Func()) != ast.Hash(s.Func()) {
			t.Errorf("the trace's text replays to another function (%v)", err)
		}
	}
}

// TestAccumulateRefused: Accumulate takes a reduction with an init that
// updates a float buffer narrower than the type asked for; anything else
// is refused with the reason.
func TestAccumulateRefused(t *testing.T) {
	f := mustParseFunc(t, halfDot)
	for _, c := range []struct {
		name, buf string
		dt        ast.DType
		prep      func(s *Schedule) error
		want      string
	}{
		{"not wider", "S", ast.Float16, nil, "float16 is not a wider float type"},
		{"bfloat16 is no wider", "S", ast.BFloat16, nil, "bfloat16 is not a wider float type"},
		{"integer", "S", ast.Int32, nil, "the accumulator type int32 is not a float type"},
		{"read only", "W", ast.Float32, nil, "block S does not write"},
		{"unknown", "Q", ast.Float32, nil, `block S does not access a buffer named "Q"`},
		{"decomposed", "S", ast.Float32, func(s *Schedule) error {
			b, _ := s.GetBlock("S")
			ls, _ := s.GetLoops(b)
			_, err := s.DecomposeReduction(b, ls[1])
			return err
		}, "is not a reduction with an init"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(f, WithValidation(true))
			if err != nil {
				t.Fatal(err)
			}
			if c.prep != nil {
				if err := c.prep(s); err != nil {
					t.Fatal(err)
				}
			}
			b, _ := s.GetBlock("S")
			before := ast.Hash(s.Func())
			_, err = s.Accumulate(b, c.buf, c.dt, "local")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "accumulate") {
				t.Fatalf("got %v, want an accumulate error: %s", err, c.want)
			}
			if ast.Hash(s.Func()) != before {
				t.Error("a refused accumulate changed the function")
			}
		})
	}
}
