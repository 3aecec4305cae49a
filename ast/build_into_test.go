package ast_test

import (
	"math"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
)

// TestBuildInto: two computations write the halves of a storage output
// (a concatenation), a third a part of a larger temporary that a fourth
// reads back; the interpreter checks every element, the output poisoned
// first.
func TestBuildInto(t *testing.T) {
	b := ast.NewBuilder("cat")
	A := b.Placeholder("A", ast.Float32, ast.I32(3), ast.I32(2))
	B := b.Placeholder("B", ast.Float32, ast.I32(3), ast.I32(5))
	Z := b.Storage("Z", ast.Float32, ast.I32(3), ast.I32(7))
	b.Compute("ZA", ast.Shape(3, 2), func(i []ast.Expr) ast.Expr { return A.At(i...) }).Into(Z)
	T := b.Storage("T", ast.Float32, ast.I32(3), ast.I32(8))
	tb := b.Compute("TB", ast.Shape(3, 5), func(i []ast.Expr) ast.Expr { return ast.Mul(B.At(i...), ast.F32(2)) }).Into(T, ast.I32(0), ast.I32(1))
	k := b.ReduceAxis("k", ast.I32(2))
	b.Max("ZB", ast.Shape(3, 5), []*ast.Var{k}, func(i []ast.Expr) ast.Expr {
		return ast.Add(tb.At(i...), ast.NewCast(ast.Float32, k))
	}).Into(Z, ast.I32(0), ast.I32(2))
	f, err := b.Build(Z)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.String(); !strings.Contains(got, "alloc T: float32[3, 8]") || !strings.Contains(got, "ScheduleBlock(ZB)") || strings.Contains(got, "alloc ZB") {
		t.Errorf("function:\n%s", got)
	}
	a, bb := make([]float32, 6), make([]float32, 15)
	for i := range a {
		a[i] = float32(i)
	}
	for i := range bb {
		bb[i] = float32(-i)
	}
	z := make([]float32, 21)
	for i := range z {
		z[i] = float32(math.NaN())
	}
	if err := ast.Interpret(f, nil, map[string]any{"A": a, "B": bb, "Z": z}); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 3; r++ {
		for c := 0; c < 7; c++ {
			want := float32(0)
			if c < 2 {
				want = a[r*2+c]
			} else {
				want = 2*bb[r*5+c-2] + 1
			}
			if got := z[r*7+c]; got != want {
				t.Errorf("Z[%d, %d] = %v, want %v", r, c, got, want)
			}
		}
	}
}

// TestBuildIntoRefused: Into says what is wrong with its arguments.
func TestBuildIntoRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(b *ast.Builder) *ast.Tensor
		want string
	}{
		{"not storage", func(b *ast.Builder) *ast.Tensor {
			X := b.Compute("X", ast.Shape(4), func(i []ast.Expr) ast.Expr { return ast.F32(1) })
			return b.Compute("Y", ast.Shape(4), func(i []ast.Expr) ast.Expr { return ast.F32(1) }).Into(X)
		}, "Into: Y must go into a Storage tensor"},
		{"too big", func(b *ast.Builder) *ast.Tensor {
			S := b.Storage("S", ast.Float32, ast.I32(4))
			b.Compute("Y", ast.Shape(3), func(i []ast.Expr) ast.Expr { return ast.F32(1) }).Into(S, ast.I32(2))
			return S
		}, "Into: Y (3 along dimension 0) at offset 2 does not fit in S (4)"},
		{"dtype", func(b *ast.Builder) *ast.Tensor {
			S := b.Storage("S", ast.Int32, ast.I32(4))
			b.Compute("Y", ast.Shape(4), func(i []ast.Expr) ast.Expr { return ast.F32(1) }).Into(S)
			return S
		}, "Into: Y of float32 values into S of int32 values"},
		{"rank", func(b *ast.Builder) *ast.Tensor {
			S := b.Storage("S", ast.Float32, ast.I32(4), ast.I32(1))
			b.Compute("Y", ast.Shape(4), func(i []ast.Expr) ast.Expr { return ast.F32(1) }).Into(S)
			return S
		}, "Into: Y has 1 dimension, S 2 dimensions"},
		{"output into", func(b *ast.Builder) *ast.Tensor {
			S := b.Storage("S", ast.Float32, ast.I32(4))
			return b.Compute("Y", ast.Shape(4), func(i []ast.Expr) ast.Expr { return ast.F32(1) }).Into(S)
		}, "an output is nil, a placeholder or computed into another"},
	} {
		b := ast.NewBuilder("f")
		_, err := b.Build(tc.make(b))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}
