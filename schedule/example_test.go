package schedule_test

import (
	"fmt"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// matmul builds C[i, j] = sum over k of A[i, k] * B[k, j] for n×n float32
// matrices, the function the examples schedule.
func matmul(n int) *ast.Func {
	b := ast.NewBuilder("matmul")
	A := b.Placeholder("A", ast.Float32, ast.Shape(n, n)...)
	B := b.Placeholder("B", ast.Float32, ast.Shape(n, n)...)
	k := b.ReduceAxis("k", ast.I32(int32(n)))
	C := b.Sum("C", ast.Shape(n, n), []*ast.Var{k}, func(i []ast.Expr) ast.Expr {
		return ast.Mul(A.At(i[0], k), B.At(k, i[1]))
	})
	f, err := b.Build(C)
	if err != nil {
		panic(err)
	}
	return f
}

// Schedule a 64×64×64 matrix multiply for a CPU the way a performance
// engineer would: tile i, j and k; accumulate each 8×16 tile of C in a
// local buffer, written back once its reduction is done; initialize the
// tile before its reduction loop; vectorize the innermost j, unroll the
// inner k, run the outermost tile loop on all cores.
func Example_cpu() {
	f := matmul(64)
	sch, err := schedule.New(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	check := func(err error) {
		if err != nil {
			panic(schedule.Explain(err))
		}
	}
	c, err := sch.GetBlock("C")
	check(err)
	loops, err := sch.GetLoops(c) // i, j, k
	check(err)
	i, err := sch.Split(loops[0], -1, 8) // i_0, i_1
	check(err)
	j, err := sch.Split(loops[1], -1, 16) // j_0, j_1
	check(err)
	k, err := sch.Split(loops[2], -1, 4) // k_0, k_1
	check(err)
	check(sch.Reorder(i[0], j[0], k[0], i[1], k[1], j[1]))
	tile, err := sch.CacheWrite(c, "C", "local") // accumulate in C_local
	check(err)
	check(sch.ReverseComputeAt(tile, j[0]))  // write each tile back after its k loop
	_, err = sch.DecomposeReduction(c, k[0]) // zero the tile before the k loop
	check(err)
	check(sch.Vectorize(j[1]))
	check(sch.Unroll(k[1]))
	check(sch.Parallel(i[0]))
	fmt.Print(sch.Func())
	// Output:
	// func matmul(A: float32[64, 64], B: float32[64, 64], C: float32[64, 64]) {
	//   ScheduleBlock(root) {
	//     alloc C_local: float32[64, 64] in local
	//     parallel for (i_0, 0, 8) {
	//       serial for (j_0, 0, 4) {
	//         serial for (i_1_init, 0, 8) {
	//           serial for (j_1_init, 0, 16) {
	//             ScheduleBlock(C_init) {
	//               vi, vj = axis.bind(i_0 * 8 + i_1_init, j_0 * 16 + j_1_init)
	//               axis.domain(vi = spatial(0, 64), vj = spatial(0, 64))
	//               writes(C_local[vi, vj])
	//               C_local[vi, vj] = 0.0f
	//             }
	//           }
	//         }
	//         serial for (k_0, 0, 16) {
	//           serial for (i_1, 0, 8) {
	//             unrolled for (k_1, 0, 4) {
	//               vectorized for (j_1, 0, 16) {
	//                 ScheduleBlock(C) {
	//                   vi, vj, vk = axis.bind(i_0 * 8 + i_1, j_0 * 16 + j_1, k_0 * 4 + k_1)
	//                   axis.domain(vi = spatial(0, 64), vj = spatial(0, 64), vk = reduce(0, 64))
	//                   reads(C_local[vi, vj], A[vi, vk], B[vk, vj])
	//                   writes(C_local[vi, vj])
	//                   C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
	//                 }
	//               }
	//             }
	//           }
	//         }
	//         serial for (ax0, 0, 8) {
	//           serial for (ax1, 0, 16) {
	//             ScheduleBlock(C_local) {
	//               v0, v1 = axis.bind(i_0 * 8 + ax0, j_0 * 16 + ax1)
	//               axis.domain(v0 = spatial(0, 64), v1 = spatial(0, 64))
	//               reads(C_local[v0, v1])
	//               writes(C[v0, v1])
	//               C[v0, v1] = C_local[v0, v1]
	//             }
	//           }
	//         }
	//       }
	//     }
	//   }
	// }
}

// Schedule the same matrix multiply for a GPU: 16×16 tiles of C per thread
// block, one element per thread; the rows of A and the columns of B a
// thread block needs are staged in shared memory, fetched cooperatively by
// the block's threads.
func Example_gpu() {
	f := matmul(64)
	sch, err := schedule.New(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	check := func(err error) {
		if err != nil {
			panic(schedule.Explain(err))
		}
	}
	c, err := sch.GetBlock("C")
	check(err)
	loops, err := sch.GetLoops(c) // i, j, k
	check(err)
	i, err := sch.Split(loops[0], -1, 16)
	check(err)
	j, err := sch.Split(loops[1], -1, 16)
	check(err)
	check(sch.Reorder(i[0], j[0], i[1], j[1]))
	check(sch.Bind(i[0], "blockIdx.y"))
	check(sch.Bind(j[0], "blockIdx.x"))
	check(sch.Bind(i[1], "threadIdx.y"))
	check(sch.Bind(j[1], "threadIdx.x"))
	for _, buf := range []string{"A", "B"} {
		cache, err := sch.CacheRead(c, buf, "shared")
		check(err)
		check(sch.ComputeAt(cache, j[0])) // stage what the thread block reads
		copyLoops, err := sch.GetLoops(cache)
		check(err)
		// The two copy loops, split by 16 so that the 16×16 threads fetch
		// the tile together.
		rows, err := sch.Split(copyLoops[2], -1, 16)
		check(err)
		cols, err := sch.Split(copyLoops[3], -1, 16)
		check(err)
		check(sch.Reorder(rows[0], cols[0], rows[1], cols[1]))
		check(sch.Bind(rows[1], "threadIdx.y"))
		check(sch.Bind(cols[1], "threadIdx.x"))
	}
	fmt.Print(sch.Func())
	// Output:
	// func matmul(A: float32[64, 64], B: float32[64, 64], C: float32[64, 64]) {
	//   ScheduleBlock(root) {
	//     alloc A_shared: float32[64, 64] in shared
	//     alloc B_shared: float32[64, 64] in shared
	//     bind(blockIdx.y) for (i_0, 0, 4) {
	//       bind(blockIdx.x) for (j_0, 0, 4) {
	//         serial for (ax0_0, 0, 1) {
	//           serial for (ax1_0, 0, 4) {
	//             bind(threadIdx.y) for (ax0_1, 0, 16) {
	//               bind(threadIdx.x) for (ax1_1, 0, 16) {
	//                 ScheduleBlock(A_shared) {
	//                   v0, v1 = axis.bind(i_0 * 16 + ax0_1, ax1_0 * 16 + ax1_1)
	//                   axis.domain(v0 = spatial(0, 64), v1 = spatial(0, 64))
	//                   reads(A[v0, v1])
	//                   writes(A_shared[v0, v1])
	//                   A_shared[v0, v1] = A[v0, v1]
	//                 }
	//               }
	//             }
	//           }
	//         }
	//         serial for (ax0_0_1, 0, 4) {
	//           serial for (ax1_0_1, 0, 1) {
	//             bind(threadIdx.y) for (ax0_1_1, 0, 16) {
	//               bind(threadIdx.x) for (ax1_1_1, 0, 16) {
	//                 ScheduleBlock(B_shared) {
	//                   v0_1, v1_1 = axis.bind(ax0_0_1 * 16 + ax0_1_1, j_0 * 16 + ax1_1_1)
	//                   axis.domain(v0_1 = spatial(0, 64), v1_1 = spatial(0, 64))
	//                   reads(B[v0_1, v1_1])
	//                   writes(B_shared[v0_1, v1_1])
	//                   B_shared[v0_1, v1_1] = B[v0_1, v1_1]
	//                 }
	//               }
	//             }
	//           }
	//         }
	//         bind(threadIdx.y) for (i_1, 0, 16) {
	//           bind(threadIdx.x) for (j_1, 0, 16) {
	//             serial for (k, 0, 64) {
	//               ScheduleBlock(C) {
	//                 vi, vj, vk = axis.bind(i_0 * 16 + i_1, j_0 * 16 + j_1, k)
	//                 axis.domain(vi = spatial(0, 64), vj = spatial(0, 64), vk = reduce(0, 64))
	//                 reads(C[vi, vj], A_shared[vi, vk], B_shared[vk, vj])
	//                 writes(C[vi, vj])
	//                 init {
	//                   C[vi, vj] = 0.0f
	//                 }
	//                 C[vi, vj] = C[vi, vj] + A_shared[vi, vk] * B_shared[vk, vj]
	//               }
	//             }
	//           }
	//         }
	//       }
	//     }
	//   }
	// }
}

// A row sum of a 4×256 matrix on a GPU: rfactor turns the reduction over
// 256 into 32 independent partial sums, one per thread, and a final sum of
// the partials; the partial loop is then bound to threads.
func Example_rfactor() {
	// Y[i] = sum over k of X[i, k], X of 4×256.
	b := ast.NewBuilder("rowsum")
	X := b.Placeholder("X", ast.Float32, ast.Shape(4, 256)...)
	r := b.ReduceAxis("k", ast.I32(256))
	Y := b.Sum("Y", ast.Shape(4), []*ast.Var{r}, func(i []ast.Expr) ast.Expr { return X.At(i[0], r) })
	f, err := b.Build(Y)
	if err != nil {
		fmt.Println(err)
		return
	}
	sch, err := schedule.New(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	check := func(err error) {
		if err != nil {
			panic(schedule.Explain(err))
		}
	}
	y, err := sch.GetBlock("Y")
	check(err)
	loops, err := sch.GetLoops(y) // i, k
	check(err)
	k, err := sch.Split(loops[1], -1, 32) // k_0 (8), k_1 (32)
	check(err)
	rf, err := sch.RFactor(k[1]) // partial sums indexed by k_1
	check(err)
	rfLoops, err := sch.GetLoops(rf) // i, k_0, k_1
	check(err)
	check(sch.Reorder(rfLoops[2], rfLoops[1]))
	check(sch.Bind(rfLoops[0], "blockIdx.x"))
	check(sch.Bind(rfLoops[2], "threadIdx.x"))
	// The final sum over the 32 partials follows in the same thread block
	// (rfactor puts it right after the partial sums): a cross-thread
	// reduction.
	wbLoops, err := sch.GetLoops(y) // i, k_1_wb
	check(err)
	check(sch.Bind(wbLoops[1], "threadIdx.x"))
	fmt.Print(sch.Func())
	// Output:
	// func rowsum(X: float32[4, 256], Y: float32[4]) {
	//   ScheduleBlock(root) {
	//     alloc Y_rf: float32[32, 4]
	//     bind(blockIdx.x) for (i, 0, 4) {
	//       bind(threadIdx.x) for (k_1, 0, 32) {
	//         serial for (k_0, 0, 8) {
	//           ScheduleBlock(Y_rf) {
	//             vk_1, vi, vk_0 = axis.bind(k_1, i, k_0)
	//             axis.domain(vk_1 = spatial(0, 32), vi = spatial(0, 4), vk_0 = reduce(0, 8))
	//             reads(Y_rf[vk_1, vi], X[vi, vk_0 * 32 + vk_1])
	//             writes(Y_rf[vk_1, vi])
	//             init {
	//               Y_rf[vk_1, vi] = 0.0f
	//             }
	//             Y_rf[vk_1, vi] = Y_rf[vk_1, vi] + X[vi, vk_0 * 32 + vk_1]
	//           }
	//         }
	//       }
	//       bind(threadIdx.x) for (k_1_wb, 0, 32) {
	//         ScheduleBlock(Y) {
	//           vi, vk_1_r = axis.bind(i, k_1_wb)
	//           axis.domain(vi = spatial(0, 4), vk_1_r = reduce(0, 32))
	//           reads(Y[vi], Y_rf[vk_1_r, vi])
	//           writes(Y[vi])
	//           init {
	//             Y[vi] = 0.0f
	//           }
	//           Y[vi] = Y[vi] + Y_rf[vk_1_r, vi]
	//         }
	//       }
	//     }
	//   }
	// }
}
