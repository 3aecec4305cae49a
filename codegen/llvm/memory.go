package llvm

import (
	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
	"github.com/loom-go/loom/ast"
)

// Buffers, loads and stores.
//
// In a vectorized loop an access takes the cheapest form its offset
// allows: a scalar access when the offset is uniform, one contiguous
// vector access when it is a ramp of stride 1, a wide load and a shuffle
// when a load's ramp has a small stride, and a gather or scatter
// otherwise. When only some lanes are active (a tail, a predicate that
// differs between lanes) vector accesses are masked, so that inactive
// lanes touch no memory.

// stackLimit is the largest temporary, in bytes, that lives on the stack;
// larger ones and ones of symbolic size are allocated on the heap.
const stackLimit = 64 << 10

// vectorAlign is the alignment of temporaries: a whole vector register.
const vectorAlign = 64

func (e *emitter) buffer(b *ast.Buffer) *buffer {
	buf := e.bufs[b]
	if buf == nil {
		panic(internalf("buffer %s is not in scope", b.Name))
	}
	return buf
}

// offset returns the element offset of an access, as 64-bit lanes, and,
// when an index loads from a buffer (a gather's), the lanes where every
// such index is in range (see checkedIndex and guardIndices; nil when no
// index loads).
func (e *emitter) offset(buf *buffer, indices []ast.Expr) (lanes, *lanes) {
	off := uniform(i64(0))
	// Terms of constant stride are merged where fused loops split one
	// index in two (see rejoin); the others are added one by one. A
	// compacted buffer's origin is subtracted apart: stride*(x - o) is
	// stride*x - stride*o, and o is the same in every lane.
	merges := func(d int) bool {
		_, ok := constInt(buf.strides[d])
		return ok && !ast.ContainsLoad(indices[d])
	}
	var terms []indexTerm
	for d, x := range indices {
		if merges(d) {
			c, _ := constInt(buf.strides[d])
			terms = append(terms, indexTerm{stride: c, index: ast.Substitute(x, e.bindings), written: x})
		}
	}
	if len(terms) > 1 {
		for _, t := range rejoin(terms) {
			off = e.intBinary(nil, ast.OpAdd, off, e.intBinary(nil, ast.OpMul, e.index(t.expr()), uniform(i64(t.stride)), true), true)
		}
		for d := range indices {
			if merges(d) && buf.origin != nil {
				off = e.intBinary(nil, ast.OpSub, off, e.intBinary(nil, ast.OpMul, uniform(buf.origin[d]), uniform(buf.strides[d]), true), true)
			}
		}
	} else {
		terms = nil
	}
	var ok *lanes
	for d, x := range indices {
		if terms != nil && merges(d) {
			continue // in terms
		}
		var idx lanes
		if ast.ContainsLoad(x) { // a gather's index: only the data says whether it is in bounds
			var in lanes
			idx, in = e.checkedIndex(x, buf.ast.Shape[d])
			if ok != nil {
				in = e.andLanes(*ok, in)
			}
			ok = &in
		} else {
			idx = e.index(x)
		}
		if buf.origin != nil {
			idx = e.intBinary(nil, ast.OpSub, idx, uniform(buf.origin[d]), true)
		}
		term := e.intBinary(nil, ast.OpMul, idx, uniform(buf.strides[d]), true)
		off = e.intBinary(nil, ast.OpAdd, off, term, true)
	}
	return off, ok
}

// elemPtr returns the address of element off (uniform, or a ramp's lane
// 0) of buf: the variable part of the offset, then the constant part, so
// that the addresses of an unrolled tile differ by constants only.
func (e *emitter) elemPtr(buf *buffer, off lanes) value.Value {
	variable := off.u
	if off.isRamp() {
		variable = off.base
	}
	p := buf.ptr
	if c, ok := constInt(variable); !ok || c != 0 {
		g := e.b.NewGetElementPtr(memType(buf.ast.DType), p, variable)
		g.InBounds = !e.loose
		p = g
	}
	if off.off != 0 {
		g := e.b.NewGetElementPtr(memType(buf.ast.DType), p, i64(off.off))
		g.InBounds = !e.loose
		p = g
	}
	return p
}

