// Package cuda lowers scheduled functions to CUDA C, for NVIDIA GPUs.
//
// # The model
//
// Every statement under the root block is a kernel launch: a loop nest
// whose outermost loops are bound to blockIdx.x, .y, .z (schedule.Bind).
// Their extents, over the function's sizes, are the grid; the loops inside
// bound to threadIdx.x, .y, .z have constant extents, whose largest per
// axis is the block's shape (a thread loop shorter than its axis is
// guarded). Kernels run in order; a value passes from one to the next
// through global memory (the parameters and the global temporaries the
// launcher allocates).
//
// Buffers: parameters and global temporaries are kernel arguments;
// shared temporaries become __shared__ arrays of one block, local ones
// per-thread arrays (registers), each compacted to the region one block
// or one thread uses (package compact), indexed from its origin.
//
// Code outside the thread loops runs in every thread of the block alike.
// __syncthreads() goes only there, where one statement's shared or global
// accesses conflict with an earlier one's since the last barrier, and at
// the end of a loop that carries such a dependence; never inside a thread
// loop, where a thread past the guard would not reach it. A thread loop
// that binds a reduce variable of its block is a cross-thread reduction:
// partial results in registers, combined by warp shuffles (and a shared
// array across warps), the update applied once.
//
// Expressions keep the interpreter's meaning: floordiv and floormod,
// NaN-propagating min and max, saturating float-to-integer casts. The
// source compiles with NVRTC; without a GPU, CompilePTX checks it with
// clang (CheckHeader declares what the CUDA headers would).
package cuda
