package native_test

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
)

// TestGatherIndexOutOfRange: an embedding lookup with a token id out of
// range is an error in the interpreter, naming the access; compiled code
// clamps the id into range (the documented result) instead of reading
// outside the table.
func TestGatherIndexOutOfRange(t *testing.T) {
	f, err := ast.Parse(`func embed(E: float32[5, 3], I: int32[4], Y: float32[4, 3]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      serial for (k, 0, 3) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, 4), vk = spatial(0, 3))
          reads(E[0:+5, vk], I[vi])
          writes(Y[vi, vk])
          Y[vi, vk] = E[I[vi], vk]
        }
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	table := make([]float32, 15)
	for i := range table {
		table[i] = float32(i)
	}
	args := func() map[string]any {
		return map[string]any{"E": append([]float32(nil), table...), "I": []int32{2, 9, -4, 4}, "Y": make([]float32, 12)}
	}
	err = ast.Interpret(f, nil, args())
	if err == nil || !strings.Contains(err.Error(), "E[9, 0]") {
		t.Errorf("interpreted with id 9 of 5 rows: %v, want an error naming E[9, 0]", err)
	}
	k, err := native.Compile(f, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := args()
	if err := k.Run(nil, a); err != nil {
		t.Fatal(err)
	}
	// Rows 2, 4 (9 clamped), 0 (-4 clamped), 4.
	want := []float32{6, 7, 8, 12, 13, 14, 0, 1, 2, 12, 13, 14}
	for i, v := range a["Y"].([]float32) {
		if v != want[i] {
			t.Fatalf("compiled: Y = %v, want %v", a["Y"], want)
		}
	}
}