// vectorPtr returns the address of the width elements of buf from lane 0
// of ramp off, as a pointer to a vector.
func (e *emitter) vectorPtr(buf *buffer, off lanes) value.Value {
	vt := types.NewVector(uint64(e.width), memType(buf.ast.DType))
	return e.b.NewBitCast(e.elemPtr(buf, off), types.NewPointer(vt))
}

// lanePtrs returns the per-lane addresses of buf at offsets off.
func (e *emitter) lanePtrs(buf *buffer, off lanes) value.Value {
	g := e.b.NewGetElementPtr(memType(buf.ast.DType), buf.ptr, e.vec(off))
	g.InBounds = true
	return g
}

func (e *emitter) activeMask() value.Value {
	if e.mask != nil {
		return e.mask
	}
	return splat(constant.True, e.width)
}

func align(t ast.DType) ir.Align { return ir.Align(t.Bytes()) }

func (e *emitter) load(x *ast.Load) lanes {
	buf := e.buffer(x.Buffer)
	off, ok := e.offset(buf, x.Indices)
	if ok == nil {
		e.prefetchLoad(buf, x, off)
		return e.loadAt(buf, off)
	}
	var l lanes
	v := e.guardIndices(ok, func() value.Value {
		l = e.loadAt(buf, off)
		if l.isUniform() {
			return e.scalar(l)
		}
		return e.vec(l)
	})
	if lanesOf(v.Type()) == 0 {
		return uniform(v)
	}
	return vector(v)
}

// loadAt reads buf at element offset off in the active lanes.
func (e *emitter) loadAt(buf *buffer, off lanes) lanes {
	t := buf.ast.DType
	mt := memType(t)
	switch {
	case off.isUniform():
		// In a vectorized loop some lane is active here (masked regions
		// are skipped when none is), so the address is one the scalar
		// program reads too.
		ld := e.b.NewLoad(mt, e.elemPtr(buf, off))
		ld.Align = align(t)
		return uniform(e.fromMem(t, ld))
	case off.isRamp() && off.stride == 1:
		vt := types.NewVector(uint64(e.width), mt)
		p := e.vectorPtr(buf, off)
		if e.mask == nil {
			ld := e.b.NewLoad(vt, p)
			ld.Align = align(t)
			return vector(e.fromMem(t, ld))
		}
		f := e.intrinsic("llvm.masked.load."+mangle(vt)+"."+mangle(p.Type()), vt, p.Type(), types.I32, e.mask.Type(), vt)
		return vector(e.fromMem(t, e.b.NewCall(f, p, i32(int64(t.Bytes())), e.mask, constant.NewUndef(vt))))
	case off.isRamp() && off.stride > 1 && off.stride <= maxLoadStride:
		return vector(e.fromMem(t, e.stridedLoad(buf, off)))
	case off.isSteps() && e.mask == nil:
		return vector(e.fromMem(t, e.stepsLoad(buf, off)))
	}
	vt := types.NewVector(uint64(e.width), mt)
	ptrs := e.lanePtrs(buf, off)
	f := e.intrinsic("llvm.masked.gather."+mangle(vt)+"."+mangle(ptrs.Type()), vt, ptrs.Type(), types.I32, types.NewVector(uint64(e.width), types.I1), vt)
	return vector(e.fromMem(t, e.b.NewCall(f, ptrs, i32(int64(t.Bytes())), e.activeMask(), constant.NewUndef(vt))))
}

// maxLoadStride is the largest stride of a ramp that a vectorized load
// reads as one wide load and a shuffle rather than as a gather.
const maxLoadStride = 4

