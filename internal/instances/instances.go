// Package instances estimates how much work interpreting a function is,
// so that tests can skip references the interpreter would take minutes
// over.
package instances

import "github.com/loom-go/loom/ast"

// Count returns how many block instances f runs at sizes: the product of
// the extents of the loops around each block, summed (a loop whose extent
// is not a constant at sizes counts once).
func Count(f *ast.Func, sizes map[string]int64) int64 {
	var total int64
	var walk func(s ast.Stmt, times int64)
	walk = func(s ast.Stmt, times int64) {
		ast.Inspect(s, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ScheduleBlock:
				total += times
			case *ast.For:
				e := n.Extent
				for name, v := range sizes {
					e = ast.Substitute(e, map[string]ast.Expr{name: ast.I64(v)})
				}
				k, ok := ast.ConstIntValue(ast.Simplify(e))
				if !ok || k < 1 {
					k = 1
				}
				walk(n.Body, times*k)
				return false
			}
			return true
		})
	}
	walk(f.Body, 1)
	return total
}
