package workload

import (
	"fmt"
	"math"
	"slices"

	"github.com/loom-go/loom/ast"
)

// Softmax is the row softmax of X[rows, cols], with the row maximum
// subtracted before exponentiation.
func Softmax(rows, cols int) Case { return must(NewSoftmax(rows, cols)) }

// NewSoftmax is Softmax with its sizes checked: an error, not a panic, for sizes
// that are not positive or that make a buffer too large.
//
// The dimension named in symbolic (R, the rows, or D, the columns; not
// both) is a symbolic size of the function, at rows or cols in the Case's
// Sizes.
func NewSoftmax(rows, cols int, symbolic ...string) (Case, error) {
	if err := checkDims("rows", rows, "cols", cols); err != nil {
		return Case{}, err
	}
	if slices.Contains(symbolic, "R") && slices.Contains(symbolic, "D") {
		// Its reference tells the rows from the columns by a constant one
		// (it has no buffer of either length alone).
		return Case{}, fmt.Errorf("softmax: R and D cannot both be symbolic; make one of them")
	}
	symbolic = slices.Clone(symbolic)
	b := ast.NewBuilder("softmax")
	x, err := newExtents(b, "softmax", symbolic, "R", rows, "D", cols)
	if err != nil {
		return Case{}, err
	}
	R, D := x.of("R"), x.of("D")
	X := b.Placeholder("X", ast.Float32, R, D)
	k := b.ReduceAxis("k", D)
	M := b.Max("M", []ast.Expr{R}, []*ast.Var{k}, func(i []ast.Expr) ast.Expr { return X.At(i[0], k) })
	E := b.Compute("E", []ast.Expr{R, D}, func(i []ast.Expr) ast.Expr {
		return ast.Exp(ast.Sub(X.At(i...), M.At(i[0])))
	})
	S := b.Sum("S", []ast.Expr{R}, []*ast.Var{k}, func(i []ast.Expr) ast.Expr { return E.At(i[0], k) })
	Y := b.Compute("Y", []ast.Expr{R, D}, func(i []ast.Expr) ast.Expr {
		return ast.Div(E.At(i...), S.At(i[0]))
	})
	f, err := b.Build(Y)
	if err != nil {
		return Case{}, err
	}
	return checked(Case{
		Name:  "softmax",
		Func:  f,
		Sizes: x.sizes,
		Ref: func(args map[string]any) {
			x, y := args["X"].([]float32), args["Y"].([]float32)
			rows, cols := rowsCols(len(x), rows, cols, symbolic)
			for i := 0; i < rows; i++ {
				row := x[i*cols : (i+1)*cols]
				m := float32(math.Inf(-1))
				for _, v := range row {
					m = float32(math.Max(float64(m), float64(v)))
				}
				e := make([]float32, cols)
				var s float32
				for j, v := range row {
					e[j] = float32(math.Exp(float64(v - m)))
				}
				for j := range e {
					s = s + e[j]
				}
				for j := range e {
					y[i*cols+j] = e[j] / s
				}
			}
		},
	})
}

// RMSNorm is Y[i, j] = X[i, j] * rsqrt(mean over j of X[i, j]² + 1e-6) * W[j].
func RMSNorm(rows, cols int) Case { return must(NewRMSNorm(rows, cols)) }

