package llvm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
	"github.com/loom-go/loom/ast"
)

// emitter walks a function's statements and appends their LLVM IR to the
// function being built (the kernel, or a parallel loop's outlined body).
type emitter struct {
	m    *Module
	f    *ast.Func
	decl map[string]*ir.Func // declared or defined helpers by name
	// unrollCopies is how many copies the unrolled loops around the
	// statement being emitted make of it (0 outside any).
	unrollCopies int64

	// The function being built.
	fn     *ir.Func
	entry  *ir.Block   // holds the allocas of fn
	b      *ir.Block   // where the next instruction goes
	exit   *ir.Block   // the block that returns from fn
	status value.Value // i32* the status word of the kernel call
	names  map[string]int

	env map[string]lanes // integer variables in scope, as i64
	// bindings are the binding expressions of the iteration variables of
	// the blocks being emitted (an access's offset looks through them).
	bindings map[string]ast.Expr
	bufs     map[*ast.Buffer]*buffer // buffers in scope

	compact map[*ast.Buffer]*compaction // temporaries allocated smaller, in a loop
	atLoop  map[*ast.For][]*ast.Buffer  // the temporaries each loop allocates

	width     int          // lanes of the vectorized loop being emitted; 0 in scalar code
	mask      value.Value  // <width x i1> the active lanes; nil when all are
	loose     bool         // lane 0's address may lie outside its buffer (a guarded load's masked lanes): no inbounds
	parallel  bool         // inside the outlined body of a parallel loop
	prefetch  *prefetching // the serial loop annotated with PrefetchKey being emitted, if any
	nOutlined int
}

// buffer is a buffer in scope: a pointer to its first element and the
// row-major stride of each dimension, in elements. A compacted temporary
// holds only a region of the buffer, starting at origin.
type buffer struct {
	ast     *ast.Buffer
	ptr     value.Value
	strides []value.Value // i64 values, constants where the shape is constant
	origin  []value.Value // i64 first index of each dimension; nil for 0
	elems   int64         // the elements allocated from ptr on where the shape is constant, else 0
}

// bailout carries an *Error out of the emitter's recursion.
type bailout struct{ err *Error }

func internalf(format string, args ...any) bailout {
	return bailout{&Error{Reason: "internal error: " + fmt.Sprintf(format, args...)}}
}

func (e *emitter) unsupported(n ast.Node, format string, args ...any) {
	panic(bailout{&Error{Func: e.f, Node: n, Err: ErrUnsupported, Reason: fmt.Sprintf(format, args...)}})
}

func newEmitter(m *Module, compact map[*ast.Buffer]*compaction) *emitter {
	e := &emitter{m: m, f: m.Func, decl: map[string]*ir.Func{}, compact: compact, atLoop: map[*ast.For][]*ast.Buffer{}}
	for b, c := range compact {
		e.atLoop[c.Loop] = append(e.atLoop[c.Loop], b)
	}
	for _, bs := range e.atLoop {
		slices.SortFunc(bs, func(x, y *ast.Buffer) int { return strings.Compare(x.Name, y.Name) })
	}
	return e
}

// maxLocalName bounds the length of a local name, well under LLVM's limit
// even with the suffixes localName and the blocks' names add.
const maxLocalName = 200

// newBlock appends a basic block named after hint to the current function.
func (e *emitter) newBlock(hint string) *ir.Block {
	return e.fn.NewBlock(e.localName(hint))
}

// localName returns hint, made unique among the local names (values and
// blocks) of the current function. A long hint is cut to maxLocalName
// bytes first: LLVM cuts local names at 1024 bytes when it reads them, so
// two long names (a loop fused and split a dozen times has one of several
// kilobytes) would otherwise read as one and fail as a "multiple
// definition".
func (e *emitter) localName(hint string) string {
	if len(hint) > maxLocalName {
		hint = strings.ToValidUTF8(hint[:maxLocalName], "")
	}
	for {
		n := e.names[hint]
		e.names[hint] = n + 1
		name := hint
		if n > 0 {
			name = fmt.Sprintf("%s.%d", hint, n)
		}
		if n == 0 || e.names[name] == 0 {
			if n > 0 {
				e.names[name] = 1
			}
			return name
		}
	}
}

// remark notes where lowering did less than the schedule asked.
func (e *emitter) remark(format string, args ...any) {
	e.m.Remarks = append(e.m.Remarks, fmt.Sprintf(format, args...))
}

