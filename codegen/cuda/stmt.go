package cuda

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/intrin"
)

// Statements.
//
// Code that all the threads of a block run alike is "block level": code
// outside every thread loop, and code inside thread loops that span the
// block (no guard) under loops and conditions that do not depend on the
// thread. __syncthreads() goes there only, before a statement that reads a
// shared or global buffer an earlier statement wrote since the last
// barrier (or writes one an earlier statement read or wrote), and at the
// end of a block-level loop's body when its next iteration would conflict
// so with this one. Anywhere else no barrier can go (threads past a guard
// would never reach it): a value passed there from one thread to another
// through memory is refused.
//
// Inside a spanning thread loop, a block that does not depend on the loop's
// variable runs in every thread along that axis: the cooperative fetch of
// a shared tile, whose own loops are bound to the same thread axes again
// (one part per thread) or are not (every thread copies it all). The
// interpreter runs it once per iteration of the thread loop instead, which
// comes to the same only if it computes the same thing each time: so such
// a block may write only shared and local buffers, none that the blocks
// depending on the thread write, and read none of those either.

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

// memAccessesOf is accessesOf less the accumulators of tensorized nests
// kept in registers while they print (hoistAccumulators): the nests do
// not touch them in memory.
func (k *kernelWriter) memAccessesOf(s ast.Stmt) access {
	a := accessesOf(s)
	if len(k.accumulators) == 0 {
		return a
	}
	other := newAccess() // of the statements outside the nests
	ast.Inspect(s, func(n ast.Node) bool {
		if f, ok := n.(*ast.For); ok {
			if _, kept := k.accumulators[f]; kept {
				return false
			}
		}
		if b, ok := n.(*ast.ScheduleBlock); ok {
			other.add(accessesOf(b))
			return false
		}
		return true
	})
	for _, r := range k.accumulators {
		if !other.reads[r.buf] {
			delete(a.reads, r.buf)
		}
		if !other.writes[r.buf] {
			delete(a.writes, r.buf)
		}
	}
	return a
}