// NewRMSNorm is RMSNorm with its sizes checked: an error, not a panic, for sizes
// that are not positive or that make a buffer too large.
//
// The dimensions named in symbolic (of R, the rows, and D, the columns)
// are symbolic sizes of the function, at rows or cols in the Case's Sizes
// (with R symbolic, the buffer of the rows' reciprocal roots is RS).
func NewRMSNorm(rows, cols int, symbolic ...string) (Case, error) {
	if err := checkDims("rows", rows, "cols", cols); err != nil {
		return Case{}, err
	}
	b := ast.NewBuilder("rmsnorm")
	x, err := newExtents(b, "rmsnorm", symbolic, "R", rows, "D", cols)
	if err != nil {
		return Case{}, err
	}
	Rows, D := x.of("R"), x.of("D")
	X := b.Placeholder("X", ast.Float32, Rows, D)
	W := b.Placeholder("W", ast.Float32, D)
	k := b.ReduceAxis("k", D)
	MS := b.Mean("MS", []ast.Expr{Rows}, []*ast.Var{k}, func(i []ast.Expr) ast.Expr {
		return ast.Mul(X.At(i[0], k), X.At(i[0], k))
	})
	rname := "R"
	if slices.Contains(symbolic, "R") {
		rname = "RS"
	}
	R := b.Compute(rname, []ast.Expr{Rows}, func(i []ast.Expr) ast.Expr {
		return ast.Rsqrt(ast.Add(MS.At(i[0]), ast.F32(1e-6)))
	})
	Y := b.Compute("Y", []ast.Expr{Rows, D}, func(i []ast.Expr) ast.Expr {
		return ast.Mul(ast.Mul(X.At(i...), R.At(i[0])), W.At(i[1]))
	})
	f, err := b.Build(Y)
	if err != nil {
		return Case{}, err
	}
	return checked(Case{
		Name:  "rmsnorm",
		Func:  f,
		Sizes: x.sizes,
		Ref: func(args map[string]any) {
			x, w, y := args["X"].([]float32), args["W"].([]float32), args["Y"].([]float32)
			cols := len(w)
			rows := len(x) / max(cols, 1)
			for i := 0; i < rows; i++ {
				var s float32
				for j := 0; j < cols; j++ {
					v := x[i*cols+j]
					s = s + float32(v*v)
				}
				ms := s / float32(cols)
				r := float32(1 / math.Sqrt(float64(ms+1e-6)))
				for j := 0; j < cols; j++ {
					y[i*cols+j] = float32(x[i*cols+j]*r) * w[j]
				}
			}
		},
	})
}

// LayerNorm normalizes each row of X[rows, cols] to zero mean and unit
// variance (with epsilon 1e-5), then scales by G and shifts by B.
func LayerNorm(rows, cols int) Case { return must(NewLayerNorm(rows, cols)) }

// NewLayerNorm is LayerNorm with its sizes checked: an error, not a panic, for sizes
// that are not positive or that make a buffer too large.
func NewLayerNorm(rows, cols int) (Case, error) {
	if err := checkDims("rows", rows, "cols", cols); err != nil {
		return Case{}, err
	}
	b := ast.NewBuilder("layernorm")
	X := b.Placeholder("X", ast.Float32, ast.Shape(rows, cols)...)
	G := b.Placeholder("G", ast.Float32, ast.Shape(cols)...)
	B := b.Placeholder("B", ast.Float32, ast.Shape(cols)...)
	k := b.ReduceAxis("k", ast.I32(int32(cols)))
	Mu := b.Mean("Mu", ast.Shape(rows), []*ast.Var{k}, func(i []ast.Expr) ast.Expr { return X.At(i[0], k) })
	D := b.Compute("D", ast.Shape(rows, cols), func(i []ast.Expr) ast.Expr {
		return ast.Sub(X.At(i...), Mu.At(i[0]))
	})
	Var := b.Mean("Var", ast.Shape(rows), []*ast.Var{k}, func(i []ast.Expr) ast.Expr {
		return ast.Mul(D.At(i[0], k), D.At(i[0], k))
	})
	Y := b.Compute("Y", ast.Shape(rows, cols), func(i []ast.Expr) ast.Expr {
		inv := ast.Rsqrt(ast.Add(Var.At(i[0]), ast.F32(1e-5)))
		return ast.Add(ast.Mul(ast.Mul(D.At(i...), inv), G.At(i[1])), B.At(i[1]))
	})
	f, err := b.Build(Y)
	if err != nil {
		return Case{}, err
	}
	return checked(Case{
		Name: "layernorm",
		Func: f,
		Ref: func(args map[string]any) {
			x, g, bb, y := args["X"].([]float32), args["G"].([]float32), args["B"].([]float32), args["Y"].([]float32)
			for i := 0; i < rows; i++ {
				row := x[i*cols : (i+1)*cols]
				var s float32
				for _, v := range row {
					s = s + v
				}
				mu := s / float32(cols)
				d := make([]float32, cols)
				var sq float32
				for j, v := range row {
					d[j] = v - mu
				}
				for _, v := range d {
					sq = sq + float32(v*v)
				}
				inv := float32(1 / math.Sqrt(float64(sq/float32(cols)+1e-5)))
				for j := range d {
					y[i*cols+j] = float32(float32(d[j]*inv)*g[j]) + bb[j]
				}
			}
		},
	})
}

// rowsCols are the rows and columns of a row-major matrix of n elements
// built at rows x cols, the one dimension named in symbolic (R or D)
// free: the other's quotient of n.
func rowsCols(n, rows, cols int, symbolic []string) (int, int) {
	switch {
	case slices.Contains(symbolic, "R"):
		return n / cols, cols
	case slices.Contains(symbolic, "D"):
		return rows, n / rows
	}
	return rows, cols
}
