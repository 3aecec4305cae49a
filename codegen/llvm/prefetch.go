package llvm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
	"github.com/loom-go/loom/ast"
)

// PrefetchKey is the loop annotation (an integer N > 0) that has each
// iteration of a serial loop prefetch what its contiguous vector loads
// from the function's parameters will read N iterations later: the same
// load with the loop's variable N further on, one prefetch (into the L2)
// per distinct load of the iteration's code. It changes no
// result: a prefetch neither faults nor writes, also past a buffer's end.
//
// It is for a stream the hardware prefetchers lose: a register tile's
// weights read from memory on the first pass over them and from the L1D
// on the next ones (a matrix product's panel, read once per tile of
// rows), where the first pass stalls on every line while the later ones
// leave the memory idle. Annotating the loop over a reduction chunk with
// its own extent fetches the next chunk while this one is computed
// (ResNet-50's last 1x1 convolutions, 4 MiB of weights each, are bound by
// that stream on one core).
//
// On a loop that does not run serially (parallel, vectorized, unrolled),
// with a distance that is not an integer above 0, or inside a loop that
// prefetches already, it prefetches nothing and says so in
// Module.Remarks.
const PrefetchKey = "prefetch"

// prefetching is the annotated serial loop whose body is being emitted.
type prefetching struct {
	loop  string // the loop's variable
	ahead int64  // iterations ahead
	done  map[string]bool
}

// prefetchAhead returns the prefetch distance of loop l, 0 for none. An
// annotation that is not a positive integer is remarked on and ignored.
func (e *emitter) prefetchAhead(l *ast.For) int64 {
	a, ok := l.Annotations[PrefetchKey]
	if !ok {
		return 0
	}
	n, ok := a.(int64)
	if !ok || n <= 0 {
		e.remark("prefetch on loop %s ignored: its distance %v is not an integer above 0", l.Var.Name, a)
		return 0
	}
	return n
}

// prefetchIgnored remarks on a prefetch annotation of loop l, emitted as
// a loop of kind k other than a serial one.
func (e *emitter) prefetchIgnored(l *ast.For, k ast.ForKind) {
	if _, ok := l.Annotations[PrefetchKey]; ok {
		e.remark("prefetch on loop %s ignored: only a serial loop prefetches, and it runs as a %s loop", l.Var.Name, k)
	}
}

// withPrefetch emits body, one iteration of a loop annotated with
// PrefetchKey, with its loads prefetching ahead; loops nested in it keep
// the outer annotation.
func (e *emitter) withPrefetch(l *ast.For, body func()) {
	n := e.prefetchAhead(l)
	if n > 0 && e.prefetch != nil {
		e.remark("prefetch on loop %s ignored: loop %s around it prefetches", l.Var.Name, e.prefetch.loop)
	}
	if n == 0 || e.prefetch != nil {
		body()
		return
	}
	e.prefetch = &prefetching{loop: l.Var.Name, ahead: n, done: map[string]bool{}}
	body()
	e.prefetch = nil
}

// prefetchLoad prefetches for load x of buf at offset off (all lanes
// active, contiguous) the element it will read e.prefetch.ahead iterations
// later, unless the iteration's code prefetched for the same load already
// (an unrolled loop the load does not depend on copies it).
func (e *emitter) prefetchLoad(buf *buffer, x *ast.Load, off lanes) {
	p := e.prefetch
	if p == nil || e.mask != nil || !off.isRamp() || off.stride != 1 || !slices.Contains(e.f.Params, buf.ast) {
		return
	}
	key, moves := e.loadKey(buf, x, p.loop)
	if !moves || p.done[key] {
		return
	}
	p.done[key] = true
	next := e.intBinary(nil, ast.OpAdd, e.env[p.loop], uniform(i64(p.ahead)), true)
	var ahead lanes
	e.withVar(p.loop, next, func() { ahead, _ = e.offset(buf, x.Indices) })
	loose := e.loose
	e.loose = true // past the buffer's end on the last iteration
	addr := e.elemPtr(buf, ahead)
	e.loose = loose
	i8p := types.NewPointer(types.I8)
	f := e.intrinsic("llvm.prefetch."+mangle(i8p), types.Void, i8p, types.I32, types.I32, types.I32)
	// A read, into the L2 (prefetcht1 on x86): the next chunk of a
	// register tile's operands would evict from the L1D the chunk the
	// later tiles of this pass still read.
	e.b.NewCall(f, e.b.NewBitCast(addr, i8p), i32(0), i32(2), i32(1))
}

// loadKey names load x of buf in the code being emitted: its indices
// through the blocks' bindings and the value each variable in them has
// here (an unrolled copy's constant, a loop's induction variable), so
// that two copies of a load reading the same address have the same key.
// moves reports whether the address depends on variable v.
func (e *emitter) loadKey(buf *buffer, x *ast.Load, v string) (key string, moves bool) {
	var sb strings.Builder
	sb.WriteString(buf.ast.Name)
	seen := map[string]bool{}
	for _, ix := range x.Indices {
		ix = ast.Substitute(ix, e.bindings)
		fmt.Fprintf(&sb, "[%s]", ast.Print(ix))
		ast.Inspect(ix, func(n ast.Node) bool {
			if u, ok := n.(*ast.Var); ok && !seen[u.Name] {
				seen[u.Name] = true
				moves = moves || u.Name == v
				fmt.Fprintf(&sb, " %s=%s", u.Name, laneKey(e.env[u.Name]))
			}
			return true
		})
	}
	return sb.String(), moves
}

// laneKey is a name for lanes l: constants by value, other values by
// identity.
func laneKey(l lanes) string {
	val := func(v any) string {
		if c, ok := v.(*constant.Int); ok {
			return c.X.String()
		}
		return fmt.Sprintf("%p", v)
	}
	return fmt.Sprintf("%s|%s*%d/%d|%s+%d", val(l.u), val(l.base), l.stride, l.group, val(l.v), l.off)
}
