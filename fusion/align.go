package fusion

import (
	"slices"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// align lines up the loop nests of the function: consecutive nests whose
// loops have the same extents share their loops wherever that is legal,
// level by level, so that the blocks of a row (a reduction and the
// element-wise work on its result) sit under one loop, as CINN aligns a
// fused group before tiling it. It returns f itself when the result
// would not verify, and the number of merges schedule.Align decided.
//
// Runs of loops merge pair by pair (the loop merged so far with the
// next), which gives what schedule.Align of any part of the run would:
// merging loops is legal when merging each prefix is. Each merge is
// decided by a look at the blocks it reorders (see quick) and, when that
// is not enough, by schedule.Align on a cut of the kernel down to those
// blocks (see check), at most maxAlignChecks times a kernel: checking
// every merge on the whole kernel made a chain of n reductions cost n^3.
func align(f *ast.Func) (*ast.Func, int) {
	s, err := schedule.New(f) // its function has a name for each loop
	if err != nil {
		return f, 0
	}
	named := s.Func()
	root, ok := named.Body.(*ast.ScheduleBlock)
	if !ok {
		return f, 0
	}
	a := &aligner{f: named, root: root, blocks: map[string]*blockInfo{}, alias: map[string]string{}}
	ast.Inspect(named.Body, func(n ast.Node) bool {
		if b, ok := n.(*ast.ScheduleBlock); ok && b != root {
			a.blocks[b.Name] = infoOf(b)
		}
		return true
	})
	nb := *root
	nb.Body = seqOf(a.seq(nil, nil, stmtsOf(root.Body)))
	out := *named
	out.Body = &nb
	g := ast.SimplifyFunc(&out)
	if ast.Verify(g) != nil {
		return f, a.checks
	}
	return g, a.checks
}

// maxAlignChecks bounds the merges of one kernel decided by
// schedule.Align; past it, a merge quick cannot decide is not made (the
// nests stay apart: slower code, the same results).
const maxAlignChecks = 200

// aligner aligns the loops of one kernel.
type aligner struct {
	f      *ast.Func
	root   *ast.ScheduleBlock
	blocks map[string]*blockInfo // by block name
	// alias maps the variable of a loop merged into another to that
	// loop's variable; blockInfo's expressions keep the names they were
	// lowered with.
	alias  map[string]string
	checks int // schedule.Align calls so far
}

// blockInfo is what quick needs of a block: its accesses, each a region
// with the block's iteration variables replaced by their bindings (so
// over the loop variables), and the loop variables its reduce variables
// are bound to.
type blockInfo struct {
	name     string
	access   []access
	reduceOn []string // loop variables a reduce iteration variable is bound to
	guarded  bool     // it has a predicate
}

type access struct {
	buf    string
	write  bool
	ranges []ast.Range
}

func infoOf(b *ast.ScheduleBlock) *blockInfo {
	bind := map[string]ast.Expr{}
	info := &blockInfo{name: b.Name, guarded: b.Predicate != nil}
	for _, it := range b.Iters {
		bind[it.Var.Name] = it.Binding
		if v, ok := it.Binding.(*ast.Var); ok && it.Kind == ast.Reduce {
			info.reduceOn = append(info.reduceOn, v.Name)
		}
	}
	add := func(rs []ast.Region, write bool) {
		for _, r := range rs {
			ranges := make([]ast.Range, len(r.Ranges))
			for d, rg := range r.Ranges {
				ranges[d] = ast.Range{Min: ast.Substitute(rg.Min, bind), Extent: ast.Substitute(rg.Extent, bind)}
			}
			info.access = append(info.access, access{buf: r.Buffer.Name, write: write, ranges: ranges})
		}
	}
	add(b.Reads, false)
	add(b.Writes, true)
	return info
}

// find returns the variable the loop variable v now is.
func (a *aligner) find(v string) string {
	for {
		w, ok := a.alias[v]
		if !ok {
			return v
		}
		v = w
	}
}

// nest is a loop of a statement list being merged with the loops after
// it: the first loop, the statements of the merged body so far, and the
// blocks under it, also by the buffers they read and write.
type nest struct {
	loop             *ast.For
	body             []ast.Stmt
	blocks           []*blockInfo
	readers, writers map[string][]*blockInfo // by buffer name
}

func (a *aligner) nestOf(f *ast.For) *nest {
	n := &nest{loop: f, body: slices.Clone(stmtsOf(f.Body)), readers: map[string][]*blockInfo{}, writers: map[string][]*blockInfo{}}
	ast.Inspect(f.Body, func(x ast.Node) bool {
		if b, ok := x.(*ast.ScheduleBlock); ok {
			n.add(a.blocks[b.Name])
		}
		return true
	})
	return n
}

func (n *nest) add(b *blockInfo) {
	n.blocks = append(n.blocks, b)
	for _, ac := range b.access {
		m := n.readers
		if ac.write {
			m = n.writers
		}
		if l := m[ac.buf]; len(l) == 0 || l[len(l)-1] != b {
			m[ac.buf] = append(l, b)
		}
	}
}

func (n *nest) stmt() ast.Stmt {
	c := *n.loop
	c.Body = seqOf(n.body)
	return &c
}

// seq aligns one statement list under the loops outer, with allocs the
// declarations in scope above it, and returns the new list: each run of
// consecutive loops merged pair by pair as far as each merge goes, then
// each loop's body aligned in turn.
func (a *aligner) seq(outer []*ast.For, allocs []ast.Stmt, stmts []ast.Stmt) []ast.Stmt {
	for _, s := range stmts {
		if _, ok := s.(*ast.Alloc); ok {
			allocs = append(allocs[:len(allocs):len(allocs)], s)
		}
	}
	var out []ast.Stmt
	var cur *nest
	for _, s := range stmts {
		f, ok := s.(*ast.For)
		if !ok {
			if cur != nil {
				out, cur = append(out, cur.stmt()), nil
			}
			out = append(out, s)
			continue
		}
		next := a.nestOf(f)
		if cur != nil && a.mergeable(outer, allocs, cur, next) {
			a.merge(cur, next)
			continue
		}
		if cur != nil {
			out = append(out, cur.stmt())
		}
		cur = next
	}
	if cur != nil {
		out = append(out, cur.stmt())
	}
	for i, s := range out {
		if f, ok := s.(*ast.For); ok {
			c := *f
			c.Body = seqOf(a.seq(append(outer[:len(outer):len(outer)], f), allocs, stmtsOf(f.Body)))
			out[i] = &c
		}
	}
	return out
}

// merge appends next's body to cur's, its variable renamed to cur's.
func (a *aligner) merge(cur, next *nest) {
	v := next.loop.Var.Name
	a.alias[v] = cur.loop.Var.Name
	rename := map[string]ast.Expr{v: cur.loop.Var}
	for _, s := range next.body {
		cur.body = append(cur.body, ast.Substitute(s, rename))
	}
	for _, b := range next.blocks {
		cur.add(b)
	}
}

// mergeable reports whether the loop of next may merge into cur's: the
// same bounds, both serial, and no dependence between their blocks that
// the merge would reverse.
func (a *aligner) mergeable(outer []*ast.For, allocs []ast.Stmt, cur, next *nest) bool {
	p, q := cur.loop, next.loop
	if p.Kind != ast.Serial || q.Kind != ast.Serial ||
		!ast.Equal(ast.Simplify(p.Min), ast.Simplify(q.Min)) || !ast.Equal(ast.Simplify(p.Extent), ast.Simplify(q.Extent)) {
		return false
	}
	if c, ok := ast.Simplify(p.Extent).(*ast.Const); ok && c.Int <= 1 {
		return true // one iteration at most: the order stays as it was
	}
	legal, known, pairs := a.quick(cur, next)
	if known {
		return legal
	}
	if a.checks >= maxAlignChecks {
		return false
	}
	a.checks++
	return a.check(outer, allocs, cur, next, pairs)
}

// quick decides a merge from the blocks of cur and next that access a
// buffer in common, one of them writing it (the only pairs whose order a
// merge can change), when it can: legal when every such pair accesses
// the buffer only at an index that is the merged loop's variable (so
// only in the same iteration, in the order they had); illegal when one
// of cur's blocks is a reduction over the loop and next reads what it
// writes (the value is not final until the loop ends). Otherwise known
// is false, and pairs names the blocks of the pairs.
func (a *aligner) quick(cur, next *nest) (legal, known bool, pairs map[string]bool) {
	pv, qv := a.find(cur.loop.Var.Name), a.find(next.loop.Var.Name)
	pairs = map[string]bool{}
	same := true
	for _, b := range next.blocks {
		for _, bc := range b.access {
			// The blocks of cur whose access of the buffer conflicts
			// with this one: its writers, and its readers if b writes.
			others := [2][]*blockInfo{cur.writers[bc.buf]}
			if bc.write {
				others[1] = cur.readers[bc.buf]
			}
			for k, cs := range others {
				for _, c := range cs {
					if k == 0 && !bc.write && slices.ContainsFunc(c.reduceOn, func(v string) bool { return a.find(v) == pv }) {
						return false, true, nil
					}
					if same && !a.sameIteration(c, pv, b, qv, bc.buf) {
						same = false
					}
					pairs[c.name], pairs[b.name] = true, true
				}
			}
		}
	}
	if same {
		return true, true, nil
	}
	return false, false, pairs
}

// sameIteration reports whether some dimension of buf is indexed by
// exactly the loop variable pv in every access of block c and by qv in
// every access of block d, neither block guarded.
func (a *aligner) sameIteration(c *blockInfo, pv string, d *blockInfo, qv string, buf string) bool {
	if c.guarded || d.guarded {
		return false
	}
	rank := -1
	for _, ac := range c.access {
		if ac.buf == buf {
			rank = len(ac.ranges)
		}
	}
	for dim := 0; dim < rank; dim++ {
		ok := true
		for _, side := range [2]struct {
			b *blockInfo
			v string
		}{{c, pv}, {d, qv}} {
			for _, ac := range side.b.access {
				if ac.buf != buf {
					continue
				}
				rg := ac.ranges[dim]
				v, isVar := rg.Min.(*ast.Var)
				one, isConst := rg.Extent.(*ast.Const)
				if !isVar || a.find(v.Name) != side.v || !isConst || one.Int != 1 {
					ok = false
				}
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// check reports whether schedule.Align accepts merging next's loop into
// cur's, asking it on a cut of the kernel: the loops outer around them,
// the declarations the kept blocks use, and of the two loops' blocks
// only those named by pairs (see quick). Merging consecutive loops
// reorders only instances of blocks in different loops, and only a pair
// of them that access a buffer in common can depend on each other;
// everything else keeps its order, so a dependence the merge would
// reverse in the kernel it reverses in the cut too.
func (a *aligner) check(outer []*ast.For, allocs []ast.Stmt, cur, next *nest, pairs map[string]bool) bool {
	var cut []ast.Stmt
	for _, n := range [2]*nest{cur, next} {
		c := *n.loop
		c.Body = pruneBlocks(seqOf(n.body), pairs)
		if c.Body == nil {
			return false // quick names a block of each loop
		}
		cut = append(cut, &c)
	}
	var nest ast.Stmt = seqOf(cut)
	for i := len(outer) - 1; i >= 0; i-- {
		c := *outer[i]
		c.Body = nest
		nest = &c
	}
	used := map[string]bool{}
	for name := range pairs {
		for _, ac := range a.blocks[name].access {
			used[ac.buf] = true
		}
	}
	var decls []ast.Stmt
	for _, s := range allocs {
		if used[s.(*ast.Alloc).Buffer.Name] {
			decls = append(decls, s)
		}
	}
	root := *a.root
	root.Body = seqOf(append(decls, nest))
	sub := *a.f
	sub.Body = &root
	s, err := schedule.New(&sub)
	if err != nil {
		return false
	}
	lp, err1 := s.GetLoop(cur.loop.Var.Name)
	lq, err2 := s.GetLoop(next.loop.Var.Name)
	if err1 != nil || err2 != nil {
		return false
	}
	_, err = s.Align(lp, lq)
	return err == nil
}

// pruneBlocks returns s without the blocks keep does not name, and
// without the loops and lists that held only such blocks; nil when
// nothing is left. Declarations stay.
func pruneBlocks(s ast.Stmt, keep map[string]bool) ast.Stmt {
	switch s := s.(type) {
	case *ast.ScheduleBlock:
		if keep[s.Name] {
			return s
		}
		return nil
	case *ast.For:
		body := pruneBlocks(s.Body, keep)
		if body == nil {
			return nil
		}
		c := *s
		c.Body = body
		return &c
	case *ast.Seq:
		var kept []ast.Stmt
		blocks := false
		for _, x := range s.Stmts {
			if _, ok := x.(*ast.Alloc); ok {
				kept = append(kept, x)
				continue
			}
			if p := pruneBlocks(x, keep); p != nil {
				kept = append(kept, p)
				blocks = true
			}
		}
		if !blocks {
			return nil
		}
		return seqOf(kept)
	}
	return s // anything else stays as it is
}

// seqOf returns the statements as one: the statement itself when there
// is one.
func seqOf(stmts []ast.Stmt) ast.Stmt {
	if len(stmts) == 1 {
		return stmts[0]
	}
	return &ast.Seq{Stmts: stmts}
}

func stmtsOf(s ast.Stmt) []ast.Stmt {
	if seq, ok := s.(*ast.Seq); ok {
		return seq.Stmts
	}
	return []ast.Stmt{s}
}