// stmts prints a list of statements; at block level it places barriers.
func (k *kernelWriter) stmts(list []ast.Stmt, blockLevel bool) {
	saved := k.savedNames()
	for _, s := range list {
		if blockLevel {
			a := k.memAccessesOf(s)
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
		dst := k.access(s.Buffer, s.Indices)
		if ld, ok := s.Value.(*ast.Load); ok && ld.Buffer.DType == s.Buffer.DType && k.laneLoads[ld] == "" {
			// A copy moves the encoding as it is.
			src := k.access(ld.Buffer, ld.Indices)
			if cp, ok := k.asyncCopy(s.Buffer, ld, int64(s.Buffer.DType.Bytes()), "&"+dst, "&"+src); ok {
				k.line("%s", cp)
				return
			}
			k.line("%s = %s;", dst, src)
			return
		}
		k.line("%s = %s;", dst, k.toMem(s.Buffer.DType, k.expr(s.Value)))
	case *ast.IfThenElse:
		if blockLevel && k.threadDependent(s.Cond) {
			k.checkNoExchange(s)
			blockLevel = false
		}
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
	if name, ok := l.Annotations[intrin.AnnotationKey].(string); ok {
		k.tensorized(l, name)
		return
	}
	if k.hoistAccumulators(l, blockLevel) || k.pipelined(l, blockLevel) {
		return
	}
	t := k.ctypeOf(l.Var.DType)
	switch {
	case l.Kind.IsGPUThread():
		if r := k.crossThreadReduction(l); r != nil {
			if !blockLevel && k.guarded {
				k.fail(k.errorAt(l, "the cross-thread reduction over %s is inside a guarded thread loop: its shuffles need every thread (make the enclosing thread loops as long as the block)", l.Var.Name))
				return
			}
			k.reduce(l, r, blockLevel)
			return
		}
		if b := racingReduction(l); b != nil {
			k.fail(k.errorAt(l, "loop %s, bound to %s, runs the reduction of block %s across threads, but is no cross-thread reduction (the loop must run that one block alone, through serial loops, its update x = x op e): its threads would race on the result", l.Var.Name, l.Kind, b.Name))
			return
		}
		axis := "xyz"[l.Kind-ast.GPUThreadX]
		n, _ := ast.ConstIntValue(ast.Simplify(l.Extent))
		for _, outer := range k.threads {
			if outer.Kind == l.Kind && ast.Mentions(l.Body, outer.Var.Name) {
				k.fail(k.errorAt(l, "loop %s is bound to %s inside loop %s, bound to the same, and uses %s: in a kernel both are the same thread index", l.Var.Name, l.Kind, outer.Var.Name, outer.Var.Name))
				return
			}
		}
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
		k.threads = append(k.threads, l)
		if blockLevel && spans(l, k.block) {
			k.checkRedundant(l)
			k.stmts(flatten(l.Body), true)
		} else {
			k.checkNoExchange(l)
			k.stmts(flatten(l.Body), false)
		}
		k.threads = k.threads[:len(k.threads)-1]
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
	if l.Kind == ast.Vectorized && k.vectorLoop(l, blockLevel) {
		return
	}
	if p := k.preload[l]; p != nil {
		p()
	}
	min, ext := k.expr(l.Min), k.expr(l.Extent)
	name := k.declare(l.Var)
	if l.Kind == ast.Unrolled || l.Kind == ast.Vectorized || k.unroll[l] {
		k.line("#pragma unroll")
	}
	if min == "0" || min == "0LL" {
		k.line("for (%s %s = 0; %s < %s; ++%s) {", t, name, name, ext, name)
	} else {
		k.line("for (%s %s = %s; %s < %s + %s; ++%s) {", t, name, min, name, min, ext, name)
	}
	k.indent++
	k.allocsAt(l)
	switch {
	case blockLevel && !k.threadDependent(l.Min, l.Extent):
		k.stmts(flatten(l.Body), true)
		// The next iteration after this one, if it depends on this one
		// through memory the threads share.
		if k.pending.conflicts(k.memAccessesOf(l.Body)) && k.acrossIterations(l) {
			k.line("__syncthreads();")
			k.pending = newAccess()
		}
	case blockLevel:
		k.checkNoExchange(l)
		k.stmts(flatten(l.Body), false)
	default:
		k.stmts(flatten(l.Body), false)
	}
	k.indent--
	k.line("}")
}

// threadDependent reports whether one of es uses the variable of a thread
// loop around.
func (k *kernelWriter) threadDependent(es ...ast.Expr) bool {
	for _, l := range k.threads {
		for _, e := range es {
			if ast.Mentions(e, l.Var.Name) {
				return true
			}
		}
	}
	return false
}

// checkRedundant checks the blocks under spanning thread loop l that do
// not depend on its variable (see the top of this file): they must compute
// the same in every thread along l's axis.
func (k *kernelWriter) checkRedundant(l *ast.For) {
	v := l.Var.Name
	var redundant, distributed []*ast.ScheduleBlock
	var walk func(s ast.Stmt, dep bool)
	walk = func(s ast.Stmt, dep bool) {
		switch s := s.(type) {
		case *ast.Seq:
			for _, st := range s.Stmts {
				walk(st, dep)
			}
		case *ast.For:
			walk(s.Body, dep || ast.Mentions(s.Min, v) || ast.Mentions(s.Extent, v))
		case *ast.IfThenElse:
			dep = dep || ast.Mentions(s.Cond, v)
			walk(s.Then, dep)
			walk(s.Else, dep)
		case *ast.ScheduleBlock:
			for _, it := range s.Iters {
				dep = dep || ast.Mentions(it.Binding, v)
			}
			if s.Predicate != nil {
				dep = dep || ast.Mentions(s.Predicate, v)
			}
			if dep {
				distributed = append(distributed, s)
			} else {
				redundant = append(redundant, s)
			}
		}
	}
	walk(l.Body, false)
	writer := map[*ast.Buffer]string{}
	for _, b := range distributed {
		for _, w := range b.Writes {
			writer[w.Buffer] = b.Name
		}
	}
	for _, b := range redundant {
		for _, w := range b.Writes {
			if w.Buffer.Scope == ast.Global {
				k.fail(k.errorAt(l, "block %s does not depend on %s, bound to %s, so every thread along it would write global buffer %s: bind one of its loops to %s, or compute it outside the thread loop", b.Name, v, l.Kind, w.Buffer.Name, l.Kind))
				return
			}
		}
		for _, r := range append(slices.Clone(b.Reads), b.Writes...) {
			if w, ok := writer[r.Buffer]; ok {
				k.fail(k.errorAt(l, "block %s does not depend on %s, bound to %s, so every thread along it runs it once, but it accesses %s, which block %s writes once per thread: compute %s outside the thread loop", b.Name, v, l.Kind, r.Buffer.Name, w, b.Name))
				return
			}
		}
	}
}

// checkNoExchange refuses a statement (a thread loop, or a loop or
// condition that depends on the thread) in which one block writes a shared
// or global buffer that another block reads: threads would pass values
// through memory with no barrier between them.
func (k *kernelWriter) checkNoExchange(l ast.Stmt) {
	writers := map[*ast.Buffer]string{}
	ast.Inspect(l, func(n ast.Node) bool {
		if b, ok := n.(*ast.ScheduleBlock); ok {
			for _, w := range b.Writes {
				if w.Buffer.Scope != ast.Local {
					writers[w.Buffer] = b.Name
				}
			}
		}
		return true
	})
	ast.Inspect(l, func(n ast.Node) bool {
		if b, ok := n.(*ast.ScheduleBlock); ok {
			for _, r := range b.Reads {
				if w, ok := writers[r.Buffer]; ok && w != b.Name && r.Buffer.Scope == ast.Shared {
					k.fail(k.errorAt(l, "block %s reads shared buffer %s that block %s writes here, where threads diverge and no __syncthreads can go: compute %s where every thread of the block runs (outside the thread loops, or in thread loops as long as the block, under loops that do not depend on the thread)", b.Name, r.Buffer.Name, w, w))
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
func (k *kernelWriter) allocsAt(l *ast.For) { k.allocsAtExcept(l, nil) }

// allocsAtExcept is allocsAt for the buffers not in except.
func (k *kernelWriter) allocsAtExcept(l *ast.For, except map[*ast.Buffer]bool) {
	var bufs []*ast.Buffer
	for b, c := range k.plans {
		if c.Loop == l && !except[b] {
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
	t := k.memTypeOf(buf.DType)
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
	if shared && len(bi.shape) > 0 {
		last, _ := ast.ConstIntValue(ast.Simplify(shape[len(shape)-1]))
		if row := k.rowExtent(buf, last); row != last {
			size = size / last * row
			bi.shape[len(bi.shape)-1] = fmt.Sprint(row)
		}
	}
	k.bufs[buf] = bi
	if shared {
		k.shared = append(k.shared, fmt.Sprintf("__shared__ __align__(16) %s %s[%d];", t, bi.name, size))
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
	if name, ok := b.Annotations[intrin.AnnotationKey].(string); ok {
		nest := blockNest(b)
		if nest == nil {
			k.fail(k.errorAt(b, "block %s is marked for intrinsic %q, but it has an init, a predicate or a body other than one loop nest", b.Name, name))
			return
		}
		k.tensorized(nest, name)
		return
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

// acrossIterations reports whether two instances of blocks under loop l
// in different iterations of l may access an element of a shared or
// global buffer, one of them writing it (true when the model is missing).
// The polyhedral model runs the threads one after another, so a pair of
// threads in different iterations of l may be ordered either way in it:
// any distance other than 0 at l's level counts, not only the dependences
// l carries.
func (k *kernelWriter) acrossIterations(l *ast.For) bool {
	if k.model == nil {
		return true
	}
	// A buffer compacted at l or at a loop inside it is the same storage in
	// every iteration of l: the model, which sees it whole, cannot tell.
	body := accessesOf(l.Body)
	for buf, c := range k.plans {
		if buf.Scope == ast.Local || !body.writes[buf] {
			continue
		}
		if c.Loop == l || containsStmt(l.Body, c.Loop) {
			return true
		}
	}
	for _, d := range k.model.Deps() {
		if d.Buffer.Scope == ast.Local {
			continue
		}
		level := slices.Index(d.Source.Loops, l)
		if level < 0 || level >= d.Common {
			continue // not both under l
		}
		if v, ok := d.ConstDistance(level); !ok || !v.IsZero() {
			return true
		}
	}
	return false
}

// containsStmt reports whether s holds statement x.
func containsStmt(s ast.Stmt, x ast.Stmt) bool {
	found := false
	ast.Inspect(s, func(n ast.Node) bool {
		if st, ok := n.(ast.Stmt); ok && st == x {
			found = true
		}
		return !found
	})
	return found
}
