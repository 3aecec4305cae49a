package cuda

import (
	"strings"

	"github.com/loom-go/loom/ast"
)

// liftRootConditions moves each condition on the sizes that sits directly
// under the root block into the kernels it guards: every statement under
// the root runs as a kernel, so
//
//	if (N > 4) { for (j: blockIdx.x, 0, N) { body } }
//
// becomes
//
//	for (j: blockIdx.x, 0, N) { if (N > 4) { body } }
//
// (the blocks of a kernel whose condition fails return at once; a grid
// whose extent is not positive is not launched at all). The else branch
// gets the negated condition; nested conditions collect. A condition that
// reads a buffer is refused: the host does not see device data.
func liftRootConditions(f *ast.Func) (*ast.Func, error) {
	root, ok := f.Body.(*ast.ScheduleBlock)
	if !ok {
		return f, nil
	}
	stmts := flatten(root.Body)
	if !containsIf(stmts) {
		return f, nil
	}
	lifted, err := liftConditions(f, stmts, nil)
	if err != nil {
		return nil, err
	}
	nr := *root
	nr.Body = ast.NewSeq(lifted...)
	nf := *f
	nf.Body = &nr
	return &nf, nil
}

func containsIf(stmts []ast.Stmt) bool {
	for _, s := range stmts {
		if _, ok := s.(*ast.IfThenElse); ok {
			return true
		}
	}
	return false
}

// liftConditions returns stmts with every root-level condition moved
// under the blockIdx loops, each statement guarded by conds (all hold).
func liftConditions(f *ast.Func, stmts []ast.Stmt, conds []ast.Expr) ([]ast.Stmt, error) {
	var out []ast.Stmt
	for _, s := range stmts {
		c, ok := s.(*ast.IfThenElse)
		if !ok {
			out = append(out, guardKernel(s, conds))
			continue
		}
		if readsData(c.Cond) {
			return nil, &Error{Func: f.Name, Reason: "a condition on buffer data encloses kernels; the host cannot test it: move the condition inside the loops bound to blockIdx", At: firstLine(ast.Print(c))}
		}
		then, err := liftConditions(f, flatten(c.Then), append(conds[:len(conds):len(conds)], c.Cond))
		if err != nil {
			return nil, err
		}
		out = append(out, then...)
		if c.Else != nil {
			els, err := liftConditions(f, flatten(c.Else), append(conds[:len(conds):len(conds)], ast.LogicalNot(c.Cond)))
			if err != nil {
				return nil, err
			}
			out = append(out, els...)
		}
	}
	return out, nil
}

// guardKernel puts s's body under conds, inside its outermost run of
// blockIdx loops. A declaration stays as it is (a buffer is allocated
// whether or not the kernels that use it run); a statement that is no
// kernel keeps its conditions around it, to be refused as such.
func guardKernel(s ast.Stmt, conds []ast.Expr) ast.Stmt {
	if len(conds) == 0 {
		return s
	}
	if _, ok := s.(*ast.Alloc); ok {
		return s
	}
	cond := conds[0]
	for _, c := range conds[1:] {
		cond = ast.And(cond, c)
	}
	l, ok := s.(*ast.For)
	if !ok || !l.Kind.IsGPUBlock() {
		return ast.NewIf(cond, s, nil)
	}
	var inner func(l *ast.For) *ast.For
	inner = func(l *ast.For) *ast.For {
		nl := *l
		if b, ok := l.Body.(*ast.For); ok && b.Kind.IsGPUBlock() {
			nl.Body = inner(b)
		} else {
			nl.Body = ast.NewIf(cond, l.Body, nil)
		}
		return &nl
	}
	return inner(l)
}

// readsData reports whether e loads from a buffer.
func readsData(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if _, ok := n.(*ast.Load); ok {
			found = true
		}
		return !found
	})
	return found
}

// firstLine is the first line of printed IR, marked when cut.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}