// kernel emits the kernel function.
func (e *emitter) kernel() (err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				// A bug of the lowering; the host process goes on.
				b = bailout{&Error{Reason: fmt.Sprintf("internal error (please report it with the function): %v", r)}}
			}
			if b.err.Func == nil && b.err.Node != nil {
				b.err.Func = e.f
			}
			err = b.err
		}
	}()
	var params []*ir.Param
	for _, s := range e.f.Sizes {
		params = append(params, ir.NewParam(s.Name, types.I64))
	}
	for _, b := range e.f.Params {
		p := ir.NewParam(b.Name, types.NewPointer(memType(b.DType)))
		p.Attrs = append(p.Attrs, enum.ParamAttrNoAlias)
		params = append(params, p)
	}
	fn := e.m.IR.NewFunc(e.m.Symbol, types.I32, params...)
	fn.FuncAttrs = append(fn.FuncAttrs, enum.FuncAttrNoUnwind)
	e.begin(fn)
	status := e.entry.NewAlloca(types.I32)
	status.LocalName = e.localName("status")
	e.status = status
	e.entry.NewStore(i32(0), e.status)
	e.env = map[string]lanes{}
	e.bindings = map[string]ast.Expr{}
	e.bufs = map[*ast.Buffer]*buffer{}
	for i, s := range e.f.Sizes {
		e.env[s.Name] = uniform(fn.Params[i])
	}
	for i, b := range e.f.Params {
		e.declare(b, fn.Params[len(e.f.Sizes)+i])
	}
	e.stmt(e.f.Body)
	e.finish()
	e.exit.NewRet(e.exit.NewLoad(types.I32, e.status))
	return nil
}

// begin starts emitting the body of fn: an entry block for allocas, a body
// block, and an exit block that the caller fills.
func (e *emitter) begin(fn *ir.Func) {
	e.fn = fn
	e.names = map[string]int{}
	for _, p := range fn.Params {
		p.LocalName = e.localName(p.LocalName)
	}
	e.entry = e.newBlock("entry")
	e.b = e.newBlock("body")
	e.exit = e.newBlock("exit")
	// Keep the exit block last: move it there when the function is done.
}

// finish ends the body and moves the exit block to the end.
func (e *emitter) finish() {
	e.entry.NewBr(e.fn.Blocks[1])
	e.b.NewBr(e.exit)
	blocks := e.fn.Blocks
	for i, b := range blocks {
		if b == e.exit {
			copy(blocks[i:], blocks[i+1:])
			blocks[len(blocks)-1] = e.exit
			break
		}
	}
}

// declare brings buffer b into scope at address ptr, computing its strides.
func (e *emitter) declare(b *ast.Buffer, ptr value.Value) *buffer {
	return e.declareShaped(b, ptr, b.Shape)
}

// declareShaped brings b into scope at ptr, laid out with the given shape.
func (e *emitter) declareShaped(b *ast.Buffer, ptr value.Value, shape []ast.Expr) *buffer {
	buf := &buffer{ast: b, ptr: ptr, strides: make([]value.Value, len(shape))}
	var stride value.Value = i64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		buf.strides[d] = stride
		if d > 0 {
			stride = e.mul64(stride, e.scalar(e.index(shape[d])))
		}
	}
	if len(shape) > 0 {
		s, sok := constInt(stride)
		if n, ok := ast.ConstIntValue(shape[0]); ok && sok && n > 0 && s > 0 {
			buf.elems = n * s
		}
	}
	e.bufs[b] = buf
	return buf
}

// size returns the number of elements of b as an i64.
func (e *emitter) size(b *ast.Buffer) value.Value {
	var n value.Value = i64(1)
	for _, d := range b.Shape {
		n = e.mul64(n, e.scalar(e.index(d)))
	}
	return n
}

// Statements.

func (e *emitter) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case nil:
	case *ast.Seq:
		e.seq(s.Stmts)
	case *ast.For:
		e.loop(s)
	case *ast.ScheduleBlock:
		e.block(s)
	case *ast.Store:
		e.store(s)
	case *ast.IfThenElse:
		e.ifThenElse(s)
	case *ast.Alloc:
		e.seq([]ast.Stmt{s})
	default:
		panic(internalf("unexpected statement %T", s))
	}
}

// seq emits a statement list; the buffers its Allocs declare go out of
// scope (and heap ones are freed) at its end.
func (e *emitter) seq(stmts []ast.Stmt) {
	var heap []value.Value
	var scoped []*ast.Buffer
	for _, s := range stmts {
		if a, ok := s.(*ast.Alloc); ok {
			if e.compact[a.Buffer] != nil {
				continue // allocated by the loop it compacts at
			}
			if p := e.alloc(a); p != nil {
				heap = append(heap, p)
			}
			scoped = append(scoped, a.Buffer)
			continue
		}
		e.stmt(s)
	}
	for _, p := range heap {
		e.b.NewCall(e.runtimeFunc("free"), p)
	}
	for _, b := range scoped {
		delete(e.bufs, b)
	}
}

