package llvm

import (
	"maps"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/internal/compact"
)

// Buffer compaction (see package compact): a temporary is allocated per
// iteration of the deepest loop around its uses that carries no value
// through it, only as large as one iteration's region. On a CPU that loop
// must not be a vectorized loop or inside one: each lane would need its
// own copy.

type compaction = compact.Compaction

// planCompactions finds the compaction of every temporary of f that has
// one.
func planCompactions(f *ast.Func) map[*ast.Buffer]*compaction {
	plans := compact.Plan(f, func(_ *ast.Buffer, loops []*ast.For) bool {
		return !slices.ContainsFunc(loops, func(l *ast.For) bool { return l.Kind == ast.Vectorized })
	})
	// One that would not shrink stays where it is declared, allocated
	// once.
	maps.DeleteFunc(plans, func(_ *ast.Buffer, c *compaction) bool { return !c.Smaller })
	return plans
}
