// Package fusion turns a graph of tensor operators into fused kernels:
// ScheduleBlock functions (package ast) ready to be scheduled and compiled.
//
// A Graph comes from Go code or from JSON (ReadJSON; the format is
// documented at jsonGraph in json.go). Its shapes may be symbolic: a
// dimension is a polynomial over named sizes (S, S1*S2), and Infer solves
// the equalities the operators imply (adding [S0, 768] to [S1, 768] makes
// S1 the same size as S0).
//
// Compile runs the pipeline in pipeline.go, a table of passes each in its
// own file: decompose composite operators (softmax, layernorm, rms_norm,
// gelu) into primitive ones, fold constants, simplify algebra, eliminate
// common subexpressions and dead code, group operators into kernels by
// CINN's fusion rules (fuse.go), and lower each group to one function
// whose loop nests are aligned (lower.go). The result is a Plan: the
// kernels in execution order, the buffers each reads and writes, and an
// arena layout for the intermediate buffers (package fusion/memplan).
//
// The interpreter is the reference: Plan.Interpret runs the kernels one
// after the other, and compiling with Options.NoFuse (one kernel per
// operator) must give the same outputs as the fused plan.
package fusion
