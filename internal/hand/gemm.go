package hand

import "github.com/loom-go/loom/schedule"

// gemmTiles are the tile sizes of the matrix multiply: an MR x NR tile of
// C held in registers (NR a whole number of vectors) while KC steps of k
// go by, over column panels NC wide.
type gemmTiles struct{ MR, NR, KC, NC int }

func tilesFor(c Config) gemmTiles {
	// Two vectors of C columns; rows as many as the registers allow: 6 x 2
	// accumulators of 16 with AVX2 (1024 rows leave a tail of 4, which
	// costs less than the smaller 4 x 16 tile), 8 x 2 of 32 with AVX-512.
	lanes := c.VectorBits / 32
	t := gemmTiles{MR: 6, NR: 2 * lanes, KC: 256, NC: 256}
	if c.VectorBits >= 512 {
		t.MR = 8
	}
	return t
}

// Gemm tiles C = A·B for registers and caches: j by NC (the column
// panel of B that stays in L2) and then by NR, k by KC, i by MR; the MR x
// NR tile's loops innermost, unrolled and vectorized, with k around them so
// that the tile stays in registers (LLVM promotes its loads and stores out
// of the k loop; A, B and C are noalias). The reduction's init runs before
// the k loops. The column panels run in parallel.
func Gemm(s *schedule.Schedule, c Config) error {
	if err := c.check(); err != nil {
		return err
	}
	return gemmSchedule(s, "C", tilesFor(c))
}

func gemmSchedule(s *schedule.Schedule, name string, t gemmTiles) error {
	h := &sched{s: s}
	blk := h.block(name)
	loops := h.loops(blk) // i, j, k
	if h.err != nil {
		return h.err
	}
	js := h.split(loops[1], -1, t.NC/t.NR, t.NR)
	ks := h.split(loops[2], -1, t.KC)
	is := h.split(loops[0], -1, t.MR)
	h.do(func() error { return s.Reorder(js[0], ks[0], is[0], js[1], ks[1], is[1], js[2]) })
	var init schedule.Block
	h.do(func() (err error) { init, err = s.DecomposeReduction(blk, ks[0]); return err })
	h.do(func() error { return s.Unroll(is[1]) })
	h.do(func() error { return s.Vectorize(js[2]) })
	initLoops := h.loops(init)
	if h.err == nil {
		h.do(func() error { return s.Vectorize(initLoops[len(initLoops)-1]) })
	}
	h.do(func() error { return s.Parallel(js[0]) })
	return h.err
}

// GemmBiasReLU schedules the matrix multiply like Gemm, and the bias and
// ReLU, an element-wise pass over C, vectorized and parallel.
func GemmBiasReLU(s *schedule.Schedule, c Config) error {
	if err := c.check(); err != nil {
		return err
	}
	if err := gemmSchedule(s, "C", tilesFor(c)); err != nil {
		return err
	}
	h := &sched{s: s}
	h.vectorizeInner("D", 4*c.VectorBits/32)
	loops := h.loops(h.block("D"))
	if h.err == nil {
		h.do(func() error { return s.Parallel(loops[0]) })
	}
	return h.err
}
