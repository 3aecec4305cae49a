package cuda

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
)

// Statements.
//
// Code outside every thread loop ("block level") runs in all the threads
// of a block alike; __syncthreads() goes there only, before a statement
// that reads a shared or global buffer an earlier statement wrote since
// the last barrier (or writes one an earlier statement read or wrote),
// and at the end of a block-level loop's body when its next iteration
// would conflict so with this one. Inside a thread loop no barrier can
// go (threads past the loop's guard would never reach it): a value
// passed there from one thread to another through memory is refused.

// access is what a statement reads and writes of the buffers threads
// share (shared and global).
type access struct {
	reads, writes map[*ast.Buffer]bool
}

func newAccess() access {
	return access{reads: map[*ast.Buffer]bool{}, writes: map[*ast.Buffer]bool{}}
}

func (a access) add(b access) {
	for x := range b.reads {
		a.reads[x] = true
	}
	for x := range b.writes {
		a.writes[x] = true
	}
}

// conflicts reports whether b, after a, needs a barrier between them.
func (a access) conflicts(b access) bool {
	for x := range b.reads {
		if a.writes[x] {
			return true
		}
	}
	for x := range b.writes {
		if a.reads[x] || a.writes[x] {
			return true
		}
	}
	return false
}

func (a access) empty() bool { return len(a.reads) == 0 && len(a.writes) == 0 }

// accessesOf returns the shared and global accesses of the blocks in s.
func accessesOf(s ast.Stmt) access {
	a := newAccess()
	ast.Inspect(s, func(n ast.Node) bool {
		b, ok := n.(*ast.ScheduleBlock)
		if !ok {
			return true
		}
		for _, r := range b.Reads {
			if r.Buffer.Scope != ast.Local {
				a.reads[r.Buffer] = true
			}
		}
		for _, w := range b.Writes {
			if w.Buffer.Scope != ast.Local {
				a.writes[w.Buffer] = true
			}
		}
		return true
	})
	return a
}

// stmts prints a list of statements; at block level it places barriers.
func (k *kernelWriter) stmts(list []ast.Stmt, blockLevel bool) {
	saved := k.savedNames()
	for _, s := range list {
		if blockLevel {
			a := accessesOf(s)
			if k.pending.conflicts(a) {
				k.line("__syncthreads();")
				k.pending = newAccess()
			}
			k.stmt(s, true)
			k.pending.add(a)
			continue
		}
		k.stmt(s, false)
	}
	k.restoreNames(saved)
}

func (k *kernelWriter) savedNames() map[string]string {
	out := make(map[string]string, len(k.names))
	for n, v := range k.names {
		out[n] = v
	}
	return out
}

func (k *kernelWriter) restoreNames(saved map[string]string) { k.names = saved }

func (k *kernelWriter) stmt(s ast.Stmt, blockLevel bool) {
	if k.err != nil {
		return
	}
	switch s := s.(type) {
	case *ast.Seq:
		k.stmts(s.Stmts, blockLevel)
	case *ast.For:
		k.loop(s, blockLevel)
	case *ast.Alloc:
		k.alloc(s, blockLevel)
	case *ast.ScheduleBlock:
		k.scheduleBlock(s)
	case *ast.Store:
		k.line("%s = %s;", k.access(s.Buffer, s.Indices), k.expr(s.Value))
	case *ast.IfThenElse:
		k.line("if (%s) {", k.expr(s.Cond))
		k.indent++
		k.stmts(flatten(s.Then), blockLevel)
		k.indent--
		if s.Else != nil {
			k.line("} else {")
			k.indent++
			k.stmts(flatten(s.Else), blockLevel)
			k.indent--
		}
		k.line("}")
	default:
		k.fail(k.errorAt(s, "statement has no CUDA lowering"))
	}
}