// block emits one schedule block instance: its predicate guards it, its
// iteration variables take the values of their bindings, and its init runs
// when every reduce variable is at the start of its domain.
func (e *emitter) block(b *ast.ScheduleBlock) {
	run := func() {
		vals := make([]lanes, len(b.Iters))
		for i, it := range b.Iters {
			vals[i] = e.index(it.Binding)
		}
		saved := e.bind(b.Iters, vals)
		savedBindings := map[string]ast.Expr{}
		for _, it := range b.Iters {
			savedBindings[it.Var.Name] = e.bindings[it.Var.Name]
			e.bindings[it.Var.Name] = it.Binding
		}
		if b.Init != nil {
			var first lanes
			for i, it := range b.Iters {
				if it.Kind != ast.Reduce {
					continue
				}
				at := e.compare64(enum.IPredEQ, vals[i], e.index(it.Dom.Min))
				if first.u == nil && first.v == nil {
					first = at
				} else {
					first = e.apply(first, at, func(x, y value.Value) value.Value { return e.b.NewAnd(x, y) })
				}
			}
			if first.u == nil && first.v == nil { // no reduce variable: init always runs
				e.stmt(b.Init)
			} else {
				e.when(first, "init", func() { e.stmt(b.Init) }, nil)
			}
		}
		e.stmt(b.Body)
		e.restore(saved)
		for name, x := range savedBindings {
			if x == nil {
				delete(e.bindings, name)
			} else {
				e.bindings[name] = x
			}
		}
	}
	if b.Predicate == nil {
		run()
		return
	}
	e.when(e.value(b.Predicate), "pred."+b.Name, run, nil)
}

// bind gives the iteration variables their values and returns what they
// shadowed.
func (e *emitter) bind(iters []*ast.IterVar, vals []lanes) map[string]*lanes {
	saved := map[string]*lanes{}
	for i, it := range iters {
		if old, ok := e.env[it.Var.Name]; ok {
			saved[it.Var.Name] = &old
		} else {
			saved[it.Var.Name] = nil
		}
		e.env[it.Var.Name] = vals[i]
	}
	return saved
}

func (e *emitter) restore(saved map[string]*lanes) {
	for name, old := range saved {
		if old == nil {
			delete(e.env, name)
		} else {
			e.env[name] = *old
		}
	}
}

func (e *emitter) ifThenElse(s *ast.IfThenElse) {
	var els func()
	if s.Else != nil {
		els = func() { e.stmt(s.Else) }
	}
	e.when(e.value(s.Cond), "if", func() { e.stmt(s.Then) }, els)
}

// when emits then where cond holds and els (if not nil) where it does not.
// A uniform condition branches; a condition that differs between lanes
// narrows the active mask instead, skipping a side when no lane takes it.
func (e *emitter) when(cond lanes, hint string, then, els func()) {
	if cond.isUniform() {
		if c, ok := e.scalar(cond).(*constant.Int); ok {
			switch {
			case c.X.Sign() != 0:
				then()
			case els != nil:
				els()
			}
			return
		}
		thenB, join := e.newBlock(hint+".then"), e.newBlock(hint+".end")
		elseB := join
		if els != nil {
			elseB = e.newBlock(hint + ".else")
		}
		e.b.NewCondBr(e.scalar(cond), thenB, elseB)
		e.b = thenB
		then()
		e.b.NewBr(join)
		if els != nil {
			e.b = elseB
			els()
			e.b.NewBr(join)
		}
		e.b = join
		return
	}
	c := e.vec(cond)
	e.masked(e.andMask(c), hint+".then", then)
	if els != nil {
		e.masked(e.andMask(e.b.NewXor(c, splat(constant.True, e.width))), hint+".else", els)
	}
}

// andMask returns m restricted to the active lanes.
func (e *emitter) andMask(m value.Value) value.Value {
	if e.mask == nil {
		return m
	}
	return e.b.NewAnd(e.mask, m)
}

// masked emits body with only the lanes of m active, skipping it when m
// has no lane set (so that a uniform load in body never runs for no lane).
func (e *emitter) masked(m value.Value, hint string, body func()) {
	any := e.b.NewCall(e.intrinsic("llvm.vector.reduce.or."+mangle(m.Type()), types.I1, m.Type()), m)
	run, join := e.newBlock(hint), e.newBlock(hint+".end")
	e.b.NewCondBr(any, run, join)
	e.b = run
	saved := e.mask
	e.mask = m
	body()
	e.mask = saved
	e.b.NewBr(join)
	e.b = join
}

// Loops.

func (e *emitter) loop(l *ast.For) {
	switch l.Kind {
	case ast.Parallel:
		if e.width == 0 && !e.parallel {
			e.prefetchIgnored(l, l.Kind)
			e.parallelLoop(l)
			return
		}
		if e.parallel {
			e.remark("parallel loop %s runs serially: it is nested in another parallel loop", l.Var.Name)
		}
	case ast.Vectorized:
		if e.vectorLoop(l) {
			e.prefetchIgnored(l, l.Kind)
			return
		}
	case ast.Unrolled:
		if e.unrolledLoop(l) {
			e.prefetchIgnored(l, l.Kind)
			return
		}
	}
	e.serialLoop(l)
}

