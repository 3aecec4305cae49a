package ast_test

import (
	"math"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

func TestEqualAndHash(t *testing.T) {
	funcs := workload.All()
	for i, a := range funcs {
		for j, b := range funcs {
			eq := ast.Equal(a.Func, b.Func)
			if eq != (i == j) {
				t.Errorf("Equal(%s, %s) = %v", a.Name, b.Name, eq)
			}
			if (ast.Hash(a.Func) == ast.Hash(b.Func)) != eq {
				t.Errorf("Hash and Equal disagree on %s and %s", a.Name, b.Name)
			}
		}
		// Two independent builds are equal, and so is a parsed copy.
		again := workload.All()[i].Func
		parsed, err := ast.Parse(ast.Print(a.Func))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range []*ast.Func{again, parsed} {
			if !ast.Equal(a.Func, g) || ast.Hash(a.Func) != ast.Hash(g) {
				t.Errorf("%s: rebuilt or reparsed function differs", a.Name)
			}
		}
	}
}

func TestEqualDetails(t *testing.T) {
	i, j := ast.NewVar("i", ast.Int32), ast.NewVar("j", ast.Int32)
	cases := []struct {
		a, b ast.Node
		eq   bool
	}{
		{ast.Add(i, j), ast.Add(ast.NewVar("i", ast.Int32), ast.NewVar("j", ast.Int32)), true},
		{ast.Add(i, j), ast.Add(j, i), false},
		{i, ast.NewVar("i", ast.Int64), false},
		{ast.F64(math.NaN()), ast.F64(-math.NaN()), true},
		{ast.F64(0), ast.F64(math.Copysign(0, -1)), false},
		{ast.I32(1), ast.I64(1), false},
		{&ast.Seq{Stmts: []ast.Stmt{&ast.Seq{}}}, &ast.Seq{}, false},
		{
			&ast.For{Var: i, Min: ast.I32(0), Extent: ast.I32(1), Annotations: ast.Annotations{"a": int64(1), "b": "x"}, Body: &ast.Seq{}},
			&ast.For{Var: i, Min: ast.I32(0), Extent: ast.I32(1), Annotations: ast.Annotations{"b": "x", "a": int64(1)}, Body: &ast.Seq{}},
			true,
		},
		{
			&ast.For{Var: i, Min: ast.I32(0), Extent: ast.I32(1), Annotations: ast.Annotations{"a": int64(1)}, Body: &ast.Seq{}},
			&ast.For{Var: i, Min: ast.I32(0), Extent: ast.I32(1), Annotations: ast.Annotations{"a": 1.0}, Body: &ast.Seq{}},
			false,
		},
	}
	for _, c := range cases {
		if got := ast.Equal(c.a, c.b); got != c.eq {
			t.Errorf("Equal(%s, %s) = %v, want %v", c.a, c.b, got, c.eq)
		}
		if got := ast.Hash(c.a) == ast.Hash(c.b); got != c.eq {
			t.Errorf("Hash(%s) == Hash(%s) is %v, want %v", c.a, c.b, got, c.eq)
		}
	}
	if s := ast.Hash(i).String(); len(s) != 64 {
		t.Errorf("digest %q is not 64 hex digits", s)
	}
}
