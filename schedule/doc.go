// Package schedule transforms loop nests with schedule primitives, checks
// that every transformation keeps the function's results, and records
// everything in a replayable trace. It is the part of loom users write
// schedules with, the autotuner samples, and other compilers embed.
//
// # The model
//
// A [Schedule] owns an ast function. Primitives (methods of Schedule) take
// handles to its blocks ([Block]) and loops ([Loop]) and replace the
// function by a transformed one. Handles name what they point to: a block
// by its name, a loop by its variable, which New makes unique. A handle
// becomes invalid when a primitive removes what it names (a split loop),
// and is then refused with an error wrapping [ErrHandle].
//
// Every primitive checks that it keeps what the function computes, using
// the exact dependence analysis of package poly: a transformation is
// refused when it would run a pair of dependent block instances in the
// other order (instances are matched by block and iteration vector, so the
// check is the same for reorder, compute_at or align). Structural rules
// come on top: a reduction cannot be inlined, a vectorized loop needs a
// constant extent, and so on. A refused primitive returns an *[Error]
// naming the primitive, the reason in one sentence, and the offending
// loops and blocks, which [Explain] prints marked in the function; it
// leaves the schedule exactly as it was. No primitive panics on bad input.
//
// A block may hold loops and blocks of its own: Blockize makes one around
// a nest. It is context, as the root block is: its iteration variables
// and predicate bound the blocks inside it, and its regions, which every
// primitive keeps up to date, are what they access. The primitives that
// move blocks or add blocks next to one (compute_at, reverse_compute_at,
// the inlines, decompose_reduction, rfactor) refuse such a block and the
// blocks and loops inside it; those that change loops (split, fuse,
// reorder, tile, the loop kinds) work inside and outside it, on loops of
// one side at a time.
//
// A second, independent check can follow every primitive: with
// [WithValidation] (or [SetValidation] for a whole program) the translation
// validator of package validate compares the result with the function the
// primitive started from, without the primitive's reasoning: the same
// instances of every block, each dependence in its order, every access in
// bounds. A result it rejects is refused with an error wrapping
// [ErrInternal], which is a bug of loom to report, not of the schedule.
// The tests of loom run with it on.
//
// # The primitives
//
//   - Loops: [Schedule.Split] (a predicate guards the tail when the factors
//     do not divide the extent, symbolic extents included), [Schedule.Fuse],
//     [Schedule.Reorder], [Schedule.Tile], [Schedule.Align] (make the
//     nests of a fused group share loops).
//   - Compute location: [Schedule.ComputeAt] and [Schedule.ReverseComputeAt]
//     (the region is computed by poly, so exactly what is needed is
//     produced), [Schedule.ComputeInline], [Schedule.ReverseComputeInline].
//   - Reductions: [Schedule.RFactor] (two-step reduction),
//     [Schedule.DecomposeReduction] (separate the init).
//   - Loop kinds: [Schedule.Vectorize], [Schedule.Unroll],
//     [Schedule.Parallel], [Schedule.Bind] (GPU blocks and threads).
//   - Memory: [Schedule.CacheRead], [Schedule.CacheWrite],
//     [Schedule.SetScope], and the layout of a temporary buffer:
//     [Schedule.TransformLayout] and [Schedule.TransformLayoutPadded]
//     store it through an index map ("n, c, h, w -> n, floordiv(c, 16),
//     h, w, floormod(c, 16)"), padding filled; on a cache it makes the
//     copy a packing stage (a matrix in panels, activations in channel
//     blocks).
//   - Precision: [Schedule.Accumulate] sums a reduction in a wider float
//     type (float16 products in float32), rounding once at the end: the
//     one primitive that changes what a function computes, its rounding
//     only.
//   - Tensor instructions: [Schedule.Blockize] (the nest at a loop becomes
//     a block of its own, over its tile: TVM's blockize),
//     [Schedule.Tensorize] and [Schedule.TensorizeBlock] (a nest, or the
//     block around one, computed by an instruction of package intrin).
//   - Annotations: [Schedule.AnnotateLoop], [Schedule.AnnotateBlock].
//   - Sampling, for the autotuner: [Schedule.SamplePerfectTile],
//     [Schedule.SampleCategorical], [Schedule.SampleComputeLocation].
//
// # Traces
//
// Every primitive and every sampling decision goes into the [Trace], in the
// SSA form of TVM's traces (b0 = get_block("C"); l1, l2 = split(l0, [32,
// -1])). A trace marshals to JSON and back, prints as Go code that rebuilds
// the schedule ([Trace.Go]) and as text ([Trace.String], read back by
// [ParseTraceText]), and [Replay] applies it to a fresh copy of the
// function, optionally with edited sampling decisions: that is how the
// autotuner mutates a schedule. [Trace.Simplified] rewrites a trace for a
// reader (loom replay prints it): each block and loop looked up once and
// named after itself, the decisions written into the primitives, the
// sampling steps gone; it rebuilds the same function. [Trace.Renamed]
// renames the blocks, loops and buffers a trace names (an ast.Renaming):
// a trace made on a function's canonical form (ast.Canonical) replays on
// the function under its own names.
//
// # A worked example
//
// Example_cpu schedules a matrix multiply for a CPU the way a performance
// engineer would: multi-level tiling, a reorder that puts the reduction
// between the tile loops, the output tile accumulated in a local cache and
// written back after its reduction, the init separated, the innermost loop
// vectorized, the inner reduction unrolled and the outermost loop run in
// parallel. Example_gpu binds the tiles to GPU blocks and threads and
// stages the inputs in shared memory, fetched by all the threads of a
// block; Example_rfactor factors a row sum into per-thread partial sums and
// a cross-thread reduction.
//
// Read schedule.go and trace.go first, then one primitive such as split.go.
package schedule
