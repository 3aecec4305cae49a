package native_test

import (
	"fmt"

	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
)

// Compile a matrix multiply with its inner loop vectorized and run it.
func ExampleCompile() {
	c := workload.Matmul(2, 16, 3)
	s, err := schedule.New(c.Func)
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
