package llvm

import (
	"math/bits"

	"github.com/llir/llvm/ir/value"
	"github.com/loom-go/loom/ast"
)

// Vectorized loops.
//
// A vectorized loop of constant extent n runs its body once per chunk of W
// iterations, W = the target's vector bits / the widest element the body
// loads or stores (8 for float32 on AVX2), or the largest power of two
// up to n when n is smaller. In a
// chunk the loop variable is the ramp base + lane, and every expression of
// the body is emitted once for all lanes (see lanes). A last chunk of
// n mod W iterations runs with a mask that turns the missing lanes off.
//
// A body the lanes cannot express runs as a scalar loop instead, with a
// remark saying why: a temporary buffer declared inside it (each lane
// would need its own), or an inner loop whose bounds differ between lanes.

// VectorBitsKey is the loop annotation (an integer) that narrows the
// vectors of a vectorized loop to at most that many bits; wider than the
// target's, it changes nothing.
const VectorBitsKey = "vector_bits"

// vectorBits returns the vector width of loop l in bits: the target's,
// or the annotation's when it is a narrower power of two that still holds
// two of the widest elements.
func (e *emitter) vectorBits(l *ast.For) int {
	bits := e.m.Options.VectorBits
	if n, ok := l.Annotations[VectorBitsKey].(int64); ok && n&(n-1) == 0 && n < int64(bits) && n >= 2*int64(widestElement(l.Body)) {
		bits = int(n)
	}
	return bits
}

// maxStraightChunks is the largest number of full chunks emitted one
// after the other instead of as a loop.
const maxStraightChunks = 4

// chunksPerIteration is the number of chunks one iteration of the loop
// over the chunks of a longer vectorized loop runs: independent loads
// and stores in flight together, and less loop overhead per vector (a
// row of 768 float32 runs a fifth faster by 2 than by 1 on AVX-512).
const chunksPerIteration = 2

func (e *emitter) vectorLoop(l *ast.For) bool {
	if e.width > 0 {
		e.remark("vectorized loop %s runs as a scalar loop inside vectorized loop lanes: only one loop of a nest can be vectorized", l.Var.Name)
		return false
	}
	lo, ext := e.index(l.Min), e.index(l.Extent)
	n, ok := constUniform(ext)
	if !ok {
		e.remark("vectorized loop %s runs as a scalar loop: its extent is not a constant", l.Var.Name)
		return false
	}
	if why := vectorBlocker(l); why != "" {
		e.remark("vectorized loop %s runs as a scalar loop: %s", l.Var.Name, why)
		return false
	}
	if n < 2 {
		return false // no lanes to run together: a scalar loop of 0 or 1 iterations
	}
	w := e.vectorBits(l) / widestElement(l.Body)
	if int64(w) > n {
		// A power of two: the rest as narrower chunks and a scalar lane
		// below. (Vectors of 3 lanes, and their masks, made LLVM 14's x86
		// instruction selection loop forever: the long run's upper_inplace
		// seed 132.)
		w = 1 << (bits.Len64(uint64(n)) - 1)
	}
	if w <= 1 {
		return false
	}
	full, rest := n/int64(w), n%int64(w)
	chunk := func(start lanes, width int, mask value.Value) {
		e.width, e.mask = width, mask
		e.withVar(l.Var.Name, lanes{base: start.u, off: start.off, stride: 1}, func() { e.loopBody(l) })
		e.width, e.mask = 0, nil
	}
	at := func(first lanes) lanes { return e.intBinary(nil, ast.OpAdd, lo, first, true) }
	why := e.tryLanes(func() {
		switch {
		case full <= maxStraightChunks:
			for c := int64(0); c < full; c++ {
				chunk(at(uniform(i64(c*int64(w)))), w, nil)
			}
		default:
			// chunksPerIteration chunks a trip, the rest straight after.
			g := int64(chunksPerIteration)
			e.countedLoop(l.Var.Name+".chunk", i64(0), i64(full/g), func(c value.Value) {
				base := e.mul64(c, i64(g*int64(w)))
				for k := int64(0); k < g; k++ {
					chunk(at(uniform(e.add64(base, i64(k*int64(w))))), w, nil)
				}
			})
			for c := full / g * g; c < full; c++ {
				chunk(at(uniform(i64(c*int64(w)))), w, nil)
			}
		}
		// The rest as narrower vectors without a mask (12 = 8 + 4), and
		// a last odd lane as scalar code: LLVM keeps an unmasked vector
		// of a register tile in a register across the loops around it,
		// but not a masked one, nor any access that overlaps a masked
		// one (a pair with its second lane off reaches into the next
		// row of a tile 49 wide).
		off := full * int64(w)
		for rest >= 2 {
			p := int64(1) << (bits.Len64(uint64(rest)) - 1)
			chunk(at(uniform(i64(off))), int(p), nil)
			off, rest = off+p, rest-p
		}
		if rest == 1 {
			e.withVar(l.Var.Name, at(uniform(i64(off))), func() { e.loopBody(l) })
		}
	})
	if why != "" {
		e.remark("vectorized loop %s runs as a scalar loop: %s", l.Var.Name, why)
		return false
	}
	return true
}

// noLanes stops the emission of a vectorized loop whose body turns out
// not to be expressible as lanes.
type noLanes struct{ why string }

// tryLanes runs emit; if it stops with noLanes, everything it emitted is
// taken back and the reason returned.
func (e *emitter) tryLanes(emit func()) (why string) {
	nBlocks, b, nInsts, nEntry := len(e.fn.Blocks), e.b, len(e.b.Insts), len(e.entry.Insts)
	env := make(map[string]lanes, len(e.env))
	for k, v := range e.env {
		env[k] = v
	}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		nl, ok := r.(noLanes)
		if !ok {
			panic(r)
		}
		e.fn.Blocks = e.fn.Blocks[:nBlocks]
		e.b, b.Insts, b.Term = b, b.Insts[:nInsts], nil
		e.entry.Insts = e.entry.Insts[:nEntry]
		e.env, e.width, e.mask = env, 0, nil
		why = nl.why
	}()
	emit()
	return ""
}

// vectorBlocker says why the body of vectorized loop l cannot run as
// lanes, or returns "".
func vectorBlocker(l *ast.For) string {
	why := ""
	ast.Inspect(l.Body, func(n ast.Node) bool {
		if why != "" {
			return false
		}
		switch n := n.(type) {
		case *ast.Alloc:
			why = "it declares buffer " + n.Buffer.Name + ", which each lane would need a copy of"
		}
		return why == ""
	})
	return why
}

// widestElement returns the widest element, in bits, that body loads or
// stores (32 when it accesses nothing).
func widestElement(body ast.Stmt) int {
	bits := 0
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Load:
			bits = max(bits, n.Buffer.DType.Bits())
		case *ast.Store:
			bits = max(bits, n.Buffer.DType.Bits())
		}
		return true
	})
	if bits < 32 {
		bits = 32
	}
	return bits
}