// serialLoop emits l as a plain counted loop.
func (e *emitter) serialLoop(l *ast.For) {
	lo, ext := e.index(l.Min), e.index(l.Extent)
	if !lo.isUniform() || !ext.isUniform() {
		panic(noLanes{"the bounds of inner loop " + l.Var.Name + " differ between lanes"})
	}
	e.countedLoop(l.Var.Name, e.scalar(lo), e.scalar(ext), func(iv value.Value) {
		e.withVar(l.Var.Name, uniform(iv), func() { e.withPrefetch(l, func() { e.loopBody(l) }) })
	})
}

// countedLoop emits for iv in [lo, lo+n) { body(iv) }.
func (e *emitter) countedLoop(name string, lo, n value.Value, body func(iv value.Value)) {
	if c, ok := constInt(n); ok && c <= 0 {
		return
	}
	if c, ok := constInt(n); ok && c == 1 {
		body(lo)
		return
	}
	hi := e.add64(lo, n)
	pre := e.b
	header, bodyB, done := e.newBlock("for."+name), e.newBlock("for."+name+".body"), e.newBlock("for."+name+".end")
	pre.NewBr(header)
	e.b = header
	iv := header.NewPhi(ir.NewIncoming(lo, pre))
	iv.LocalName = e.localName(name)
	header.NewCondBr(header.NewICmp(enum.IPredSLT, iv, hi), bodyB, done)
	e.b = bodyB
	body(iv)
	next := e.b.NewAdd(iv, i64(1))
	next.OverflowFlags = []enum.OverflowFlag{enum.OverflowFlagNSW}
	iv.Incs = append(iv.Incs, ir.NewIncoming(next, e.b))
	e.b.NewBr(header)
	e.b = done
}

// withVar runs body with variable name bound to v.
func (e *emitter) withVar(name string, v lanes, body func()) {
	old, had := e.env[name]
	e.env[name] = v
	body()
	if had {
		e.env[name] = old
	} else {
		delete(e.env, name)
	}
}

// loopBody emits one iteration of l's body, with the temporaries that
// compact at l allocated around it.
func (e *emitter) loopBody(l *ast.For) {
	var heap []value.Value
	for _, b := range e.atLoop[l] {
		c := e.compact[b]
		if p := e.allocShaped(b, c.Shape, c.Origin); p != nil {
			heap = append(heap, p)
		}
	}
	e.stmt(l.Body)
	for _, p := range heap {
		e.b.NewCall(e.runtimeFunc("free"), p)
	}
	for _, b := range e.atLoop[l] {
		delete(e.bufs, b)
	}
}

// maxUnroll is the largest extent an unrolled loop is copied out for.
const maxUnroll = 512

// maxUnrolledNodes bounds the code an unrolled loop copies out: its
// extent, times the copies the unrolled loops around it make already,
// times the size of its body (AST nodes). Beyond it the loop runs as a
// loop: nested unrolling multiplies, and 840 copies of a loop nest with
// long index expressions took llc over two minutes.
const maxUnrolledNodes = 1 << 15

// unrolledLoop copies the body once per iteration of a loop of constant
// extent, with the loop variable a constant in each copy.
func (e *emitter) unrolledLoop(l *ast.For) bool {
	lo, ext := e.index(l.Min), e.index(l.Extent)
	n, ok := constUniform(ext)
	if !ok || !lo.isUniform() {
		e.remark("unrolled loop %s runs as a loop: its extent is not a constant", l.Var.Name)
		return false
	}
	if n > maxUnroll {
		e.remark("unrolled loop %s runs as a loop: its extent %d is over %d", l.Var.Name, n, maxUnroll)
		return false
	}
	copies := max(e.unrollCopies, 1) * n
	if size := copies * nodeCount(l.Body); size > maxUnrolledNodes {
		e.remark("unrolled loop %s runs as a loop: unrolled (%d copies of its body, with the unrolled loops around it), it would be %d AST nodes of code, over %d", l.Var.Name, copies, size, maxUnrolledNodes)
		return false
	}
	saved := e.unrollCopies
	e.unrollCopies = copies
	for i := int64(0); i < n; i++ {
		e.withVar(l.Var.Name, e.intBinary(nil, ast.OpAdd, lo, uniform(i64(i)), true), func() { e.loopBody(l) })
	}
	e.unrollCopies = saved
	return true
}

// nodeCount is the number of AST nodes of s.
func nodeCount(s ast.Stmt) int64 {
	n := int64(0)
	ast.Inspect(s, func(ast.Node) bool { n++; return true })
	return n
}
