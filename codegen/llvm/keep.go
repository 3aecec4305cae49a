package llvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// Temporaries on the heap are kept between calls. Each allocation site
// has a slot, a global of the module: the block it freed last, if any,
// which its next allocation takes back when it is large enough (the
// block's first bytes hold its size). A call that finds the slot empty
// (the first, or one that runs beside another: the slot is taken and
// given back by atomic exchanges) allocates a block of its own. Without
// the slots, a kernel whose temporaries add up to more than the C
// library's trim threshold gave their pages back to the system at every
// call and faulted them in again at the next: YOLO's SPPF as one kernel,
// 3.3 MB of temporaries, spent four fifths of its time in page faults.
// The module's destructor frees what the slots hold.

// keepHeader is the room before a kept block's data: its size, padded to
// the alignment of temporaries.
const keepHeader = vectorAlign

// heapBlock is a temporary on the heap: the block (header included) and
// its slot.
type heapBlock struct {
	block value.Value // i8*
	slot  *ir.Global
}

// keepSlot declares a new slot: an i64, the block's address (LLVM 14
// exchanges integers atomically, not pointers).
func (e *emitter) keepSlot() *ir.Global {
	g := e.m.IR.NewGlobalDef(fmt.Sprintf("loom.keep.%d", len(e.keep)), i64(0))
	g.Linkage = enum.LinkageInternal
	e.keep = append(e.keep, g)
	return g
}

// heapAlloc returns a block of at least bytes bytes of data after its
// header, from slot when the block there is large enough; the block is
// null when the allocation failed (the caller reports it).
func (e *emitter) heapAlloc(slot *ir.Global, bytes value.Value) value.Value {
	i8p := types.NewPointer(types.I8)
	null := constant.NewNull(i8p)
	total := e.b.NewAdd(bytes, i64(keepHeader))
	cached := e.b.NewIntToPtr(e.b.NewAtomicRMW(enum.AtomicOpXChg, slot, i64(0), enum.AtomicOrderingAcquire), i8p)
	check, small, fresh, sized, done := e.newBlock("keep.check"), e.newBlock("keep.small"), e.newBlock("keep.fresh"), e.newBlock("keep.sized"), e.newBlock("keep.done")
	e.b.NewCondBr(e.b.NewICmp(enum.IPredEQ, cached, null), fresh, check)

	size := check.NewLoad(types.I64, check.NewBitCast(cached, types.NewPointer(types.I64)))
	check.NewCondBr(check.NewICmp(enum.IPredUGE, size, total), done, small)

	small.NewCall(e.runtimeFunc("free"), cached)
	small.NewBr(fresh)

	raw := fresh.NewCall(e.runtimeFunc("aligned_alloc"), i64(vectorAlign), total)
	fresh.NewCondBr(fresh.NewICmp(enum.IPredEQ, raw, null), done, sized)

	sized.NewStore(total, sized.NewBitCast(raw, types.NewPointer(types.I64)))
	sized.NewBr(done)

	e.b = done
	return done.NewPhi(ir.NewIncoming(cached, check), ir.NewIncoming(null, fresh), ir.NewIncoming(raw, sized))
}

// heapData is where a block's data starts.
func (e *emitter) heapData(block value.Value) value.Value {
	return e.b.NewGetElementPtr(types.I8, block, i64(keepHeader))
}

// heapFree gives h back to its slot, or frees it when the slot holds
// another.
func (e *emitter) heapFree(h heapBlock) {
	res := e.b.NewCmpXchg(h.slot, i64(0), e.b.NewPtrToInt(h.block, types.I64), enum.AtomicOrderingAcquireRelease, enum.AtomicOrderingMonotonic)
	kept := e.b.NewExtractValue(res, 1)
	free, after := e.newBlock("keep.free"), e.newBlock("keep.after")
	e.b.NewCondBr(kept, after, free)
	free.NewCall(e.runtimeFunc("free"), h.block)
	free.NewBr(after)
	e.b = after
}

// keepDestructor defines the function that frees what the slots hold and
// lists it in llvm.global_dtors, run when the library is unloaded.
func (e *emitter) keepDestructor() {
	if len(e.keep) == 0 {
		return
	}
	i8p := types.NewPointer(types.I8)
	f := e.m.IR.NewFunc("loom.keep.release", types.Void)
	f.Linkage = enum.LinkageInternal
	b := f.NewBlock("entry")
	for _, slot := range e.keep {
		p := b.NewAtomicRMW(enum.AtomicOpXChg, slot, i64(0), enum.AtomicOrderingAcquire)
		b.NewCall(e.runtimeFunc("free"), b.NewIntToPtr(p, i8p)) // free(NULL) does nothing
	}
	b.NewRet(nil)
	entry := types.NewStruct(types.I32, types.NewPointer(f.Sig), i8p)
	list := constant.NewArray(types.NewArray(1, entry), constant.NewStruct(entry, constant.NewInt(types.I32, 65535), f, constant.NewNull(i8p)))
	g := e.m.IR.NewGlobalDef("llvm.global_dtors", list)
	g.Linkage = enum.LinkageAppending
}
