package partition_test

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/partition"
	"github.com/loom-go/loom/schedule"
)

// TestTailVersioned: a matmul of S rows in register tiles of 4 unrolled
// rows, its accumulator in a cache, ends in a tile of S mod 4 rows. The
// tail runs one of three versions (1, 2 or 3 rows: the unrolled loops
// narrowed, no predicate left in them), else the body as it was; every S
// gives what the unpartitioned function gives.
func TestTailVersioned(t *testing.T) {
	f := matmulOfSymbolicRows(t, 16, 32)
	s, err := schedule.New(f)
	if err != nil {
		t.Fatal(err)
	}
	steps := func() error {
		b, err := s.GetBlock("C")
		if err != nil {
			return err
		}
		loops, err := s.GetLoops(b)
		if err != nil {
			return err
		}
		rows, err := s.Split(loops[0], -1, 4)
		if err != nil {
			return err
		}
		if err := s.Reorder(rows[0], loops[1], loops[2], rows[1]); err != nil {
			return err
		}
		if err := s.Unroll(rows[1]); err != nil {
			return err
		}
		wb, err := s.CacheWrite(b, "C", "local")
		if err != nil {
			return err
		}
		if err := s.ReverseComputeAt(wb, loops[1]); err != nil {
			return err
		}
		_, err = s.DecomposeReduction(b, loops[2])
		return err
	}
	if err := steps(); err != nil {
		t.Fatalf("%v\n%s", err, ast.Print(s.Func()))
	}
	before := s.Func()
	after := partition.Func(before)
	if err := ast.Verify(after); err != nil {
		t.Fatalf("%v\n%s", err, ast.Print(after))
	}
	text := ast.Print(after)
	if testing.Verbose() {
		t.Log(text)
	}
	if strings.Count(text, "if (") < 3 || !strings.Contains(text, "_v") {
		t.Errorf("the tail is not versioned by its rows:\n%s", text)
	}
	for _, n := range []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 13} {
		same(t, "mm", before, after, map[string]int64{"S": n})
	}
}
