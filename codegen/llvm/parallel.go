package llvm

import (
	"fmt"
	"sort"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
	"github.com/loom-go/loom/ast"
)

// Parallel loops.
//
// A parallel loop's body is outlined into a function
//
//	void <kernel>.par<N>.body(i64 lo, i64 hi, <captures>...)
//
// that runs iterations [lo, hi) of the loop, called by a task
//
//	void <kernel>.par<N>(i8 *ctx, i64 lo, i64 hi)
//
// that unpacks the captures from ctx; the loop itself becomes a call of the
// runtime's
//
//	void loom_parallel_for(void (*task)(void *, int64_t, int64_t), void *ctx, int64_t n, int64_t work)
//
// which splits [0, n) into contiguous chunks, shares them out between the
// threads of its pool as they come for them, and returns when all are done
// (work, one iteration's estimated work, lets it run a small loop inline;
// see parallel_work.go). ctx points to a struct, on the caller's stack,
// holding every value the body may use: the loop's start, the integer
// variables in scope, the buffers' addresses and strides, and the kernel's
// status word. A parallel loop inside another one runs serially (the pool
// is busy); the runtime also runs a nested call serially, so threads never
// multiply.

// capture is one value copied into a parallel loop's context.
type capture struct {
	set func(v value.Value) // rebinds the value in the outlined body
	val value.Value
}

func (e *emitter) parallelLoop(l *ast.For) {
	lo, ext := e.index(l.Min), e.index(l.Extent)
	if c, ok := constUniform(ext); ok && c <= 1 {
		e.serialLoop(l)
		return
	}
	work := bodyWork(l.Body, map[string]bool{l.Var.Name: true})
	if c, ok := constUniform(ext); ok {
		if k, ok := work.constant(); ok && k > 0 && satMul(min(c, workCap), k) < inlineWork {
			e.remark("parallel loop %s runs serially: too little work to share (%d iterations of about %d operations)", l.Var.Name, c, k)
			e.serialLoop(l)
			return
		}
	}
	var start value.Value // the loop's start, in the outlined body
	caps := e.captures(capture{val: e.scalar(lo), set: func(v value.Value) { start = v }})
	fields := make([]types.Type, len(caps))
	for i, c := range caps {
		fields[i] = c.val.Type()
	}
	ctxT := types.NewStruct(fields...)
	i8p := types.NewPointer(types.I8)

	// The outlined body takes the captures as parameters, so that the
	// buffers' pointers keep their noalias (loaded from the context they
	// would lose it, and with it LLVM's register promotion).
	e.nOutlined++
	name := fmt.Sprintf("%s.par%d", e.m.Symbol, e.nOutlined)
	loP, hiP := ir.NewParam("lo", types.I64), ir.NewParam("hi", types.I64)
	params := []*ir.Param{loP, hiP}
	for i, c := range caps {
		p := ir.NewParam(fmt.Sprintf("c%d", i), fields[i])
		if _, ok := c.val.Type().(*types.PointerType); ok {
			p.Attrs = append(p.Attrs, enum.ParamAttrNoAlias)
		}
		params = append(params, p)
	}
	body := e.m.IR.NewFunc(name+".body", types.Void, params...)
	body.Linkage = enum.LinkageInternal
	body.FuncAttrs = append(body.FuncAttrs, enum.FuncAttrNoUnwind)

	// The task the runtime calls: it unpacks the context and calls the
	// body.
	ctxP, tLo, tHi := ir.NewParam("ctx", i8p), ir.NewParam("lo", types.I64), ir.NewParam("hi", types.I64)
	task := e.m.IR.NewFunc(name, types.Void, ctxP, tLo, tHi)
	task.Linkage = enum.LinkageInternal
	task.FuncAttrs = append(task.FuncAttrs, enum.FuncAttrNoUnwind)
	tb := task.NewBlock("entry")
	ctx := tb.NewBitCast(ctxP, types.NewPointer(ctxT))
	args := []value.Value{tLo, tHi}
	for i := range caps {
		g := tb.NewGetElementPtr(ctxT, ctx, i32(0), i32(int64(i)))
		g.InBounds = true
		args = append(args, tb.NewLoad(fields[i], g))
	}
	tb.NewCall(body, args...)
	tb.NewRet(nil)

	// Fill the context in the caller.
	slot := e.entry.NewAlloca(ctxT)
	slot.LocalName = e.localName(fmt.Sprintf("ctx.par%d", e.nOutlined))
	for i, c := range caps {
		e.b.NewStore(c.val, e.fieldPtr(ctxT, slot, i))
	}

	saved := *e
	e.env = map[string]lanes{}
	e.bindings = map[string]ast.Expr{} // the loops of outer blocks' bindings are not captured
	e.bufs = map[*ast.Buffer]*buffer{}
	e.parallel = true
	e.prefetch = nil // its loop's variable is the caller's
	e.begin(body)
	for i, c := range caps {
		c.set(params[2+i])
	}
	e.countedLoop(l.Var.Name, loP, e.sub64(hiP, loP), func(iv value.Value) {
		e.withVar(l.Var.Name, uniform(e.add64(start, iv)), func() { e.loopBody(l) })
	})
	e.finish()
	e.exit.NewRet(nil)
	outlined := e.nOutlined
	*e = saved
	e.nOutlined = outlined

	e.b.NewCall(e.runtimeFunc("loom_parallel_for"), task, e.b.NewBitCast(slot, i8p), e.scalar(ext), e.emitWork(work))
}

func (e *emitter) fieldPtr(t *types.StructType, p value.Value, i int) value.Value {
	g := e.b.NewGetElementPtr(t, p, i32(0), i32(int64(i)))
	g.InBounds = true
	return g
}

// captures lists what a parallel loop's body may use, with how to rebind
// each in the outlined function. It is everything in scope; what the body
// does not use, LLVM deletes.
func (e *emitter) captures(first capture) []capture {
	caps := []capture{first}
	caps = append(caps, capture{val: e.status, set: func(v value.Value) { e.status = v }})
	names := make([]string, 0, len(e.env))
	for name := range e.env {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		name := name
		caps = append(caps, capture{val: e.scalar(e.env[name]), set: func(v value.Value) { e.env[name] = uniform(v) }})
	}
	bufs := make([]*ast.Buffer, 0, len(e.bufs))
	for b := range e.bufs {
		bufs = append(bufs, b)
	}
	sort.Slice(bufs, func(i, j int) bool { return bufs[i].Name < bufs[j].Name })
	for _, b := range bufs {
		old := e.bufs[b]
		nb := &buffer{ast: b, strides: make([]value.Value, len(old.strides)), elems: old.elems}
		for d, o := range old.origin {
			if _, ok := constInt(o); ok {
				nb.origin = append(nb.origin, o)
				continue
			}
			d := d
			nb.origin = append(nb.origin, nil)
			caps = append(caps, capture{val: o, set: func(v value.Value) { nb.origin[d] = v }})
		}
		caps = append(caps, capture{val: old.ptr, set: func(v value.Value) { nb.ptr = v; e.bufs[b] = nb }})
		for d, s := range old.strides {
			if _, ok := constInt(s); ok {
				nb.strides[d] = s
				continue
			}
			d := d
			caps = append(caps, capture{val: s, set: func(v value.Value) { nb.strides[d] = v }})
		}
	}
	return caps
}
