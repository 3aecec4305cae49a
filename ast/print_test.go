package ast_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-go/loom/ast"
)

// TestConstantRoundTrip prints and parses random constants of every type
// and checks that the value comes back bit for bit.
func TestConstantRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	check := func(c *ast.Const) {
		t.Helper()
		text := ast.Print(c)
		e, err := ast.ParseExpr(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if !ast.Equal(e, c) {
			t.Fatalf("%s parses to %s (%v, %v)", text, ast.Print(e), e.(*ast.Const).Float, c.Float)
		}
	}
	for n := 0; n < 20000; n++ {
		check(ast.F32(math.Float32frombits(r.Uint32())))
		check(ast.F64(math.Float64frombits(r.Uint64())))
		check(ast.FloatConst(ast.Float16, ast.Float16Value(uint16(r.Uint32()))))
		check(ast.FloatConst(ast.BFloat16, ast.BFloat16Value(uint16(r.Uint32()))))
		check(ast.I64(int64(r.Uint64())))
		check(ast.I32(int32(r.Uint32())))
	}
	for _, v := range []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64} {
		check(ast.F64(v))
	}
	check(ast.I64(math.MinInt64))
	check(ast.I32(math.MinInt32))
	check(ast.BoolConst(true))
}

func TestPrintPrecedence(t *testing.T) {
	a, b, c := ast.NewVar("a", ast.Int32), ast.NewVar("b", ast.Int32), ast.NewVar("c", ast.Int32)
	for _, tc := range []struct {
		e    ast.Expr
		want string
	}{
		{ast.Sub(a, ast.Sub(b, c)), "a - (b - c)"},
		{ast.Sub(ast.Sub(a, b), c), "a - b - c"},
		{ast.Mul(ast.Add(a, b), c), "(a + b) * c"},
		{ast.Add(a, ast.Mul(b, c)), "a + b * c"},
		{ast.Div(a, ast.Mul(b, c)), "a / (b * c)"},
		{ast.Sub(a, ast.I32(-1)), "a - -1"},
		{ast.Mul(ast.I32(-2), a), "-2 * a"},
		{ast.LT(ast.LT(a, b), ast.BoolConst(true)), "(a < b) < true"},
		{ast.And(ast.Or(ast.LT(a, b), ast.LT(b, c)), ast.LogicalNot(ast.EQ(a, c))), "(a < b || b < c) && !(a == c)"},
		{ast.Or(ast.And(ast.LT(a, b), ast.LT(b, c)), ast.LT(a, c)), "a < b && b < c || a < c"},
	} {
		if got := ast.Print(tc.e); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
		// The printed text parses back to the same tree.
		e, err := ast.ParseExpr(tc.want, a, b, c)
		if err == nil && !ast.Equal(e, tc.e) {
			t.Errorf("%s parses to a different tree: %s", tc.want, ast.Print(e))
		}
	}
}

func TestPrintIllFormed(t *testing.T) {
	// Printing never fails, so error messages can show broken IR.
	s := ast.Print(&ast.Func{Name: "f", Body: &ast.ScheduleBlock{Name: "b", Iters: []*ast.IterVar{nil}, Body: ast.NewStore(nil, nil)}})
	if s == "" {
		t.Fatal("empty output")
	}
}
