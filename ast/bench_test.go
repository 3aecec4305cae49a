package ast_test

import (
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

// BenchmarkInterpretMatmul measures the interpreter on a 32³ matrix
// multiply: 32768 block instances.
func BenchmarkInterpretMatmul(b *testing.B) {
	c := workload.Matmul(32, 32, 32)
	args := c.Args(1)
	for b.Loop() {
		if err := ast.Interpret(c.Func, c.Sizes, args); err != nil {
			b.Fatal(err)
		}
	}
}
