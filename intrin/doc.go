// Package intrin describes hardware instructions that compute a whole tile
// (a Tensor Core's mma.sync) as loom functions, and matches loop nests
// against them.
//
// # The model
//
// An Intrinsic's description is an ordinary function: a perfect nest of
// loops of constant extents around one block, whose update is what the
// instruction computes on its operands, each a small tile (the mma
// m16n8k16 instructions: C[16, 8] += A[16, 16] · B[16, 8], the products
// exact, the sums in the accumulator's type). A loop nest of a scheduled
// function matches it when it is the same computation on tiles of other
// buffers: the same loop extents in the same order (each loop may start
// anywhere), one block binding the same iteration kinds, no init and no
// predicate, and an update that is the description's operation by
// operation, with every access of a description parameter P[e] an access
// B[e + o] of one buffer B of the same element type, the offsets o the
// same at every access of P and free of the nest's loops (they may depend
// on the loops outside, or on the iteration variables of the block
// schedule.Blockize made around the nest: which tile). A buffer of more dimensions holds the
// tile in its last ones, B[h, e + o], h free of the nest's loops too (a
// head of attention, a batch).
//
// Matching is exact: the nest computes what the instruction computes, so
// schedule.Tensorize only marks the nest (the interpreter still runs its
// loops) and a code generator replaces it by the instruction. The order
// of the sums inside an instruction is the hardware's, as a vectorized or
// rfactored reduction's is the code generator's.
package intrin
