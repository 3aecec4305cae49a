package native_test

import (
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/schedule"
)

// Compile a matrix multiply with its inner loop vectorized and run it.
func ExampleCompile() {
	f, err := ast.Parse(`func matmul(A: float32[2, 3], B: float32[3, 16], C: float32[2, 16]) {
  serial for (i, 0, 2) {
    serial for (j, 0, 16) {
      serial for (k, 0, 3) {
        ScheduleBlock(C) {
          vi, vj, vk = axis.bind(i, j, k)
          axis.domain(vi = spatial(0, 2), vj = spatial(0, 16), vk = reduce(0, 3))
          reads(C[vi, vj], A[vi, vk], B[vk, vj])
          writes(C[vi, vj])
          init {
            C[vi, vj] = 0.0f
          }
          C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        }
      }
    }
  }
}`)
	if err != nil {
		panic(err)
	}
	s, err := schedule.New(f)
	if err != nil {
		panic(err)
	}
	j, _ := s.GetLoop("j")
	if err := s.Vectorize(j); err != nil {
		panic(schedule.Explain(err))
	}
	k, err := native.Compile(s.Func(), llvm.Options{})
	if err != nil {
		panic(err)
	}
	a := []float32{1, 2, 3, 4, 5, 6}
	b := make([]float32, 3*16)
	for i := range b {
		b[i] = float32(i % 3)
	}
	out := make([]float32, 2*16)
	if err := k.Run(nil, map[string]any{"A": a, "B": b, "C": out}); err != nil {
		panic(err)
	}
	fmt.Println(out[:4])
	fmt.Println(out[16:20])
	// Output:
	// [8 5 5 8]
	// [17 14 14 17]
}
