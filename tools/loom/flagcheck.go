package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// The ranges of the numeric flags. Every numeric flag is checked against
// its range once the flags are parsed, so that a value out of it is one
// line naming the flag, never a huge allocation, an endless run or a
// silent clamp.
const (
	// maxThreads: loom's runtime runs parallel loops on at most 256
	// threads (MAX_WORKERS + 1 in codegen/llvm/native/runtime/loomrt.c);
	// schedules made for more would be made for threads that never run.
	maxThreads = 256
	// maxTrials: a million candidates is weeks of tuning.
	maxTrials = 1_000_000
	// maxConfirm: leaders measured again, each in every round.
	maxConfirm = 1000
	// maxRefine: each schedule the cost model ranks is sampled and
	// checked (about a second each on a busy two-core machine).
	maxRefine = 256
	// maxIterations: the most loop iterations loom run's
	// -max-iterations allows (the interpreter runs about ten million a
	// second).
	maxIterations = int64(1) << 40
)

// inRange checks that a numeric flag's value is within [lo, hi], and says
// so on stderr when it is not.
func inRange[T int | int64 | uint64 | time.Duration](fs *flag.FlagSet, stderr io.Writer, name string, v, lo, hi T) bool {
	if lo <= v && v <= hi {
		return true
	}
	fmt.Fprintf(stderr, "loom %s: -%s %v: want %v to %v\n", fs.Name(), name, v, lo, hi)
	return false
}

// threadsOK checks a -threads flag: 0 (one per core) to maxThreads.
func threadsOK(fs *flag.FlagSet, stderr io.Writer, threads int) bool {
	return inRange(fs, stderr, "threads", threads, 0, maxThreads)
}

// dbOK checks a -db flag: a path that is not there yet (a database to
// create, or none), or a regular file; not a device (/dev/zero would be
// read forever), a pipe or a directory.
func dbOK(fs *flag.FlagSet, stderr io.Writer, path string) bool {
	if path == "" {
		return true
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return true
	}
	what := "not a regular file"
	if fi.IsDir() {
		what = "a directory"
	}
	fmt.Fprintf(stderr, "loom %s: -db %s: %s; want a tuning database (a file of JSON lines)\n", fs.Name(), path, what)
	return false
}

// vectorBitsOK checks -vector-bits: 0 (the host's) or a width the code
// generator makes vectors of.
func vectorBitsOK(fs *flag.FlagSet, stderr io.Writer, bits int) bool {
	switch bits {
	case 0, 128, 256, 512:
		return true
	}
	fmt.Fprintf(stderr, "loom %s: -vector-bits %d: want 128, 256 or 512 (or 0: the host's)\n", fs.Name(), bits)
	return false
}

// given reports which flags of fs were given on the command line.
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// onlyWith checks that none of the flags names was given unless cond
// holds, and says on stderr which was given when it does not: a flag the
// command would ignore is an error, never a silent no-op. when says what
// the flags go with.
func onlyWith(fs *flag.FlagSet, stderr io.Writer, cond bool, when string, names ...string) bool {
	if cond {
		return true
	}
	set := given(fs)
	for _, n := range names {
		if set[n] {
			fmt.Fprintf(stderr, "loom %s: -%s applies only %s; drop it\n", fs.Name(), n, when)
			return false
		}
	}
	return true
}

// notBoth checks that flags a and b were not both given (they choose the
// same thing two ways), and says so on stderr when they were.
func notBoth(fs *flag.FlagSet, stderr io.Writer, a, b string) bool {
	if set := given(fs); set[a] && set[b] {
		fmt.Fprintf(stderr, "loom %s: -%s and -%s choose the same thing; give one\n", fs.Name(), a, b)
		return false
	}
	return true
}
