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
// Code outside the thread loops runs in every thread of the block alike,
// and so does code inside thread loops that span the block (no guard)
// under loops and conditions that do not depend on the thread: that is
// where __syncthreads() can go. It goes where one statement's shared or
// global accesses conflict with an earlier one's since the last barrier,
// and at the end of a loop whose iterations touch the same memory (a
// buffer compacted inside the loop is one storage in every iteration);
// never where threads diverge. A thread loop that binds a reduce variable
// of its block is a cross-thread reduction: partial results in registers,
// combined by warp shuffles (and a shared array across warps, with a row
// of slots per threadIdx.y, z, so that rows of threads reduce their rows at
// once), the update applied once. One that spans warps needs a barrier, so
// every thread of the block must get to it.
//
// Shared-memory tiling: a cache of a tile computed at a loop inside the
// thread loops (schedule.ComputeAt relaxes the thread loops for a shared
// buffer, so it holds the whole block's tile) is a cooperative fetch when
// its own loops are bound to the same thread axes again: each thread
// copies its part, a barrier, then every thread reads the tile. A block
// that does not depend on a spanning thread loop's variable must compute
// the same thing in every thread (it writes only shared or local memory,
// nothing the per-thread blocks write), since the interpreter runs it once
// per iteration of that loop.
//
// Vectorized loops: a vectorized loop of 2 or 4 iterations that stores a
// float32 element each becomes float2 or float4 loads and stores of the
// global and shared buffers it walks along (see vector.go); buffers are
// assumed to start 16-byte aligned (cuMemAlloc's are; shared arrays are
// declared so), and an access whose offset is not provably a multiple of
// the lanes is tested where the kernel runs, with the scalar loop as the
// other path. Other vectorized loops are unrolled.
//
// Float16 and bfloat16: elements in memory are their 16-bit encodings
// (unsigned short: no CUDA header needed), values in registers floats; a
// load converts exactly, every operation computes in float and rounds its
// result to the type, a store writes the encoding (the conversions are
// integer arithmetic on the bits, the same on the GPU and in the
// emulation), which gives the interpreter's results bit for bit outside
// reductions. A cross-thread reduction's partial results are floats. A
// vectorized loop of 2, 4 or 8 of them moves words of lanes (unsigned int,
// uint2, uint4: half2 and its wider kin).
//
// Tensor Cores: a loop nest schedule.Tensorize marked for an mma.sync
// intrinsic (package intrin: float16 or bfloat16 factors, B as a tile or
// transposed, float32 accumulators, or float16 ones for float16 factors:
// the function's accumulator type picks the instruction) is calls of
// helpers that the 32 lanes of a warp make together (tensorize.go,
// mma.go): the block is one warp along x, the nest under no threadIdx.x
// loop and under a loop of each other axis the block has, its operands
// global or shared (the factors' fragments then loaded with ldmatrix). A
// warp's accumulators stay in its lanes' registers across the loop of k
// steps, one register tile per mma tile of its warp tile.
//
// Software pipelines (pipeline.go): a serial loop annotated PipelineKey
// fetches its shared tiles stages-1 iterations ahead of their use, with
// cp.async, into as many copies of each tile as it has stages.
//
// Expressions keep the interpreter's meaning: floordiv and floormod,
// NaN-propagating min and max, saturating float-to-integer casts. What
// the interpreter reports as an error and the CPU kernels as a status
// (package codegen/llvm) a GPU kernel cannot report: it has no status
// word. An integer division by zero gives what the GPU gives, and an
// index read from a buffer (a gather's) is clamped into its dimension, so
// that one out of range reads the nearest element, never memory outside
// the buffer; check such indices before a launch where it matters. The
// source compiles with NVRTC; without a GPU, CompilePTX checks it with
// clang (CheckHeader declares what the CUDA headers would), and the tests
// run it on the CPU as well, an OS thread per GPU thread
// (internal/cudaemu), against the interpreter.
//
// # The launcher
//
// Open, Device.Compile, Program.Bind and Call.Launch, Time and Read run a
// module: NVRTC compiles its source, the driver API loads the PTX,
// allocates the buffers, copies the parameters in, launches the kernels
// in order and copies the parameters back. Both libraries are opened at
// run time, under their usual names or those DriverEnv and NVRTCEnv give.
// Without a GPU the tests point those at a stand-in built from
// internal/cudaemu, which answers the same calls on the CPU, so that the
// launcher and loom tune -target cuda run end to end on any machine.
//
// What only a GPU showed (tools/gpucheck on an H200): a kernel's buffers
// are __restrict__ only where the kernel reads or writes them, not both,
// since a value one thread writes and the others read after a barrier
// is otherwise read before it (NVCC's optimizer, never g++'s); and Open
// adds SA_ONSTACK to the signal handlers the driver installs, without
// which a signal that reaches Go through one of them kills the process.
package cuda
