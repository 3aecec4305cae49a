// Package lazy runs tensor code written in plain Go as loom's fused,
// compiled kernels: the LazyTensor design (PyTorch/XLA, Swift for
// TensorFlow) on package module.
//
// A program calls tensor operations one at a time, with Go's own control
// flow around them:
//
//	d, _ := lazy.NewDevice(lazy.Options{Threads: 1})
//	w := d.Weight(weights, 64, 16)     // a parameter: packed once, in the module
//	x := d.From(batch, rows, 64)       // data: an input of the module
//	y := x.MatMul(w).Relu().Softmax(-1) // recorded, not run
//	probs, err := y.Float32s()         // a barrier: compile (once), run, read
//
// Each operation is recorded and returns at once a pending Tensor whose
// dtype and shape are already known (inferred by package fusion's rules;
// a mistake is the tensor's error, naming the operator, the operands'
// shapes and the line of the program that made it, and every tensor
// computed from it carries it to the barrier). Nothing runs until a
// value is needed: Data, Float32s, Item and String, and Sync for several
// tensors at once, are barriers.
//
// At a barrier the pending tensors asked for, and what they depend on,
// become a trace (capture.go): its inputs are the computed tensors it
// reads, its nodes the recorded operations. The trace's structure
// (operators, attributes, dtypes, ranks, how they connect, the identity
// of each Weight, the value of each Scalar) and its sizes key a cache of
// compiled modules (sync.go): the first time, the trace becomes a fusion
// graph and package module compiles it (fusion, default or tuned
// schedules, LLVM); every later barrier with the same structure and
// sizes, the second iteration of a loop, is a lookup. The results are
// written straight into the Go slices the new computed tensors hold,
// and a later trace that reads them takes those slices as its inputs: no
// copy between modules, and none back unless the program reads them
// (Data returns a copy). Pending values the program drops are garbage
// like any other Go value.
//
// When a structure comes back at other sizes (another sequence length),
// the sizes that differ become symbols and a module with symbolic sizes
// is compiled for the bucket of sizes they fall in ((2^(k-1), 2^k]),
// tiled for that bucket's largest sizes (symbolic.go); it serves every
// later set of sizes of the same pattern and bucket, and its kernels take
// the schedules a tuning database holds for buckets of those sizes
// (Options.Database, loom tune -buckets). Marking an input's varying
// axes (Tensor.Dynamic) makes the first compilation symbolic already.
// Stats counts what happened: operations recorded, traces, hits, misses,
// recompilations for a new shape, and the time spent capturing, looking
// up, compiling and in the kernels.
//
// Tensors come from a Device (From, Weight, Scalar, Zeros, Full), or from
// the package's functions of the same names on the Default device (one
// thread). A device is safe for concurrent use. Operators are Tensor
// methods (Add, MatMul, Conv, MaxPool2d, Sum, Softmax, LayerNorm,
// RMSNorm, Reshape, Transpose, Slice, Gather, ...) and the functions
// Concat and Where; Op reaches any operator of package fusion by name.
//
// Go has no reference counts, so a device cannot know which pending
// tensors a program will read again: a barrier computes the tensors
// named, and an intermediate read after the result it fed is computed
// again from its own trace. A loop that never reads its state grows one
// trace without bound; call Sync on the state once per step, as a
// LazyTensor program marks its steps.
package lazy
