// Package allocprof turns off Go's sampling of allocations in loom's
// long-running processes and test binaries.
//
// The runtime samples an allocation every 512 KiB by default and keeps one
// record per distinct call stack, and every garbage collection walks all
// the records. poly's solver recurses once per eliminated variable, so its
// allocations come from a great many distinct stacks: in a tuning run or a
// long test the records grow without bound, and walking them took a third
// of the CPU time (runtime.mProf_FlushLocked). Off turns the sampling off
// unless an allocation profile was asked for.
package allocprof

import (
	"flag"
	"runtime"
)

// Off stops sampling allocations, unless the flag test.memprofile (go test
// -memprofile) is set. Call it first thing in main or TestMain, after
// flag.Parse.
func Off() {
	if f := flag.Lookup("test.memprofile"); f != nil && f.Value.String() != "" {
		return
	}
	runtime.MemProfileRate = 0
}
