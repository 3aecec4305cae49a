package ast_test

import (
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

func TestMapChildrenIdentity(t *testing.T) {
	f := workload.Softmax(4, 8).Func
	var stmt func(ast.Stmt) ast.Stmt
	var expr func(ast.Expr) ast.Expr
	stmt = func(s ast.Stmt) ast.Stmt { return ast.MapChildren(s, stmt, expr) }
	expr = func(e ast.Expr) ast.Expr { return ast.MapChildren(e, stmt, expr) }
	if g := ast.MapChildren(f, stmt, expr); g != f {
		t.Error("MapChildren with identity callbacks returned a new function")
	}
}

func TestSubstitute(t *testing.T) {
	f := workload.Matmul(4, 4, 4).Func
	blk := f.Block("C")
	// Rebind the block: i -> i0*2 + i1 in its bindings only.
	i0, i1 := ast.NewVar("i0", ast.Int32), ast.NewVar("i1", ast.Int32)
	n := ast.Substitute(blk.Iters[0].Binding, map[string]ast.Expr{"i": ast.Add(ast.Mul(i0, ast.I32(2)), i1)})
	if got := ast.Print(n); got != "i0 * 2 + i1" {
		t.Errorf("got %s", got)
	}
	// Substituting a name that is not used changes nothing, and returns the
	// same node.
	if ast.Substitute(ast.Stmt(blk), map[string]ast.Expr{"zz": ast.I32(0)}) != ast.Stmt(blk) {
		t.Error("Substitute of an unused name returned a new node")
	}
	// Definitions stay: the loop variable k of the loop is not replaced,
	// its uses are.
	loop := &ast.For{Var: ast.NewVar("k", ast.Int32), Min: ast.I32(0), Extent: ast.I32(4), Body: ast.NewStore(f.Params[2], ast.F32(0), ast.NewVar("k", ast.Int32), ast.I32(0))}
	got := ast.Print(ast.Substitute(ast.Stmt(loop), map[string]ast.Expr{"k": ast.I32(3)}))
	want := "serial for (k, 0, 4) {\n  C[3, 0] = 0.0f\n}"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestInspectOrder(t *testing.T) {
	f := workload.Softmax(4, 8).Func
	var blocks []string
	ast.Inspect(f, func(n ast.Node) bool {
		if b, ok := n.(*ast.ScheduleBlock); ok {
			blocks = append(blocks, b.Name)
		}
		return true
	})
	if got := len(blocks); got != 5 || blocks[0] != "root" || blocks[4] != "Y" {
		t.Errorf("blocks in order: %v", blocks)
	}
}
