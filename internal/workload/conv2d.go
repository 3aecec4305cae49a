package workload

import "github.com/loom-go/loom/ast"

// Conv2D is a 3x3 convolution in NCHW layout with padding 1 and stride 1:
// Y[n, k, h, w] = sum over c, r, s of P[n, c, h+r, w+s] * W[k, c, r, s], where
// P is X padded with zeros. The padding is its own stage; its loads clamp
// their indices so that the (eagerly evaluated) select never reads outside X.
func Conv2D(batch, channels, height, width, filters int) Case {
	return must(NewConv2D(batch, channels, height, width, filters))
}

// NewConv2D is Conv2D with its sizes checked: an error, not a panic, for sizes
// that are not positive or that make a buffer too large.
func NewConv2D(batch, channels, height, width, filters int) (Case, error) {
	if err := checkDims("batch", batch, "channels", channels, "height", height, "width", width, "filters", filters); err != nil {
		return Case{}, err
	}
	b := ast.NewBuilder("conv2d")
	X := b.Placeholder("X", ast.Float32, ast.Shape(batch, channels, height, width)...)
	W := b.Placeholder("W", ast.Float32, ast.Shape(filters, channels, 3, 3)...)
	clamp := func(i ast.Expr, n int) ast.Expr {
		return ast.Max(ast.Min(i, ast.I32(int32(n-1))), ast.I32(0))
	}
	P := b.Compute("P", ast.Shape(batch, channels, height+2, width+2), func(i []ast.Expr) ast.Expr {
		h, w := ast.Sub(i[2], ast.I32(1)), ast.Sub(i[3], ast.I32(1))
		inside := ast.And(
			ast.And(ast.GE(h, ast.I32(0)), ast.LT(h, ast.I32(int32(height)))),
			ast.And(ast.GE(w, ast.I32(0)), ast.LT(w, ast.I32(int32(width)))))
		return ast.NewSelect(inside, X.At(i[0], i[1], clamp(h, height), clamp(w, width)), ast.F32(0))
	}).AxisNames("n", "c", "h", "w")
	c := b.ReduceAxis("rc", ast.I32(int32(channels)))
	r := b.ReduceAxis("rh", ast.I32(3))
	s := b.ReduceAxis("rw", ast.I32(3))
	Y := b.Sum("Y", ast.Shape(batch, filters, height, width), []*ast.Var{c, r, s}, func(i []ast.Expr) ast.Expr {
		return ast.Mul(P.At(i[0], c, ast.Add(i[2], r), ast.Add(i[3], s)), W.At(i[1], c, r, s))
	}).AxisNames("n", "k", "h", "w")
	f, err := b.Build(Y)
	if err != nil {
		return Case{}, err
	}
	return checked(Case{
		Name: "conv2d",
		Func: f,
		Ref: func(args map[string]any) {
			x, w, y := args["X"].([]float32), args["W"].([]float32), args["Y"].([]float32)
			at := func(n, c, h, ww int) float32 {
				if h < 0 || h >= height || ww < 0 || ww >= width {
					return 0
				}
				return x[((n*channels+c)*height+h)*width+ww]
			}
			for n := 0; n < batch; n++ {
				for k := 0; k < filters; k++ {
					for h := 0; h < height; h++ {
						for ww := 0; ww < width; ww++ {
							var acc float32
							for c := 0; c < channels; c++ {
								for r := 0; r < 3; r++ {
									for s := 0; s < 3; s++ {
										acc = acc + float32(at(n, c, h+r-1, ww+s-1)*w[((k*channels+c)*3+r)*3+s])
									}
								}
							}
							y[((n*filters+k)*height+h)*width+ww] = acc
						}
					}
				}
			}
		},
	})
}
