package module

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
)

// TestAlphaForms: functions that differ only in names share a form, a
// schedule of one renames into a schedule of the other, and numbers are
// not names.
func TestAlphaForms(t *testing.T) {
	src := func(x, y, blk string) string {
		return `func k[N: int32](` + x + `: float32[N], ` + y + `: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      ScheduleBlock(` + blk + `) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, N))
        reads(` + x + `[vi])
        writes(` + y + `[vi])
        ` + y + `[vi] = ` + x + `[vi] * 1.5e-05f + 12.0f
      }
    }
  }
}`
	}
	parse := func(s string) *ast.Func {
		f, err := ast.Parse(s)
		if err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
		return f
	}
	a, b := parse(src("X", "Y", "B")), parse(src("e05", "x1", "C"))
	fa, fb := alphaOf(a), alphaOf(b)
	if fa.text != fb.text {
		t.Fatalf("alpha-equivalent functions have different forms:\n%q\n%q", fa.text, fb.text)
	}
	if c := alphaOf(parse(src("X", "X2", "B"))); c.text != fa.text {
		t.Errorf("renaming Y to X2 changed the form")
	}
	// Intrinsics, dtypes and keywords are not names: other computations.
	for _, other := range []string{
		strings.Replace(src("X", "Y", "B"), "X[vi] * 1.5e-05f", "exp(X[vi])", 1),
		strings.Replace(src("X", "Y", "B"), "X[vi] * 1.5e-05f", "log(X[vi])", 1),
		strings.NewReplacer("float32", "float64", "1.5e-05f", "1.5e-05", "12.0f", "12.0").Replace(src("X", "Y", "B")),
		strings.Replace(src("X", "Y", "B"), "serial for", "parallel for", 1),
	} {
		if o := alphaOf(parse(other)); o.text == fa.text {
			t.Errorf("another computation has the same form:\n%s", other)
		}
	}
	if e, l := alphaOf(parse(strings.Replace(src("X", "Y", "B"), "X[vi] * 1.5e-05f", "exp(X[vi])", 1))),
		alphaOf(parse(strings.Replace(src("X", "Y", "B"), "X[vi] * 1.5e-05f", "log(X[vi])", 1))); e.text == l.text {
		t.Errorf("exp and log share a form")
	}
	got, ok := renameLike(a, fa, fb)
	if !ok {
		t.Fatal("renameLike refused")
	}
	if ast.Hash(got) != ast.Hash(b) {
		t.Errorf("renamed:\n%s\nwant:\n%s", got, b)
	}
	if !strings.Contains(got.String(), "1.5e-05") {
		t.Errorf("a number was renamed:\n%s", got)
	}
	// A name a schedule adds (here the loop i_new) that is a name of the
	// target (its block's) would be captured: refused.
	scheduled := parse(strings.NewReplacer("(i, 0, N)", "(i_new, 0, N)", "axis.bind(i)", "axis.bind(i_new)").Replace(src("X", "Y", "B")))
	if _, ok := renameLike(scheduled, fa, alphaOf(parse(src("X", "Y", "i_new")))); ok {
		t.Errorf("a rename that captures a name was accepted")
	}
	if _, ok := renameLike(scheduled, fa, alphaOf(parse(src("X", "Y", "D")))); !ok {
		t.Errorf("a rename without capture was refused")
	}
}

// TestRepeatedLayersDecidedOnce: a graph of two alpha-equivalent layers
// (a matmul and a softmax each, on their own weights) decides each
// computation's schedule once, builds one native kernel for it, and runs
// both layers right.
func TestRepeatedLayersDecidedOnce(t *testing.T) {
	g, err := fusion.ParseJSON([]byte(`{"name": "two", "inputs": [{"name": "X", "dtype": "float32", "shape": ["N", 4]}],
	  "constants": [{"name": "W1", "dtype": "float32", "shape": [4, 4], "data": [1,0,0,0, 0,2,0,0, 0,0,1,0, 0,0,0,1]},
	                {"name": "W2", "dtype": "float32", "shape": [4, 4], "data": [0,1,0,0, 1,0,0,0, 0,0,0,1, 0,0,1,0]}],
	  "nodes": [{"op": "matmul", "inputs": ["X", "W1"], "output": "A"}, {"op": "softmax", "inputs": ["A"], "output": "B"},
	            {"op": "matmul", "inputs": ["B", "W2"], "output": "C"}, {"op": "softmax", "inputs": ["C"], "output": "D"}],
	  "outputs": ["D"]}`))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := native.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	before := decided.Load()
	m, err := Compile(g, Options{Cache: cache, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	natives := map[*native.Kernel]bool{}
	for _, k := range m.kernels {
		if k.native != nil {
			natives[k.native] = true
		}
	}
	if n := decided.Load() - before; int(n) != len(natives) || len(natives) >= len(m.kernels) {
		t.Errorf("%d kernels, %d schedules decided, %d native kernels: want the repeated layer's decided and built once", len(m.kernels), n, len(natives))
	}
	x := []float32{1, 2, 3, 4, -1, 0, 1, 0}
	outs := map[string]Tensor{"D": {Shape: []int64{2, 4}, Data: make([]float32, 8)}}
	if err := m.Run(map[string]Tensor{"X": {Shape: []int64{2, 4}, Data: x}}, outs); err != nil {
		t.Fatal(err)
	}
	p, err := fusion.Compile(g, fusion.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Interpret(map[string]int64{"N": 2}, map[string]any{"X": x})
	if err != nil {
		t.Fatal(err)
	}
	got, w := outs["D"].Data.([]float32), want["D"].([]float32)
	for i := range w {
		if d := got[i] - w[i]; d > 1e-6 || d < -1e-6 {
			t.Errorf("D[%d] = %v, interpreter %v", i, got[i], w[i])
		}
	}
}
