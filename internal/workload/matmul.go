package workload

import (
	"math"

	"github.com/loom-go/loom/ast"
)

// Matmul is C[m, n] = sum over k of A[m, k] * B[k, n], in float32.
func Matmul(m, n, k int) Case { return must(NewMatmul(m, n, k)) }

// NewMatmul is Matmul with its sizes checked: an error, not a panic, for sizes
// that are not positive or that make a buffer too large. The sizes named in
// symbolic (of M, N and K) are symbolic sizes of the function, at m, n or k
// in the Case's Sizes.
func NewMatmul(m, n, k int, symbolic ...string) (Case, error) {
	if err := checkDims("m", m, "n", n, "k", k); err != nil {
		return Case{}, err
	}
	b := ast.NewBuilder("matmul")
	x, C, err := matmulProduct(b, "matmul", symbolic, m, n, k)
	if err != nil {
		return Case{}, err
	}
	f, err := b.Build(C)
	if err != nil {
		return Case{}, err
	}
	return checked(Case{
		Name:  "matmul",
		Func:  f,
		Sizes: x.sizes,
		Ref: func(args map[string]any) {
			a, bb, c := args["A"].([]float32), args["B"].([]float32), args["C"].([]float32)
			m, n, k := matmulDims(a, bb, c)
			matmulRef(a, bb, c, m, n, k)
		},
	})
}

// matmulProduct declares, in b, A[M, K], B[K, N] and their product
// C[M, N], the sum over k of A[i, k] * B[k, j]: the dimensions at m, n
// and k, those named in symbolic symbolic sizes (errors name workload).
func matmulProduct(b *ast.Builder, workload string, symbolic []string, m, n, k int) (*extents, *ast.Tensor, error) {
	x, err := newExtents(b, workload, symbolic, "M", m, "N", n, "K", k)
	if err != nil {
		return nil, nil, err
	}
	M, N, K := x.of("M"), x.of("N"), x.of("K")
	A := b.Placeholder("A", ast.Float32, M, K)
	B := b.Placeholder("B", ast.Float32, K, N)
	r := b.ReduceAxis("k", K)
	C := b.Sum("C", []ast.Expr{M, N}, []*ast.Var{r}, func(i []ast.Expr) ast.Expr {
		return ast.Mul(A.At(i[0], r), B.At(r, i[1]))
	})
	return x, C, nil
}

// matmulDims are m, n and k of a matrix multiply of a[m, k] and b[k, n]
// into c[m, n], from the lengths of the three (m*k, k*n and m*n). With k
// = 0 (a and b empty) c is taken as one column of m*n rows: the sums of
// nothing, zeros, all the same.
func matmulDims(a, b, c []float32) (m, n, k int) {
	if len(a) == 0 || len(b) == 0 || len(c) == 0 {
		return len(c), 1, 0
	}
	la, lb, lc := float64(len(a)), float64(len(b)), float64(len(c))
	m = int(math.Round(math.Sqrt(la * lc / lb)))
	n = int(math.Round(math.Sqrt(lb * lc / la)))
	k = int(math.Round(math.Sqrt(la * lb / lc)))
	return m, n, k
}

// matmulRef sums each C[i, j] over k in increasing order, like the
// function. The loops run i, k, j (the same order of additions for each
// element, but row-major access to B), rows split between goroutines, so
// that the benchmarks can check 1024^3 in about a second.
func matmulRef(a, b, c []float32, m, n, k int) {
	parallelRows(m, func(i int) {
		row := c[i*n : (i+1)*n]
		for j := range row {
			row[j] = 0
		}
		for p := 0; p < k; p++ {
			x, brow := a[i*k+p], b[p*n:(p+1)*n]
			for j := range row {
				row[j] = row[j] + float32(x*brow[j]) // the conversion forbids fusing into an FMA
			}
		}
	})
}

// MatmulBiasReLU is D = max(A·B + bias, 0), with bias broadcast along rows.
func MatmulBiasReLU(m, n, k int) Case { return must(NewMatmulBiasReLU(m, n, k)) }

// NewMatmulBiasReLU is MatmulBiasReLU with its sizes checked: an error, not a panic, for sizes
// that are not positive or that make a buffer too large.
func NewMatmulBiasReLU(m, n, k int, symbolic ...string) (Case, error) {
	if err := checkDims("m", m, "n", n, "k", k); err != nil {
		return Case{}, err
	}
	b := ast.NewBuilder("matmul_bias_relu")
	x, C, err := matmulProduct(b, "matmul_bias_relu", symbolic, m, n, k)
	if err != nil {
		return Case{}, err
	}
	M, N := x.of("M"), x.of("N")
	bias := b.Placeholder("bias", ast.Float32, N)
	D := b.Compute("D", []ast.Expr{M, N}, func(i []ast.Expr) ast.Expr {
		return ast.Max(ast.Add(C.At(i...), bias.At(i[1])), ast.F32(0))
	})
	f, err := b.Build(D)
	if err != nil {
		return Case{}, err
	}
	return checked(Case{
		Name:  "matmul_bias_relu",
		Func:  f,
		Sizes: x.sizes,
		Ref: func(args map[string]any) {
			a, bb, bi, d := args["A"].([]float32), args["B"].([]float32), args["bias"].([]float32), args["D"].([]float32)
			n := len(bi)
			m := len(d) / max(n, 1)
			k := len(a) / max(m, 1)
			if m == 0 {
				k = len(bb) / max(n, 1)
			}
			c := make([]float32, m*n)
			matmulRef(a, bb, c, m, n, k)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					d[i*n+j] = max(c[i*n+j]+bi[j], 0)
				}
			}
		},
	})
}

// RowSum is Y[i] = sum over k of X[i, k], in float32.
func RowSum(rows, cols int) Case { return must(NewRowSum(rows, cols)) }

// NewRowSum is RowSum with its sizes checked: an error, not a panic, for sizes
// that are not positive or that make a buffer too large.
func NewRowSum(rows, cols int) (Case, error) {
	if err := checkDims("rows", rows, "cols", cols); err != nil {
		return Case{}, err
	}
	b := ast.NewBuilder("rowsum")
	X := b.Placeholder("X", ast.Float32, ast.Shape(rows, cols)...)
	k := b.ReduceAxis("k", ast.I32(int32(cols)))
	Y := b.Sum("Y", ast.Shape(rows), []*ast.Var{k}, func(i []ast.Expr) ast.Expr { return X.At(i[0], k) })
	f, err := b.Build(Y)
	if err != nil {
		return Case{}, err
	}
	return checked(Case{
		Name: "rowsum",
		Func: f,
		Ref: func(args map[string]any) {
			x, y := args["X"].([]float32), args["Y"].([]float32)
			for i := 0; i < rows; i++ {
				var acc float32
				for j := 0; j < cols; j++ {
					acc = acc + x[i*cols+j]
				}
				y[i] = acc
			}
		},
	})
}
