package partition

import (
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/internal/compact"
)

// The tail of a split loop is a copy of the loop's body, so a temporary
// the body uses (a matrix product's tile of accumulators, declared at
// full size) is then used by two sibling loops, and no loop holds all of
// its uses: the code generator could no longer allocate it per tile
// (package compact), and a 4.8 MB accumulator written and read back each
// call (MobileNetV2's 1x1 convolution at 112x112, 12544 rows in tiles
// of 5) took the place of a tile in registers. A temporary that compacts
// at a loop inside the split one (so that no value flows through it from
// one of that loop's iterations to another: none from the main part to
// the tail) gets a buffer of its own in the tail, declared just before
// it, and both compact again.

// localTemporaries returns the temporaries of f that compact at a loop:
// by the loop, the buffers that live for one of its iterations.
func localTemporaries(f *ast.Func) map[*ast.For][]*ast.Buffer {
	out := map[*ast.For][]*ast.Buffer{}
	for buf, c := range compact.Plan(f, func(*ast.Buffer, []*ast.For) bool { return true }) {
		out[c.Loop] = append(out[c.Loop], buf)
	}
	return out
}

// tailTemporaries returns the temporaries that the loop l's iterations
// use on their own (each compacts at l or at a loop inside it) and
// whose uses are all inside l.
func (p *partitioner) tailTemporaries(l *ast.For) []*ast.Buffer {
	if p.local == nil {
		return nil
	}
	var bufs []*ast.Buffer
	ast.Inspect(l, func(n ast.Node) bool {
		if lp, ok := n.(*ast.For); ok {
			bufs = append(bufs, p.local[lp]...)
		}
		return true
	})
	return slices.DeleteFunc(bufs, func(b *ast.Buffer) bool { return p.usesOutside(b, l) })
}

// usesOutside reports whether a block of the function outside l accesses
// buf.
func (p *partitioner) usesOutside(buf *ast.Buffer, l *ast.For) bool {
	found := false
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		if n == ast.Node(l) || found {
			return false
		}
		if b, ok := n.(*ast.ScheduleBlock); ok && !b.HoldsBlock() {
			found = slices.ContainsFunc(append(slices.Clone(b.Reads), b.Writes...), func(r ast.Region) bool { return r.Buffer == buf })
		}
		return !found
	}
	ast.Inspect(p.f.Body, visit)
	return found
}

// ownBuffers returns tail with each of bufs replaced by a new buffer of
// the same type and shape, and the declarations of the new ones.
func (p *partitioner) ownBuffers(tail *ast.For, bufs []*ast.Buffer) (*ast.For, []ast.Stmt) {
	var decls []ast.Stmt
	for _, old := range bufs {
		nb := *old
		nb.Name = freshIn(p.names, old.Name+"_tail")
		tail = ast.RebindBuffer(tail, old, &nb)
		decls = append(decls, ast.NewAlloc(&nb))
	}
	return tail, decls
}
