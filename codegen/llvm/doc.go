// Package llvm lowers a scheduled loom function to LLVM IR for CPUs,
// with github.com/llir/llvm (LLVM 14, typed pointers). Its sibling package
// native builds the IR into a shared object and loads it.
//
// # The kernel
//
// Lower turns an *ast.Func into a Module holding one C function, the
// kernel, whose ABI is
//
//	int32_t <name>(int64_t S1, ..., T1 *restrict B1, ...)
//
// the symbolic sizes in order, then a pointer to the first element of each
// buffer parameter (row-major, elements as the C types of Header), and a
// packed entry point taking the same arguments from two arrays,
//
//	int32_t <name>_packed(void *const *buffers, const int64_t *sizes)
//
// which is how Go calls every kernel. Buffers are noalias: they must not
// overlap. The result is a status: 0, or StatusDivByZero after an integer
// division by zero (the interpreter's error; the kernel goes on with 0),
// StatusIndexOutOfRange after a gather's index out of range (see below),
// StatusOutOfMemory, or-ed. Module.Header writes the C declarations, the
// status codes included (StatusCodesC, which graph libraries share).
//
// # From loop nest to IR
//
// Lowering walks the statements once, keeping for each integer variable in
// scope (loops, block iteration variables, sizes) its value. A block
// instance evaluates its bindings, runs its init when its reduce variables
// are at the start of their domains, then its body; its predicate guards
// it. Before lowering, ast.InitEmptyReductions gives the output elements
// of a reduction whose reduce loops may run no iteration their init.
// Index arithmetic (the expressions over loop variables and sizes:
// indices, bindings, bounds) is 64-bit and never wraps; arithmetic on data
// keeps its type and wraps as the interpreter does. An index that loads
// from a buffer (a gather's, whose value only the data knows) is checked
// (gather.go): out of range in an active lane, where the interpreter
// reports an error, the kernel's status gets StatusIndexOutOfRange and the
// access does not happen (a load yields 0); the index is clamped besides,
// so that no address is outside the buffer. Each loop kind has its
// lowering:
//
//   - serial: a counted loop; GPU-bound loops run serially too;
//   - unrolled: the body copied once per iteration (constant extent);
//   - parallel: the body outlined and run by loom's thread pool (see
//     parallel.go): one chunk of iterations per thread, nested parallel
//     loops serial;
//   - vectorized: lanes (see below).
//
// # Vectorized loops
//
// A vectorized loop of constant extent n runs in chunks of W lanes (the
// target's vector bits over the widest element accessed: 8 float32 on
// AVX2, 16 with AVX-512), the last chunk masked when W does not divide n.
// The loop's annotation VectorBitsKey narrows W for that loop: streaming
// loops on AMD Zen 4 move more bytes a second in 256-bit halves than in
// 512-bit vectors, compute-bound ones are faster whole.
// A serial loop's annotation PrefetchKey (N) has each iteration prefetch,
// into the L2, what its contiguous vector loads from the function's
// parameters read N iterations later (see prefetch.go). A loop's
// annotation NoLSRKey compiles the kernel without llc's loop strength
// reduction (see lsr.go).
// In a chunk every expression is emitted once for all lanes as a lanes
// value: uniform (one scalar), a ramp (base + stride*lane, the shape of an
// index moving with the loop) or a vector. A load whose offset is a ramp
// of stride 1 is one vector load; uniform, a scalar load; otherwise a
// gather. Conditions that differ between lanes narrow the active mask
// instead of branching, and memory accesses under a partial mask are
// masked. A body that cannot run as lanes falls back to a scalar loop and
// says why in Module.Remarks.
//
// Math intrinsics on float32 use loom's own branch-free implementations of
// exp, exp2, log, log2, tanh and sigmoid (within a few ulp), so that they
// vectorize; the rest call LLVM intrinsics or the C library. float16 and
// bfloat16 compute in float and round after each operation.
//
// # Memory
//
// Temporaries (Alloc) live on the stack when small and constant, else on
// the heap. A temporary is also compacted: allocated in the deepest loop
// around all its uses, only as large as the region one iteration of that
// loop touches, when no value flows through it between iterations (see
// compact.go). That is what turns a cache_write's full-size tile into a
// few registers.
//
// # Options
//
// Fast-math is off by default; fused multiply-adds are allowed unless
// NoFMA. The target is the host unless Options.Target names another
// triple, CPU and features; the vector width follows from it or from
// Options.VectorBits. Parallel and vectorized loops must carry no
// dependence: Lower proves it with package poly and refuses the function
// otherwise (TrustLoopKinds skips the proof).
package llvm
