// Package schedgen generates schedules for the property tests of the
// schedule primitives and of the code generators, and runs them: whatever
// sequence of primitives a schedule accepts must keep the function's
// results.
//
// A [Gen] proposes one [Op] at a time (a primitive with its arguments,
// named by block, loop and buffer names, so that a sequence replays on a
// fresh schedule). In its adversarial mode it aims at interactions: it
// fuses, splits or reorders a consumer's loops and then moves a producer
// under the new loops, caches and then moves the cache, factors a split
// reduction, and changes the kinds of the loops a primitive has just made;
// the uniform mode picks every primitive and argument at random.
//
// [Run] applies the ops of a generator to a schedule of a [Case] with the
// translation validator on and checks every step: an accepted step keeps
// the interpreter's results, a refused one returns a typed *schedule.Error
// and changes nothing, none panics, and the trace replays. [Shrink] reduces
// a failing sequence to a minimal one, [Diagnose] replays a validator
// disagreement with the validator off to tell whether the primitive or the
// validator is wrong, [Failure.Report] prints the sequence as ops, as Go
// and as a trace, and [ParseOps] reads the ops back. The corpus is the files of testdata/schedgen ([Load])
// and small versions of the standard workloads ([Workloads]).
//
// Read run.go first, then gen.go.
package schedgen