// loop prints a loop: a thread loop as its thread index (guarded when the
// block has more threads along its axis), the others as C loops.
func (k *kernelWriter) loop(l *ast.For, blockLevel bool) {
	saved := k.savedNames()
	defer k.restoreNames(saved)
	t := k.ctypeOf(l.Var.DType)
	switch {
	case l.Kind.IsGPUThread():
		if r := k.crossThreadReduction(l); r != nil {
			if !blockLevel && k.guarded {
				k.fail(k.errorAt(l, "the cross-thread reduction over %s is inside a guarded thread loop: its shuffles need every thread (make the enclosing thread loops as long as the block)", l.Var.Name))
				return
			}
			k.reduce(l, r)
			return
		}
		axis := "xyz"[l.Kind-ast.GPUThreadX]
		n, _ := ast.ConstIntValue(ast.Simplify(l.Extent))
		name := k.declare(l.Var)
		k.line("{")
		k.indent++
		k.line("const %s %s = %s + (%s)threadIdx.%c;", t, name, k.expr(l.Min), t, axis)
		k.allocsAt(l)
		guard := n < k.block[l.Kind-ast.GPUThreadX]
		wasGuarded := k.guarded
		if guard {
			k.line("if (%s < %s + %d) {", name, k.expr(l.Min), n)
			k.indent++
			k.guarded = true
		}
		k.checkNoExchange(l)
		k.stmts(flatten(l.Body), false)
		k.guarded = wasGuarded
		if guard {
			k.indent--
			k.line("}")
		}
		k.indent--
		k.line("}")
		return
	case l.Kind.IsGPUBlock():
		k.fail(k.errorAt(l, "loop %s is bound to %s below the kernel's outermost loops", l.Var.Name, l.Kind))
		return
	}
	min, ext := k.expr(l.Min), k.expr(l.Extent)
	name := k.declare(l.Var)
	if l.Kind == ast.Unrolled || l.Kind == ast.Vectorized {
		k.line("#pragma unroll")
	}
	if min == "0" || min == "0LL" {
		k.line("for (%s %s = 0; %s < %s; ++%s) {", t, name, name, ext, name)
	} else {
		k.line("for (%s %s = %s; %s < %s + %s; ++%s) {", t, name, min, name, min, ext, name)
	}
	k.indent++
	k.allocsAt(l)
	if blockLevel {
		k.stmts(flatten(l.Body), true)
		// The next iteration after this one, if it depends on this one
		// through memory the threads share.
		if k.pending.conflicts(accessesOf(l.Body)) && k.carriesShared(l) {
			k.line("__syncthreads();")
			k.pending = newAccess()
		}
	} else {
		k.stmts(flatten(l.Body), false)
	}
	k.indent--
	k.line("}")
}

// checkNoExchange refuses a thread loop in which one block writes a shared
// or global buffer that another block reads: threads would pass values
// through memory with no barrier between them.
func (k *kernelWriter) checkNoExchange(l *ast.For) {
	writers := map[*ast.Buffer]string{}
	ast.Inspect(l.Body, func(n ast.Node) bool {
		if b, ok := n.(*ast.ScheduleBlock); ok {
			for _, w := range b.Writes {
				if w.Buffer.Scope != ast.Local {
					writers[w.Buffer] = b.Name
				}
			}
		}
		return true
	})
	ast.Inspect(l.Body, func(n ast.Node) bool {
		if b, ok := n.(*ast.ScheduleBlock); ok {
			for _, r := range b.Reads {
				if w, ok := writers[r.Buffer]; ok && w != b.Name && r.Buffer.Scope == ast.Shared {
					k.fail(k.errorAt(l, "block %s reads shared buffer %s that block %s writes inside thread loop %s, where no __syncthreads can go: compute %s at a loop outside the thread loops", b.Name, r.Buffer.Name, w, l.Var.Name, w))
				}
			}
		}
		return true
	})
}

// alloc declares a shared or local buffer at its declaration, unless it
// is compacted (declared at its compaction loop instead).
func (k *kernelWriter) alloc(a *ast.Alloc, blockLevel bool) {
	buf := a.Buffer
	if _, compacted := k.plans[buf]; compacted {
		return
	}
	switch buf.Scope {
	case ast.Global:
		k.fail(k.errorAt(a, "global buffer %s is declared inside a kernel: declare it at the root", buf.Name))
	case ast.Shared:
		if !blockLevel {
			k.fail(k.errorAt(a, "shared buffer %s is declared inside a thread loop", buf.Name))
			return
		}
		k.declareArray(buf, buf.Shape, nil, true)
	case ast.Local:
		k.declareArray(buf, buf.Shape, nil, false)
	}
}

