// Package check makes the data a function runs on and judges its results:
// reproducible random inputs with outputs poisoned, so that an element a
// kernel leaves unwritten shows (Args), and the measures of how far one
// run's outputs lie from another's with the tolerance each element type
// allows (MaxRelErr, NormRelErr, Tolerance).
//
// The tuner checks every candidate with it, and the tests and benchmark
// drivers check kernels against the interpreter with it; it depends on
// package ast alone, so that the tuner does not link the benchmark
// workloads (package workload) to check a kernel.
package check
