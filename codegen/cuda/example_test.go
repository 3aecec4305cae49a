package cuda_test

import (
	"fmt"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/cuda"
	"github.com/loom-go/loom/schedule"
)

// Lower Y = 2X + 1 over a symbolic N to CUDA C: the loop is split by 256,
// the outer part bound to thread blocks and the inner to threads. The
// module tells each kernel's launch shape; cuda.Open and Device.Compile
// run it where a GPU is present.
func ExampleLower() {
	f, err := ast.Parse(`func axpb[N: int32](X: float32[N], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, N))
        reads(X[vi])
        writes(Y[vi])
        Y[vi] = X[vi] * 2.0f + 1.0f
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
	i, err := s.GetLoop("i")
	if err != nil {
		panic(err)
	}
	parts, err := s.Split(i, -1, 256)
	if err != nil {
		panic(schedule.Explain(err))
	}
	if err := s.Bind(parts[0], "blockIdx.x"); err != nil {
		panic(schedule.Explain(err))
	}
	if err := s.Bind(parts[1], "threadIdx.x"); err != nil {
		panic(schedule.Explain(err))
	}
	m, err := cuda.Lower(s.Func(), cuda.Options{Arch: "sm_90"})
	if err != nil {
		panic(err)
	}
	for _, k := range m.Kernels {
		fmt.Printf("%s<<<%s, %d>>>\n", k.Name, ast.Print(k.Grid[0]), k.Block[0])
	}
	fmt.Println(strings.Contains(m.Source, "__global__"))
	// Output:
	// axpb_kernel0<<<int64(floordiv(N + 255, 256)), 256>>>
	// true
}