// stridedLoad reads the lanes of a ramp of small stride s (a convolution
// of stride 2 along its vectorized output width, a pooling window): one
// masked load of the s*W elements from lane 0's on, enabled up to the
// last lane's element when every lane is active, else only the active
// lanes' elements (so that nothing outside the buffer is touched), then a
// shuffle that keeps every s-th. x86 does it in a few contiguous
// loads and permutes where a gather of W lanes costs about W loads.
func (e *emitter) stridedLoad(buf *buffer, off lanes) value.Value {
	t := buf.ast.DType
	s := int(off.stride)
	wide := types.NewVector(uint64(s*e.width), memType(t))
	p := e.b.NewBitCast(e.elemPtr(buf, off), types.NewPointer(wide))
	var mask value.Value
	if e.mask == nil {
		bits := make([]constant.Constant, s*e.width)
		for j := range bits { // up to the last lane's element: all in the buffer
			bits[j] = constant.NewBool(j <= s*(e.width-1))
		}
		mask = constant.NewVector(types.NewVector(uint64(s*e.width), types.I1), bits...)
	} else {
		// Element j is read when it is lane j/s's and that lane is active.
		spread := make([]constant.Constant, s*e.width)
		for j := range spread {
			spread[j] = i32(int64(j / s))
		}
		every := make([]constant.Constant, s*e.width)
		for j := range every {
			every[j] = constant.NewBool(j%s == 0)
		}
		mt := types.NewVector(uint64(s*e.width), types.I1)
		lanesOn := e.b.NewShuffleVector(e.mask, constant.NewUndef(e.mask.Type()), constant.NewVector(types.NewVector(uint64(s*e.width), types.I32), spread...))
		mask = e.b.NewAnd(lanesOn, constant.NewVector(mt, every...))
	}
	f := e.intrinsic("llvm.masked.load."+mangle(wide)+"."+mangle(p.Type()), wide, p.Type(), types.I32, mask.Type(), wide)
	all := e.b.NewCall(f, p, i32(int64(t.Bytes())), mask, constant.NewUndef(wide))
	keep := make([]constant.Constant, e.width)
	for i := range keep {
		keep[i] = i32(int64(i * s))
	}
	return e.b.NewShuffleVector(all, constant.NewUndef(wide), constant.NewVector(types.NewVector(uint64(e.width), types.I32), keep...))
}

// stepsLoad reads the lanes of steps off (every lane active): W/G
// elements, each broadcast to its group of G lanes. Where they lie in one
// aligned run of W elements inside the buffer (the channels of the groups
// a grouped convolution's vector spans: base a multiple of W, the
// elements from the constant part on, and the buffer a whole number of
// runs), it loads that run and shuffles it: the loads of an unrolled
// reduction over the group's channels then read the same run, one load
// that LLVM keeps, and each step is a permute. Otherwise it loads the W/G
// elements one by one into their lanes.
func (e *emitter) stepsLoad(buf *buffer, off lanes) value.Value {
	t := buf.ast.DType
	mt := memType(t)
	w := int64(e.width)
	last := off.lane(w - 1)
	first := off.off - ((off.off%w)+w)%w // the run's start, a multiple of w below the first element
	if off.stride > 0 && buf.elems > 0 && buf.elems%w == 0 && isMultiple(off.base, w) && off.off-first+last < w {
		run := e.vectorPtr(buf, lanes{base: off.base, stride: 1, off: first})
		vt := types.NewVector(uint64(w), mt)
		ld := e.b.NewLoad(vt, run)
		ld.Align = align(t)
		pick := make([]int64, w)
		for i := range pick {
			pick[i] = off.off - first + off.lane(int64(i))
		}
		return e.b.NewShuffleVector(ld, constant.NewUndef(vt), constIntVector(types.I32, pick))
	}
	n := w / off.group
	vt := types.NewVector(uint64(n), mt)
	var parts value.Value = constant.NewUndef(vt)
	for q := range n {
		ld := e.b.NewLoad(mt, e.elemPtr(buf, lanes{u: off.base, off: off.off + off.stride*q}))
		ld.Align = align(t)
		parts = e.b.NewInsertElement(parts, ld, i32(q))
	}
	spread := make([]int64, w)
	for i := range spread {
		spread[i] = int64(i) / off.group
	}
	return e.b.NewShuffleVector(parts, constant.NewUndef(vt), constIntVector(types.I32, spread))
}

func (e *emitter) store(s *ast.Store) {
	buf := e.buffer(s.Buffer)
	v := e.value(s.Value)
	off, ok := e.offset(buf, s.Indices)
	e.guardIndices(ok, func() value.Value {
		e.storeAt(buf, off, v)
		return nil
	})
}

