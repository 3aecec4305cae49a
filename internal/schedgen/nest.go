package schedgen

import (
	"slices"

	"github.com/loom-go/loom/ast"
)

// nest is what the generator knows of a function: its loops and blocks,
// how they nest, and which blocks feed which.
type nest struct {
	loops  []*loopInfo
	loop   map[string]*loopInfo
	blocks []*blockInfo // every block but the root, in program order
	block  map[string]*blockInfo
	// runs are the runs of consecutive loops of one statement list
	// (candidates for align), each at least two long.
	runs [][]*loopInfo
	// allocated are the buffers the function allocates (not parameters).
	allocated map[string]bool
}

type loopInfo struct {
	name   string
	f      *ast.For
	parent *loopInfo
	inner  *loopInfo    // the loop that is the whole body, if any
	blocks []*blockInfo // the blocks under the loop
	ext    int64        // the constant extent, or -1
}

type blockInfo struct {
	name          string
	b             *ast.ScheduleBlock
	loops         []*loopInfo // the loops around the block, outermost first
	reads, writes []string    // buffer names
}

// analyze returns the nest of f.
func analyze(f *ast.Func) *nest {
	n := &nest{loop: map[string]*loopInfo{}, block: map[string]*blockInfo{}, allocated: map[string]bool{}}
	var walk func(s ast.Stmt, loops []*loopInfo)
	walk = func(s ast.Stmt, loops []*loopInfo) {
		switch s := s.(type) {
		case *ast.For:
			l := &loopInfo{name: s.Var.Name, f: s, ext: -1}
			if e, ok := ast.ConstIntValue(ast.Simplify(s.Extent)); ok {
				l.ext = e
			}
			if len(loops) > 0 {
				l.parent = loops[len(loops)-1]
				if l.parent.f.Body == ast.Stmt(s) {
					l.parent.inner = l
				}
			}
			n.loops = append(n.loops, l)
			n.loop[l.name] = l
			walk(s.Body, append(loops[:len(loops):len(loops)], l))
		case *ast.Seq:
			var run []*loopInfo
			flush := func() {
				if len(run) >= 2 {
					n.runs = append(n.runs, run)
				}
				run = nil
			}
			for _, st := range s.Stmts {
				walk(st, loops)
				if fl, ok := st.(*ast.For); ok {
					run = append(run, n.loop[fl.Var.Name])
				} else {
					flush()
				}
			}
			flush()
		case *ast.ScheduleBlock:
			if len(loops) > 0 || f.Body != ast.Stmt(s) {
				b := &blockInfo{name: s.Name, b: s, loops: loops}
				for _, r := range s.Reads {
					b.reads = append(b.reads, r.Buffer.Name)
				}
				for _, r := range s.Writes {
					b.writes = append(b.writes, r.Buffer.Name)
				}
				n.blocks = append(n.blocks, b)
				n.block[b.name] = b
				for _, l := range loops {
					l.blocks = append(l.blocks, b)
				}
			}
			if s.Init != nil {
				walk(s.Init, loops)
			}
			walk(s.Body, loops)
		case *ast.IfThenElse:
			walk(s.Then, loops)
			if s.Else != nil {
				walk(s.Else, loops)
			}
		case *ast.Alloc:
			n.allocated[s.Buffer.Name] = true
		}
	}
	walk(f.Body, nil)
	return n
}

// chain returns the perfect nest below l: l, the loop that is its whole
// body, and so on.
func (l *loopInfo) chain() []*loopInfo {
	var out []*loopInfo
	for x := l; x != nil; x = x.inner {
		out = append(out, x)
	}
	return out
}

// producers returns the blocks before b that write a buffer b reads.
func (n *nest) producers(b *blockInfo) []*blockInfo {
	var out []*blockInfo
	for _, p := range n.blocks {
		if p == b {
			break
		}
		if intersects(p.writes, b.reads) {
			out = append(out, p)
		}
	}
	return out
}

// consumers returns the blocks after b that read a buffer b writes.
func (n *nest) consumers(b *blockInfo) []*blockInfo {
	var out []*blockInfo
	seen := false
	for _, c := range n.blocks {
		if seen && intersects(b.writes, c.reads) {
			out = append(out, c)
		}
		seen = seen || c == b
	}
	return out
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// reduceLoops returns the loops around b that bind a reduce variable.
func (b *blockInfo) reduceLoops() []*loopInfo {
	var out []*loopInfo
	for _, l := range b.loops {
		for _, it := range b.b.Iters {
			if it.Kind == ast.Reduce && ast.Mentions(it.Binding, l.name) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// names returns the loops' names.
func names(ls []*loopInfo) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.name
	}
	return out
}
