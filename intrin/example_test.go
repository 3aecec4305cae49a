package intrin_test

import (
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/intrin"
)

// A 16 x 8 x 16 tile of a larger gemm, at the tile (i0, j0, k0), matches
// mma.sync m16n8k16: each operand is a tile of a buffer at an offset over
// the loops outside the nest.
func ExampleIntrinsic_Match() {
	f, err := ast.Parse(`func tile[I0: int32, J0: int32, K0: int32](A: float16[64, 64], B: float16[64, 64], C: float32[64, 64]) {
  ScheduleBlock(root) {
    serial for (i, I0 * 16, 16) {
      serial for (j, J0 * 8, 8) {
        serial for (k, K0 * 16, 16) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 64), vj = spatial(0, 64), vk = reduce(0, 64))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            C[vi, vj] = C[vi, vj] + float32(A[vi, vk]) * float32(B[vk, vj])
          }
        }
      }
    }
  }
}`)
	if err != nil {
		panic(err)
	}
	in, _ := intrin.Lookup("mma_m16n8k16_f16_f32")
	nest := f.Body.(*ast.ScheduleBlock).Body.(*ast.For)
	m, err := in.Match(nest)
	if err != nil {
		panic(err)
	}
	for _, op := range []string{"A", "B", "C"} {
		fmt.Printf("%s: %s at [%s, %s]\n", op, m.Buffers[op].Name, ast.Print(m.Offsets[op][0]), ast.Print(m.Offsets[op][1]))
	}
	// Output:
	// A: A at [I0 * 16, K0 * 16]
	// B: B at [K0 * 16, J0 * 8]
	// C: C at [I0 * 16, J0 * 8]
}
