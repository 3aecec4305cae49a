package llvm_test

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// TestNestedUnrollBudget: unrolled loops nested in unrolled loops
// multiply their copies; past a budget of code the inner one runs as a
// loop, with a remark, instead of handing llc a function so large that it
// took over two minutes (the long run's multi_consumer, seed 204: 5 x 168
// copies of a loop nest).
func TestNestedUnrollBudget(t *testing.T) {
	f, err := ast.Parse(`func big(X: float32[5, 168, 64], Y: float32[5, 168, 64]) {
  unrolled for (a, 0, 5) {
    unrolled for (b, 0, 168) {
      serial for (c, 0, 64) {
        Y[a, b, c] = X[a, b, c] * 2.0f + X[a, b, 63 - c] * X[a, b, c] - float32(floordiv(a * 168 + b, 3)) * 0.5f + X[a, floormod(b + 1, 168), c] * X[a, floormod(b + 2, 168), c] + X[a, floormod(b + 3, 168), floormod(c + 1, 64)] * X[floormod(a + 1, 5), b, c]
      }
    }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	m, err := llvm.Lower(f, llvm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(m.Remarks, "\n")
	if !strings.Contains(joined, "unrolled loop b runs as a loop") || strings.Contains(joined, "unrolled loop a runs as a loop") {
		t.Errorf("remarks:\n%s\nwant loop b kept as a loop and a unrolled", joined)
	}
}
