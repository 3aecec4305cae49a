package lazy

import (
	"fmt"
	"time"
)

// Stats are a device's counts and times, the measures of the LazyTensor
// design: how often a barrier found its trace compiled, what recording,
// capturing and looking up cost beside the kernels.
type Stats struct {
	// Ops is the number of operations recorded.
	Ops int64
	// Traces is the number of barriers that had something to compute,
	// each a captured trace; Hits of them found a compiled module, Misses
	// compiled one.
	Traces, Hits, Misses int64
	// ShapeRecompiles counts the misses of a structure compiled before at
	// other sizes; Symbolic the modules compiled with symbolic sizes
	// (one serves every later set of sizes its pattern fits).
	ShapeRecompiles, Symbolic int64
	// Capture is the time spent collecting traces, keying them and
	// binding their inputs and outputs; Lookup finding their modules;
	// Compile compiling them; Run in the modules' kernels (module.Run).
	Capture, Lookup, Compile, Run time.Duration
}

// Overhead is the time a barrier adds to its kernels once its trace is
// compiled: capture and lookup.
func (s Stats) Overhead() time.Duration { return s.Capture + s.Lookup }

// String prints the statistics on a few lines.
func (s Stats) String() string {
	return fmt.Sprintf("ops recorded %d; traces %d: %d hits, %d misses (%d for a new shape, %d symbolic modules)\n"+
		"capture %v, lookup %v, compile %v, kernels %v",
		s.Ops, s.Traces, s.Hits, s.Misses, s.ShapeRecompiles, s.Symbolic,
		s.Capture.Round(time.Microsecond), s.Lookup.Round(time.Microsecond), s.Compile.Round(time.Millisecond), s.Run.Round(time.Microsecond))
}
