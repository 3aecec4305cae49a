// Package native builds LLVM modules into shared objects and runs them in
// the Go process.
//
// # Building
//
// A build runs the module's IR through opt -O3 and llc -O3 of one LLVM
// release from 14 to 19 (those LOOM_LLVM names, else opt-14 and llc-14,
// opt and llc, or the newest of opt-19 to opt-15 on PATH; a release
// outside 14 to 19 is refused, see FindToolchain) into an object file,
// and links it with ld -shared against loom's runtime. LLVM's own loop
// unrolling is off unless the module's options ask for it: the schedule
// decides what to unroll. Starting opt and llc costs more than most
// kernels take to compile (each loads and relocates libLLVM), so the
// package keeps LLVM build workers: processes (runtime/llvmworker.c, built
// with the C compiler into loom's cache directory) that load the
// libLLVM opt links against once and run the same pipeline through LLVM's
// C API, build after build, writing the same object file byte for byte.
// A crash or fatal error inside LLVM fails that one build with LLVM's
// message and ends only its worker. Where no worker can start the build
// runs opt and llc, as it does when LOOM_LLVM_BUILD=process. Built with
// -tags loomcapi, the package compiles in its own process through the C
// API instead (cgo and the llvm-14-dev headers). A program missing gets an
// error naming the package to install; an error in the IR quotes the line.
//
// # The cache
//
// Cache keeps loaded kernels in memory, keyed by the function's structural
// hash and the lowering options, and shared objects on disk (in
// $LOOM_CACHE_DIR, or loom/ under the user's cache directory), keyed by
// the IR, the target and the toolchain: a kernel is built once per machine.
// Files are written aside and renamed into place, so processes can share
// the directory.
//
// # The runtime
//
// Kernels run their parallel loops on loom's runtime (runtime/loomrt.c),
// a pool of worker threads built once per machine into the cache and
// loaded once per process. A loop is split into more chunks than threads,
// which each thread (the caller too) claims as it comes for them, so a
// thread that loses its core holds back one chunk, not a share; waiting
// threads spin a few microseconds, then sleep; a loop with too little work
// (the kernel passes an estimate) runs inline. Being one pool per process,
// whichever Go thread calls a kernel, it never multiplies threads: a
// parallel loop inside a parallel loop runs serially, and so does a loop
// that another goroutine's kernel holds the pool against.
// BenchmarkParallelRuntime compares its fork-join with libgomp's;
// TestRuntimeStress checks it. SetThreads sets how many threads it uses.
// A C or C++ program that links kernels ahead of time (see WriteObject,
// WriteObjectAs for a kernel already lowered, under another name, and
// llvm.Module.Header) compiles RuntimeSource with them.
//
// # Calling
//
// Kernel.Run takes the arguments Interpret takes (a value per symbolic
// size, a Go slice per buffer) and checks them before the kernel runs:
// every size given and in range, every slice of the right element type and
// exact length, no two buffers overlapping. Kernel.Bind checks once for
// repeated calls. Calls go through purego, so the package works with
// CGO_ENABLED=0.
package native
