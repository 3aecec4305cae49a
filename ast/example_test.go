package ast_test

import (
	"fmt"

	"github.com/loom-go/loom/ast"
)

// Build a matrix multiply from a tensor-expression definition and print the
// unscheduled function.
func ExampleBuilder() {
	b := ast.NewBuilder("matmul")
	A := b.Placeholder("A", ast.Float32, ast.I32(64), ast.I32(32))
	B := b.Placeholder("B", ast.Float32, ast.I32(32), ast.I32(16))
	k := b.ReduceAxis("k", ast.I32(32))
	C := b.Sum("C", ast.Shape(64, 16), []*ast.Var{k}, func(i []ast.Expr) ast.Expr {
		return ast.Mul(A.At(i[0], k), B.At(k, i[1]))
	})
	f, err := b.Build(C)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(f)
	// Output:
	// func matmul(A: float32[64, 32], B: float32[32, 16], C: float32[64, 16]) {
	//   ScheduleBlock(root) {
	//     serial for (i, 0, 64) {
	//       serial for (j, 0, 16) {
	//         serial for (k, 0, 32) {
	//           ScheduleBlock(C) {
	//             vi, vj, vk = axis.bind(i, j, k)
	//             axis.domain(vi = spatial(0, 64), vj = spatial(0, 16), vk = reduce(0, 32))
	//             reads(C[vi, vj], A[vi, vk], B[vk, vj])
	//             writes(C[vi, vj])
	//             init {
	//               C[vi, vj] = 0.0f
	//             }
	//             C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
	//           }
	//         }
	//       }
	//     }
	//   }
	// }
}

// Parse a function with a symbolic size and run it with the interpreter.
func ExampleInterpret() {
	f, err := ast.Parse(`
func scale[N: int32](X: float32[N], Y: float32[N]) {
  serial for (i, 0, N) {
    Y[i] = X[i] * 2.0f + 1.0f
  }
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	x := []float32{1, 2, 3}
	y := make([]float32, 3)
	err = ast.Interpret(f, map[string]int64{"N": 3}, map[string]any{"X": x, "Y": y})
	fmt.Println(y, err)
	// Output: [3 5 7] <nil>
}

// A parse error gives the line and column and what was expected there.
func ExampleParse_error() {
	_, err := ast.Parse(`func f(A: float32[4]) {
  serial for (i, 0, 4) {
    A[i] = A[i] +* 2.0f
  }
}`)
	fmt.Println(err)
	// Output: 3:18: expected an expression, found "*"
}

// An out-of-bounds access names the buffer, the index and the statement;
// Explain prints the function with the access marked.
func ExampleExplain() {
	f, _ := ast.Parse(`func shift(A: float32[4], B: float32[4]) {
  serial for (i, 0, 4) {
    B[i] = A[i + 1]
  }
}`)
	err := ast.Interpret(f, nil, map[string]any{"A": make([]float32, 4), "B": make([]float32, 4)})
	fmt.Print(ast.Explain(f, err))
	// Output:
	// ast: interpret: out-of-bounds load from A[4]: A has shape [4]; statement "B[i] = A[i + 1]"
	//   func shift(A: float32[4], B: float32[4]) {
	//     serial for (i, 0, 4) {
	// >     B[i] = A[i + 1]
	//              ^^^^^^^^
	//     }
	//   }
}

// Simplify an index expression knowing the range of its variables.
func ExampleAnalyzer() {
	i, j := ast.NewVar("i", ast.Int32), ast.NewVar("j", ast.Int32)
	a := ast.NewAnalyzer()
	a.Bind("j", ast.Interval{Min: 0, Max: 63})
	e := ast.FloorDiv(ast.Add(j, ast.Mul(i, ast.I32(64))), ast.I32(64))
	fmt.Println(e, "=>", a.Simplify(e))
	fmt.Println(a.Simplify(ast.FloorMod(ast.Add(ast.Mul(i, ast.I32(64)), j), ast.I32(64))))
	fmt.Println(a.CanProve(ast.LT(j, ast.I32(64))))
	// Output:
	// floordiv(j + i * 64, 64) => i
	// j
	// true
}

// Structurally equal functions have equal hashes, however they were made.
func ExampleHash() {
	src := "func f(A: int32[2]) {\n  A[0] = 1\n}\n"
	f1, _ := ast.Parse(src)
	f2, _ := ast.Parse(ast.Print(f1))
	fmt.Println(ast.Equal(f1, f2), ast.Hash(f1) == ast.Hash(f2))
	// Output: true true
}

// Two layers of a network compute the same thing under different names:
// their canonical forms are one, so one tuning record serves both, and
// the renaming Canonical returns gives a function built from the
// canonical form the layer's names back.
func ExampleCanonical() {
	layer := func(n string) *ast.Func {
		f, err := ast.Parse(`func ` + n + `(` + n + `_in: float32[4], ` + n + `_out: float32[4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      ScheduleBlock(` + n + `_relu) {
        v = axis.bind(i)
        axis.domain(v = spatial(0, 4))
        reads(` + n + `_in[v])
        writes(` + n + `_out[v])
        ` + n + `_out[v] = max(` + n + `_in[v], 0.0f)
      }
    }
  }
}
`)
		if err != nil {
			panic(err)
		}
		return f
	}
	c0, back := ast.Canonical(layer("layer0"))
	c1, _ := ast.Canonical(layer("layer1"))
	fmt.Println(ast.Hash(c0) == ast.Hash(c1))
	fmt.Print(ast.Print(c0))
	f, _ := ast.Rename(c0, back)
	fmt.Println(ast.Equal(f, layer("layer0")))
	// Output:
	// true
	// func kernel(_b0: float32[4], _b1: float32[4]) {
	//   ScheduleBlock(root) {
	//     serial for (_v0, 0, 4) {
	//       ScheduleBlock(_s0) {
	//         _v1 = axis.bind(_v0)
	//         axis.domain(_v1 = spatial(0, 4))
	//         reads(_b0[_v1])
	//         writes(_b1[_v1])
	//         _b1[_v1] = max(_b0[_v1], 0.0f)
	//       }
	//     }
	//   }
	// }
	// true
}
