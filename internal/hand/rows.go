package hand

import (
	"github.com/loom-go/loom/schedule"
)

// Hand schedules of the row-wise and element-wise workloads. They share a
// shape: everything a row needs is computed under the row loop of the last
// block (so that the row stays in cache between the passes over it, and
// the temporaries compact to a row), reductions over a row are split by
// a few vectors and rfactored so that their partial results are vector
// lanes, the row loop runs in parallel.

// sched wraps a schedule so that a sequence of primitives reads as a list:
// the first error stops the rest.
type sched struct {
	s   *schedule.Schedule
	err error
}

func (h *sched) block(name string) schedule.Block {
	if h.err != nil {
		return schedule.Block{}
	}
	b, err := h.s.GetBlock(name)
	h.err = err
	return b
}

func (h *sched) loops(b schedule.Block) []schedule.Loop {
	if h.err != nil {
		return nil
	}
	ls, err := h.s.GetLoops(b)
	h.err = err
	return ls
}

func (h *sched) split(l schedule.Loop, factors ...int) []schedule.Loop {
	if h.err != nil {
		return make([]schedule.Loop, len(factors))
	}
	ls, err := h.s.Split(l, factors...)
	h.err = err
	if err != nil {
		return make([]schedule.Loop, len(factors))
	}
	return ls
}

func (h *sched) do(f func() error) {
	if h.err == nil {
		h.err = f()
	}
}

// rowReduction vectorizes the reduction of block name over its last loop:
// split by chunk, rfactor the inner part (the partial results become
// chunk lanes) and vectorize it. It returns the rfactor block.
func (h *sched) rowReduction(name string, chunk int) schedule.Block {
	b := h.block(name)
	ls := h.loops(b)
	if h.err != nil {
		return schedule.Block{}
	}
	// The chunk must divide the row (rfactor refuses a tail): the largest
	// divisor up to chunk, in whole vectors; none, and the reduction stays
	// serial.
	if n, ok := h.s.Extent(ls[len(ls)-1]); ok {
		for chunk > 1 && n%int64(chunk) != 0 {
			chunk /= 2
		}
	}
	if chunk < 2 {
		return schedule.Block{}
	}
	parts := h.split(ls[len(ls)-1], -1, chunk)
	var rf, init schedule.Block
	h.do(func() (err error) { rf, err = h.s.RFactor(parts[1]); return err })
	rfLoops := h.loops(rf)
	if h.err != nil {
		return rf
	}
	// The partial results' init before their reduction loop, so that LLVM
	// keeps them in registers through it.
	h.do(func() (err error) { init, err = h.s.DecomposeReduction(rf, rfLoops[len(rfLoops)-2]); return err })
	h.do(func() error { return h.s.Vectorize(rfLoops[len(rfLoops)-1]) })
	initLoops := h.loops(init)
	if h.err == nil {
		h.do(func() error { return h.s.Vectorize(initLoops[len(initLoops)-1]) })
	}
	// The sum of the partial results, with its init before it too.
	wbLoops := h.loops(b)
	if h.err == nil {
		h.do(func() (err error) { _, err = h.s.DecomposeReduction(b, wbLoops[len(wbLoops)-1]); return err })
	}
	return rf
}

// vectorizeInner splits the last loop of block name by chunk and
// vectorizes the inner part.
func (h *sched) vectorizeInner(name string, chunk int) {
	ls := h.loops(h.block(name))
	if h.err != nil {
		return
	}
	parts := h.split(ls[len(ls)-1], -1, chunk)
	h.do(func() error { return h.s.Vectorize(parts[1]) })
}

// under computes each named block (producers, in consumer-to-producer
// order) at loop.
func (h *sched) under(loop schedule.Loop, names ...string) {
	for _, n := range names {
		b := h.block(n)
		h.do(func() error { return h.s.ComputeAt(b, loop) })
	}
}

// rowChunk is the number of partial results of a row reduction: two
// vectors (two independent chains of adds, and a short sum at the end).
func rowChunk(c Config) int {
	return 2 * c.VectorBits / 32
}

// RMSNorm: per row, the sum of squares as 4 vectors of partial sums,
// the scale, and the scaled row, vectorized; rows in parallel.
func RMSNorm(s *schedule.Schedule, c Config) error {
	if err := c.check(); err != nil {
		return err
	}
	h := &sched{s: s}
	chunk := rowChunk(c)
	row := h.loops(h.block("Y"))
	if h.err != nil {
		return h.err
	}
	scale := "R"
	if _, err := s.GetBlock("RS"); err == nil {
		scale = "RS" // the rows R a symbolic size (workload.NewRMSNorm)
	}
	h.under(row[0], scale, "MS", "MS_sum")
	h.rowReduction("MS_sum", chunk)
	h.vectorizeInner("Y", chunk)
	h.do(func() error { return s.Parallel(row[0]) })
	return h.err
}

// Softmax: per row, the max and the sum as vectors of partial
// results, the exponentials in a row buffer, and the normalized row;
// rows in parallel.
func Softmax(s *schedule.Schedule, c Config) error {
	if err := c.check(); err != nil {
		return err
	}
	h := &sched{s: s}
	chunk := rowChunk(c)
	row := h.loops(h.block("Y"))
	if h.err != nil {
		return h.err
	}
	h.under(row[0], "S", "E", "M")
	h.rowReduction("M", chunk)
	h.rowReduction("S", chunk)
	h.vectorizeInner("E", chunk)
	h.vectorizeInner("Y", chunk)
	h.do(func() error { return s.Parallel(row[0]) })
	return h.err
}

// Chain: 2X+1 inlined into its sum, the sum's partial results in
// vector lanes; the broadcast and the +1 inlined into the output, stored a
// vector at a time; (S1, S2) rows in parallel.
func Chain(s *schedule.Schedule, c Config) error {
	if err := c.check(); err != nil {
		return err
	}
	h := &sched{s: s}
	chunk := rowChunk(c)
	for _, n := range []string{"A", "B", "D", "E"} {
		b := h.block(n)
		h.do(func() error { return s.ComputeInline(b) })
	}
	out := h.loops(h.block("F"))
	if h.err != nil {
		return h.err
	}
	h.under(out[1], "C")
	h.rowReduction("C", chunk)
	h.vectorizeInner("F", chunk)
	h.do(func() error { return s.Parallel(out[0]) })
	return h.err
}

// Conv2D: the padded input computed whole first (vectorized by rows);
// the convolution with a tile of 4 output channels x a row of 56 pixels
// held in registers while the input channels and the 3x3 window go by
// (LLVM keeps the tile in registers: its addresses do not change in
// those loops); output channel tiles in parallel.
func Conv2D(s *schedule.Schedule, c Config) error {
	if err := c.check(); err != nil {
		return err
	}
	h := &sched{s: s}
	h.vectorizeInner("P", c.VectorBits/32)
	y := h.block("Y")
	ls := h.loops(y) // n, k, h, w, rc, rh, rw
	if h.err != nil {
		return h.err
	}
	ks := h.split(ls[1], -1, 4)
	h.do(func() error { return s.Reorder(ks[0], ls[2], ls[4], ls[5], ls[6], ks[1], ls[3]) })
	var init schedule.Block
	h.do(func() (err error) { init, err = s.DecomposeReduction(y, ls[4]); return err })
	h.do(func() error { return s.Unroll(ks[1]) })
	h.do(func() error { return s.Vectorize(ls[3]) })
	initLoops := h.loops(init)
	h.do(func() error { return s.Vectorize(initLoops[len(initLoops)-1]) })
	h.do(func() error { return s.Parallel(ks[0]) })
	return h.err
}
