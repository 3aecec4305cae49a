package workload

import "github.com/loom-go/loom/ast"

// Chain is the composite element-wise/reduce chain over X[S1, S2, n] with
// symbolic S1 and S2: A = X*2, B = A+1, C = sum over the last axis of B,
// D = C*2, E = D broadcast back to [S1, S2, n], F = E+1. The Case runs it at
// S1 = s1, S2 = s2; n is a constant of the function.
func Chain(s1, s2, n int) Case { return must(NewChain(s1, s2, n)) }

// NewChain is Chain with its sizes checked: an error, not a panic, for sizes
// that are not positive or that make a buffer too large.
func NewChain(s1, s2, n int) (Case, error) {
	err := checkDims("n", n)
	if err == nil {
		err = checkSymbols("S1", s1, "S2", s2)
	}
	if err != nil {
		return Case{}, err
	}
	b := ast.NewBuilder("chain")
	S1, S2 := b.Size("S1"), b.Size("S2")
	N := ast.I32(int32(n))
	X := b.Placeholder("X", ast.Float32, S1, S2, N)
	A := b.Compute("A", ast.Shape(S1, S2, N), func(i []ast.Expr) ast.Expr { return ast.Mul(X.At(i...), ast.F32(2)) })
	B := b.Compute("B", ast.Shape(S1, S2, N), func(i []ast.Expr) ast.Expr { return ast.Add(A.At(i...), ast.F32(1)) })
	r := b.ReduceAxis("rk", N)
	C := b.Sum("C", ast.Shape(S1, S2), []*ast.Var{r}, func(i []ast.Expr) ast.Expr { return B.At(i[0], i[1], r) })
	D := b.Compute("D", ast.Shape(S1, S2), func(i []ast.Expr) ast.Expr { return ast.Mul(C.At(i...), ast.F32(2)) })
	E := b.Compute("E", ast.Shape(S1, S2, N), func(i []ast.Expr) ast.Expr { return D.At(i[0], i[1]) })
	F := b.Compute("F", ast.Shape(S1, S2, N), func(i []ast.Expr) ast.Expr { return ast.Add(E.At(i...), ast.F32(1)) })
	f, err := b.Build(F)
	if err != nil {
		return Case{}, err
	}
	return checked(Case{
		Name:  "chain",
		Func:  f,
		Sizes: map[string]int64{"S1": int64(s1), "S2": int64(s2)},
		Ref: func(args map[string]any) {
			x, f := args["X"].([]float32), args["F"].([]float32)
			for i := 0; i < s1*s2; i++ {
				var c float32
				for k := 0; k < n; k++ {
					c = c + (float32(x[i*n+k]*2) + 1)
				}
				d := c * 2
				for k := 0; k < n; k++ {
					f[i*n+k] = d + 1
				}
			}
		},
	})
}
