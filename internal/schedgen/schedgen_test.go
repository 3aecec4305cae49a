package schedgen

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// TestLoad: every file of the corpus parses, has sizes for its symbolic
// sizes, and runs in the interpreter at each binding.
func TestLoad(t *testing.T) {
	cs, err := Load("../../testdata/schedgen")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) < 10 {
		t.Fatalf("%d cases; the corpus has more", len(cs))
	}
	for _, c := range append(cs, Workloads()...) {
		for k, sizes := range c.Sizes {
			args := c.Args(sizes, uint64(k))
			if err := ast.Interpret(c.Func, sizes, args); err != nil {
				t.Errorf("%s at %v: %s", c.Name, sizes, ast.Explain(c.Func, err))
			}
		}
	}
}

// TestGenDeterministic: a generator with the same seed proposes the same
// ops, and the adversarial mode plans interactions (a compute_at after a
// reshaping of loops).
func TestGenDeterministic(t *testing.T) {
	c := Workloads()[1] // matmul with a bias and a ReLU
	run := func() []string {
		s, err := schedule.New(c.Func, schedule.WithValidation(false))
		if err != nil {
			t.Fatal(err)
		}
		g := NewGen(3, Adversarial)
		var out []string
		for range 40 {
			op := g.Next(s.Func())
			before := s.Func()
			op, err := op.Apply(s, func() { before = s.Func() })
			g.Observe(op, before, s.Func(), err == nil)
			out = append(out, op.String())
		}
		return out
	}
	a, b := run(), run()
	if !slices.Equal(a, b) {
		t.Fatalf("two runs with one seed differ:\n%v\n%v", a, b)
	}
	joined := strings.Join(a, " ")
	for _, prim := range []string{"split", "compute_at"} {
		if !strings.Contains(joined, prim+"(") {
			t.Errorf("40 ops without a %s: %v", prim, a)
		}
	}
}

// TestShrink: a failure planted in the native hook (any vectorized loop
// is a mismatch) shrinks to the shortest sequence that vectorizes, with
// the loops renamed as if the splits before it had not run.
func TestShrink(t *testing.T) {
	c := Case{Name: "matmul", Func: workload.Matmul(4, 4, 4).Func, Sizes: []map[string]int64{{}}, Source: "workload"}
	cfg := Config{Native: func(f *ast.Func, sizes map[string]int64, args map[string]any) error {
		vec := false
		ast.Inspect(f.Body, func(n ast.Node) bool {
			if l, ok := n.(*ast.For); ok && l.Kind == ast.Vectorized {
				vec = true
			}
			return true
		})
		if vec {
			return errors.New("planted failure")
		}
		return ast.Interpret(f, sizes, args)
	}}
	ops := []Op{
		{Prim: "split", Loops: []string{"j"}, Ints: []int{2, 2}},
		{Prim: "split", Loops: []string{"i"}, Ints: []int{-1, 2}},
		{Prim: "reorder", Loops: []string{"j_0", "i_0"}},
		{Prim: "split", Loops: []string{"j_1"}, Ints: []int{1, 2}},
		{Prim: "unroll", Loops: []string{"i_1"}},
		{Prim: "vectorize", Loops: []string{"j_1_1"}},
	}
	f := Replay(c, 1, ops, cfg)
	if f == nil || f.Kind != NativeMismatch {
		t.Fatalf("the planted failure is not found: %v", f)
	}
	got := Shrink(f, cfg)
	want := []Op{{Prim: "vectorize", Loops: []string{"j"}}}
	if len(got.Ops) != 1 || got.Ops[0].String() != want[0].String() {
		t.Errorf("shrunk to %v, want %v", got.Ops, want)
	}
	if got.Shrunk != len(ops) {
		t.Errorf("Shrunk = %d, want %d", got.Shrunk, len(ops))
	}
	if r := got.Report(); !strings.Contains(r, `sch.Vectorize(loop("j"))`) || !strings.Contains(r, "vectorize(") {
		t.Errorf("the report lacks the Go or the trace:\n%s", r)
	}
}

// TestRename: leaving out a split or a fuse renames the loops made from
// its outputs.
func TestRename(t *testing.T) {
	for _, tc := range []struct {
		op       Op
		in, want string
	}{
		{Op{Prim: "split", Loops: []string{"i"}, Ints: []int{2, 2}}, "i_0_1", "i_1"},
		{Op{Prim: "split", Loops: []string{"i"}, Ints: []int{2, 2}}, "i_1_j_fused", "i_j_fused"},
		{Op{Prim: "split", Loops: []string{"i"}, Ints: []int{2, 2}}, "xi_0", "xi_0"},
		{Op{Prim: "fuse", Loops: []string{"i", "j"}}, "i_j_fused_0", "i_0"},
		{Op{Prim: "tile", Loops: []string{"i", "j"}, Ints: []int{2, 2}}, "j_1", "j"},
	} {
		if got := rename(tc.in, renames(tc.op)); got != tc.want {
			t.Errorf("without %s, %s becomes %s, want %s", tc.op, tc.in, got, tc.want)
		}
	}
}

// TestParseOps: ops read back from the form String prints.
func TestParseOps(t *testing.T) {
	ops := []Op{
		{Prim: "split", Loops: []string{"i"}, Ints: []int{-1, 4}},
		{Prim: "fuse", Loops: []string{"i_0", "j"}},
		{Prim: "tile", Loops: []string{"i", "j"}, Ints: []int{2, 3}},
		{Prim: "bind", Loops: []string{"i"}, Str: "threadIdx.x"},
		{Prim: "compute_at", Block: "Y", Loops: []string{"i_j_fused"}},
		{Prim: "compute_inline", Block: "Y"},
		{Prim: "cache_read", Block: "C", Str: "A", Scope: "local"},
		{Prim: "set_scope", Block: "C", Str: "C", Scope: "shared"},
		{Prim: "sample_perfect_tile", Loops: []string{"k"}, Ints: []int{2, 8}},
		{Prim: "sample_compute_location", Block: "Y"},
		{Prim: "rfactor", Loops: []string{"k_1"}},
	}
	var text []string
	for _, op := range ops {
		text = append(text, op.String())
	}
	got, err := ParseOps(strings.Join(text, "; "))
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		if i >= len(got) || got[i].String() != ops[i].String() || got[i].Str != ops[i].Str || got[i].Scope != ops[i].Scope {
			t.Errorf("op %d: got %+v, want %+v", i, got, ops[i])
		}
	}
	if _, err := ParseOps("frobnicate(i)"); err == nil {
		t.Error("an unknown primitive parses")
	}
}