// storeAt writes v to buf at element offset off in the active lanes.
func (e *emitter) storeAt(buf *buffer, off, v lanes) {
	t := buf.ast.DType
	switch {
	case off.isUniform() && v.isUniform():
		// Every active lane stores the same value to the same place.
		st := e.b.NewStore(e.toMem(t, e.scalar(v)), e.elemPtr(buf, off))
		st.Align = align(t)
		return
	case off.isUniform() && e.mask == nil:
		// Lanes store in order: the last one's value stays.
		last := e.b.NewExtractElement(e.vec(v), i32(int64(e.width-1)))
		st := e.b.NewStore(e.toMem(t, last), e.elemPtr(buf, off))
		st.Align = align(t)
		return
	case off.isRamp() && off.stride == 1:
		data := e.toMem(t, e.vec(v))
		p := e.vectorPtr(buf, off)
		if e.mask == nil {
			st := e.b.NewStore(data, p)
			st.Align = align(t)
			return
		}
		f := e.intrinsic("llvm.masked.store."+mangle(data.Type())+"."+mangle(p.Type()), types.Void, data.Type(), p.Type(), types.I32, e.mask.Type())
		e.b.NewCall(f, data, p, i32(int64(t.Bytes())), e.mask)
		return
	}
	// A scatter writes its lanes in order, so where lanes collide the
	// last active one wins, as in the scalar loop.
	data := e.toMem(t, e.vec(v))
	ptrs := e.lanePtrs(buf, off)
	f := e.intrinsic("llvm.masked.scatter."+mangle(data.Type())+"."+mangle(ptrs.Type()), types.Void, data.Type(), ptrs.Type(), types.I32, types.NewVector(uint64(e.width), types.I1))
	e.b.NewCall(f, data, ptrs, i32(int64(t.Bytes())), e.activeMask())
}

// alloc brings a temporary buffer into scope. Small ones of constant size
// live on the stack of the function being emitted (each thread of a
// parallel loop has its own); the rest come from the heap, and alloc
// returns the pointer to free at the end of the scope.
func (e *emitter) alloc(a *ast.Alloc) value.Value {
	return e.allocShaped(a.Buffer, a.Buffer.Shape, nil)
}

// allocShaped allocates buffer b with the given shape, indexed from origin
// (nil: from 0), and brings it into scope.
func (e *emitter) allocShaped(b *ast.Buffer, shape, origin []ast.Expr) value.Value {
	mt := memType(b.DType)
	var n value.Value = i64(1)
	for _, d := range shape {
		n = e.mul64(n, e.scalar(e.index(d)))
	}
	var ptr, raw value.Value
	if c, ok := constInt(n); ok && c*int64(b.DType.Bytes()) <= stackLimit {
		slot := e.entry.NewAlloca(types.NewArray(uint64(max(c, 1)), mt))
		slot.Align = vectorAlign
		slot.LocalName = e.localName("alloc." + b.Name)
		ptr = e.b.NewBitCast(slot, types.NewPointer(mt))
	} else {
		bytes := e.mul64(n, i64(int64(b.DType.Bytes())))
		// aligned_alloc wants a multiple of the alignment, and at least one.
		rounded := e.b.NewAnd(e.b.NewAdd(bytes, i64(vectorAlign)), i64(-vectorAlign))
		raw = e.b.NewCall(e.runtimeFunc("aligned_alloc"), i64(vectorAlign), rounded)
		failed, ok := e.newBlock("oom"), e.newBlock("alloc."+b.Name)
		e.b.NewCondBr(e.b.NewICmp(enum.IPredEQ, raw, constant.NewNull(types.NewPointer(types.I8))), failed, ok)
		failed.NewAtomicRMW(enum.AtomicOpOr, e.status, i32(StatusOutOfMemory), enum.AtomicOrderingMonotonic)
		failed.NewBr(e.exit)
		e.b = ok
		ptr = e.b.NewBitCast(raw, types.NewPointer(mt))
	}
	buf := e.declareShaped(b, ptr, shape)
	for _, o := range origin {
		buf.origin = append(buf.origin, e.scalar(e.index(o)))
	}
	return raw
}