// allocsAt declares the buffers compacted at loop l, at the top of its
// body: a shared one among the kernel's shared arrays, a local one here;
// the origin of each here.
func (k *kernelWriter) allocsAt(l *ast.For) {
	var bufs []*ast.Buffer
	for b, c := range k.plans {
		if c.Loop == l {
			bufs = append(bufs, b)
		}
	}
	slices.SortFunc(bufs, func(a, b *ast.Buffer) int { return strings.Compare(a.Name, b.Name) })
	for _, b := range bufs {
		c := k.plans[b]
		var origin []string
		for d, o := range c.Origin {
			name := fmt.Sprintf("%s_o%d", cname(b.Name), d)
			k.line("const long long %s = %s;", name, k.expr(o))
			origin = append(origin, name)
		}
		k.declareArray(b, c.Shape, origin, b.Scope == ast.Shared)
	}
}

// declareArray declares buf with the given extents (constants).
func (k *kernelWriter) declareArray(buf *ast.Buffer, shape []ast.Expr, origin []string, shared bool) {
	t := k.ctypeOf(buf.DType)
	bi := &bufInfo{name: cname(buf.Name), origin: origin}
	size := int64(1)
	for _, d := range shape {
		n, ok := ast.ConstIntValue(ast.Simplify(d))
		if !ok {
			k.fail(fmt.Errorf("%s buffer %s has the non-constant extent %s where it is allocated: tile the loops around its uses by constants", buf.Scope, buf.Name, ast.Print(d)))
			return
		}
		size *= n
		bi.shape = append(bi.shape, fmt.Sprint(n))
	}
	k.bufs[buf] = bi
	if shared {
		k.shared = append(k.shared, fmt.Sprintf("__shared__ %s %s[%d];", t, bi.name, size))
		k.nShared += size * int64(buf.DType.Bytes())
		if k.nShared > 48*1024 {
			k.fail(fmt.Errorf("the kernel's shared buffers take %d bytes; a block has 48 KiB of static shared memory", k.nShared))
		}
		return
	}
	k.line("%s %s[%d];", t, bi.name, size)
}

// scheduleBlock prints a block: its iteration variables, its predicate,
// its init on the first reduce iteration, its body.
func (k *kernelWriter) scheduleBlock(b *ast.ScheduleBlock) {
	saved := k.savedNames()
	defer k.restoreNames(saved)
	k.line("{")
	k.indent++
	defer func() { k.indent--; k.line("}") }()
	values := make([]string, len(b.Iters))
	for i, it := range b.Iters {
		values[i] = k.expr(it.Binding)
	}
	for i, it := range b.Iters {
		k.line("const %s %s = %s;", k.ctypeOf(it.Var.DType), k.declare(it.Var), values[i])
	}
	if b.Predicate != nil {
		k.line("if (%s) {", k.expr(b.Predicate))
		k.indent++
		defer func() { k.indent--; k.line("}") }()
	}
	if b.Init != nil {
		var first []string
		for _, it := range b.Iters {
			if it.Kind == ast.Reduce {
				first = append(first, fmt.Sprintf("%s == %s", k.names[it.Var.Name], k.expr(it.Dom.Min)))
			}
		}
		if len(first) == 0 {
			k.stmt(b.Init, false)
		} else {
			k.line("if (%s) {", strings.Join(first, " && "))
			k.indent++
			k.stmt(b.Init, false)
			k.indent--
			k.line("}")
		}
	}
	k.stmt(b.Body, false)
}

// carriesShared reports whether loop l may carry a dependence through a
// shared or global buffer (true when the model is missing).
func (k *kernelWriter) carriesShared(l *ast.For) bool {
	if k.model == nil {
		return true
	}
	for _, d := range k.model.CarriedBy(l) {
		if d.Buffer.Scope != ast.Local {
			return true
		}
	}
	return false
}
