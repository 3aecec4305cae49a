package native_test

import (
	"os"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/workload"
)

// TestCompileManyPieceDependences: reduce_elementwise as the long run's
// seed 199 scheduled it (its rows split, fused and bound through nested
// floordiv and floormod of the symbolic R: every access in 128 pieces)
// compiles, where the compaction planner's dependences once composed
// conflicts of 16,384 pieces and never finished (poly's
// maxConflictParts); and it computes what the interpreter does, its
// output poisoned first, at sizes 1, at a tail and at 0.
func TestCompileManyPieceDependences(t *testing.T) {
	src, err := os.ReadFile("testdata/many_pieces.loom")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ast.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	k, err := native.Compile(f, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sizes := range []map[string]int64{{"R": 1, "C": 1}, {"R": 29, "C": 5}, {"R": 0, "C": 3}} {
		c := workload.Case{Func: f, Sizes: sizes}
		poison := map[string]bool{"Y": true}
		got, want := c.ArgsPoisoning(1, poison), c.ArgsPoisoning(1, poison)
		if err := ast.Interpret(f, sizes, want); err != nil {
			t.Fatal(err)
		}
		if err := k.Run(sizes, got); err != nil {
			t.Fatalf("at %v: %v", sizes, err)
		}
		if e := check.MaxRelErr(got["Y"], want["Y"]); e > 1e-5 {
			t.Errorf("at %v: Y differs from the interpreter by %g", sizes, e)
		}
	}
}
