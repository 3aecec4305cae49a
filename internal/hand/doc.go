// Package hand holds hand-written CPU schedules of the benchmark
// workloads: what a performance engineer would write with loom's schedule
// primitives, and the baseline the autotuner has to beat. Each takes a
// schedule of the unscheduled workload and the machine's parameters.
package hand

// Config is what a schedule may depend on.
type Config struct {
	Threads    int
	VectorBits int // SIMD register width of the target
}
