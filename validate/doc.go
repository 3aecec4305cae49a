// Package validate checks a schedule step after the fact: given a function
// and the function a schedule primitive made of it, it decides with the
// polyhedral model of package poly, and without any of the primitive's own
// reasoning, whether the step kept what the function computes. This is
// translation validation: the primitives prove their steps legal before
// they take them, and the validator checks the result independently, so
// that a bug in a primitive's proof shows as a disagreement instead of a
// silently wrong kernel.
//
// [Check] compares the two functions block by block (blocks are matched by
// name) and asks six questions:
//
//   - Instances: a block kept by the step runs the same instances
//     (iteration vectors) as before, each exactly once. Only a pure block
//     (one that reads nothing it writes and reduces nothing) may run an
//     instance more than once: recomputing it, as compute_at does for the
//     overlapping regions of tiles, gives the same values. And only dead
//     instances may go: those of a block that writes no argument of the
//     function, whose values nothing reads (compute_at computes just the
//     region its consumers read).
//   - Order: every dependence of the old function between kept blocks
//     still runs source before sink. Where a pure block is recomputed, a
//     read needs some execution of its source before it, while a write
//     must follow every read and write it followed before.
//   - Bounds: every load and store of the new function stays inside its
//     buffer, at every instance that reaches it.
//   - Outputs: every argument of the function is written at the same
//     cells, whichever blocks write them now: a store inlined into another
//     block must not write cells a predicate kept it from, and none may be
//     left unwritten. The one exception is a copy back from a cache that a
//     copy from the argument filled first (cache_write of a block that
//     writes part of its box): it writes the other cells with their own
//     values.
//   - Layout: where the step gave a temporary buffer another shape (a
//     new layout), every dependence through it between kept blocks relates
//     the same pairs of instances as before, so that each value still goes
//     from the same writer to the same reader and no two cells share a
//     place (layout.go).
//   - Created: a block the step creates is ordered against every other
//     access of what it writes: it never runs at once with another block
//     that touches the same cell (one of them writing), and an init the
//     step moved out of a reduction is read before any other block writes
//     its cells again (created.go).
//
// Blocks the step adds (caches, the init of a decomposed reduction, the
// partial sums of rfactor) or removes (inlined blocks), and blocks whose
// iteration variables it changes, are outside the first two questions
// (the fourth still sees what they write, the sixth how added blocks are
// ordered); the interpreter checks them in the tests. One exception: a removed block whose store lives on in a
// kept block (reverse_compute_inline moves a consumer's store into its
// producer) passes its dependences on the buffer it wrote to that host,
// whose instances that write the same cells must keep the removed block's
// order with the kept blocks around it. A function the model cannot
// hold (a non-affine binding or bound it must approximate) makes Check
// answer ErrUnsupported rather than guess.
package validate
