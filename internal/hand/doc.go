// Package hand holds hand-written CPU schedules of the benchmark
// workloads: what a performance engineer would write with loom's schedule
// primitives, and the baseline the autotuner has to beat. Each takes a
// schedule of the unscheduled workload and the machine's parameters
// (Config), which it checks first: a width the schedules cannot be cut to
// is an error wrapping ErrConfig, never a panic.
package hand
