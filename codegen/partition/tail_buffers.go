package partition

import (
	"cmp"
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/internal/compact"
)

// Partitioning copies loop bodies: the tail of a split loop, each version
// of a tail, the interior and the border of a padded read. A temporary
// the body uses (a matrix product's tile of accumulators, declared at
// full size) is then used by every copy, and no loop holds all of its
// uses: the code generator could no longer allocate it per tile (package
// compact), and a 4.8 MB accumulator written and read back each call
// (MobileNetV2's 1x1 convolution at 112x112, 12544 rows in tiles of 5)
// took the place of a tile in registers. Deciding that again over the
// copies also cost the most of a symbolic kernel's compile: a tail
// versioned eight ways puts 27 blocks around one buffer, whose pairs the
// dependence analysis then spent its whole budget on, in vain (two
// seconds a kernel).
//
// So the decision is taken once, on the function before it is copied: a
// temporary that compacts at a loop there (no value flows through it
// from one of that loop's iterations to another, nor between iterations
// of the loops outside it) has all of its uses inside that loop, and
// each copy of the loop runs iterations of its own. Each copy then gets a
// buffer of its own, declared just before it, and every one of them
// compacts again, over its few blocks.

// localTemporaries returns the temporaries of f that compact at a loop,
// by the name of that loop's variable: copies of a loop keep its name.
func localTemporaries(f *ast.Func) map[string][]*ast.Buffer {
	out := map[string][]*ast.Buffer{}
	for buf, c := range compact.Plan(f, func(*ast.Buffer, []*ast.For) bool { return true }) {
		out[c.Loop.Var.Name] = append(out[c.Loop.Var.Name], buf)
	}
	for _, bufs := range out {
		slices.SortFunc(bufs, func(a, b *ast.Buffer) int { return cmp.Compare(a.Name, b.Name) })
	}
	return out
}

// privatizer gives the copies of the loops that temporaries compact at
// buffers of their own.
type privatizer struct {
	local  map[string][]*ast.Buffer // localTemporaries of the function before copying
	origin map[string]string        // a renamed copy's loop variable -> the original's (a split's tail)
	names  map[string]bool          // every buffer and variable name of the function
	suffix string                   // of the new buffers' names
	// order are the temporaries with more than one copy of their loop,
	// by name; keep says whether the first copy keeps the temporary (no
	// use of it lies outside every copy).
	order []*ast.Buffer
	keep  map[*ast.Buffer]bool
	kept  map[*ast.Buffer]bool
}

// privatize returns body with each copy of a loop that a temporary of
// local compacts at, but the first, using a buffer of its own (every copy,
// when a use of the temporary lies outside all of them: a tail of one
// iteration runs its body without its loop). A copy's buffer is declared
// before the outermost statement that holds that copy and no other use
// of the temporary: where it does not compact after all, it is allocated
// as few times as it can be.
func privatize(body ast.Stmt, local map[string][]*ast.Buffer, origin map[string]string, names map[string]bool, suffix string) ast.Stmt {
	p := &privatizer{local: local, origin: origin, names: names, suffix: suffix, keep: map[*ast.Buffer]bool{}, kept: map[*ast.Buffer]bool{}}
	var all []*ast.Buffer
	for _, bufs := range local {
		all = append(all, bufs...)
	}
	slices.SortFunc(all, func(a, b *ast.Buffer) int { return cmp.Compare(a.Name, b.Name) })
	for _, b := range all {
		copies, stray := p.uses(body, b)
		if copies > 1 || copies == 1 && stray {
			p.order = append(p.order, b)
			p.keep[b] = !stray
		}
	}
	if len(p.order) == 0 {
		return body
	}
	return p.stmt(body, false, nil)
}

// loopOf reports whether l is a copy of the loop buf compacts at.
func (p *privatizer) loopOf(l *ast.For, buf *ast.Buffer) bool {
	name := l.Var.Name
	if o, ok := p.origin[name]; ok {
		name = o
	}
	return slices.Contains(p.local[name], buf)
}

// uses counts the copies of buf's loop in s that access buf, and reports
// whether a block of s outside them does (stray).
func (p *privatizer) uses(s ast.Stmt, buf *ast.Buffer) (copies int, stray bool) {
	ast.Inspect(s, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.For:
			if p.loopOf(n, buf) {
				if accesses(n, buf) {
					copies++
				}
				return false
			}
		case *ast.ScheduleBlock:
			if !n.HoldsBlock() && blockAccesses(n, buf) {
				stray = true
			}
		}
		return true
	})
	return copies, stray
}

// stmt gives each temporary of p.order that s holds exactly one copy of
// (and no other use) a buffer of its own, declared before s, unless an
// enclosing statement did (resolved) or the copy keeps the temporary;
// the others are decided inside s.
func (p *privatizer) stmt(s ast.Stmt, vectorized bool, resolved map[*ast.Buffer]bool) ast.Stmt {
	var decls []ast.Stmt
	if !vectorized { // no buffer is declared inside a vector loop
		for _, b := range p.order {
			if resolved[b] {
				continue
			}
			if copies, stray := p.uses(s, b); copies != 1 || stray {
				continue
			}
			resolved = cloneWith(resolved, b)
			if p.keep[b] && !p.kept[b] {
				p.kept[b] = true
				continue
			}
			nb := *b
			nb.Name = freshIn(p.names, b.Name+p.suffix)
			s = ast.RebindBuffer(s, b, &nb)
			decls = append(decls, ast.NewAlloc(&nb))
		}
	}
	if l, ok := s.(*ast.For); ok && l.Kind == ast.Vectorized {
		vectorized = true
	}
	out := ast.MapChildren(s, func(c ast.Stmt) ast.Stmt { return p.stmt(c, vectorized, resolved) }, keepExpr)
	return ast.NewSeq(append(decls, out)...)
}

// accesses reports whether a block under s accesses buf.
func accesses(s ast.Stmt, buf *ast.Buffer) bool {
	found := false
	ast.Inspect(s, func(n ast.Node) bool {
		if b, ok := n.(*ast.ScheduleBlock); ok && !b.HoldsBlock() && blockAccesses(b, buf) {
			found = true
		}
		return !found
	})
	return found
}

func blockAccesses(b *ast.ScheduleBlock, buf *ast.Buffer) bool {
	return slices.ContainsFunc(append(slices.Clone(b.Reads), b.Writes...), func(r ast.Region) bool { return r.Buffer == buf })
}

func cloneWith(m map[*ast.Buffer]bool, b *ast.Buffer) map[*ast.Buffer]bool {
	out := make(map[*ast.Buffer]bool, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[b] = true
	return out
}
