// Package ast is loom's loop-nest IR: ScheduleBlock functions, their text
// form, and the reference interpreter that every other package is checked
// against.
//
// # The model
//
// A [Func] takes buffer parameters whose shapes may use symbolic sizes
// (func chain[S1: int32, S2: int32](X: float32[S1, S2, 1024], ...)) and has a
// body of statements: loops ([For]), blocks ([ScheduleBlock]), stores,
// if-then-else, sequences and buffer allocations ([Alloc], with a storage
// scope: global, shared or local). Expressions are typed: constants,
// variables, arithmetic and comparisons ([Binary]), [Not], [Select], [Cast],
// math intrinsics ([Call]) and buffer loads ([Load]).
//
// A ScheduleBlock is the unit that schedules move around. It has its own
// iteration variables, each spatial or reduce with a domain, bound to
// expressions over the enclosing loops (the text form's axis.bind). Its body
// sees only those iteration variables, never the loops, so a transformation
// of the loops (split, fuse, reorder, ...) changes only the bindings. A block
// declares the regions of buffers it reads and writes, may carry a predicate
// (guarding, say, the tail of a split loop) and, for a reduction, an init
// statement that runs in the first reduce iteration, or, for an output
// element whose reduce loops run no iteration (a sum over an axis of size
// 0), once before them ([InitEmptyReductions]).
//
// Variables are identified by name: a name is never defined twice where it
// is in scope, so name and identity coincide. Buffers and blocks have names
// unique in their function. [Verify] checks these rules and the types.
//
// # Building, printing, parsing
//
// Most functions start from a [Builder], which lowers tensor-expression
// definitions (Compute, Sum, Max, Min, Mean) to one loop nest and block per
// tensor. [Print] writes the text form and [Parse] reads it back, so that
// Print(Parse(text)) == text for every printed function; parse errors carry
// a line and column. [Mark] and [Explain] print a function with nodes
// pointed out, which is how loom reports an error about a place in the IR.
// [Equal] and [Hash] compare functions structurally; the hash is stable
// across runs and platforms and keys loom's caches and tuning records.
// Names count in both; [Canonical] renames a function's identifiers in
// order of first appearance, so that functions that differ only in their
// names (the layers of a network) hash alike, and [Rename] gives a
// function scheduled from that form its own names back.
//
// # Rewriting
//
// [Inspect] walks a tree; [MapChildren] rebuilds a node from rewritten
// children and returns the node itself when nothing changed, so a pass
// handles the nodes it cares about and delegates the rest. [Substitute]
// replaces variables. [Analyzer] simplifies index expressions to a canonical
// affine form and resolves floor division and modulus when variable bounds
// allow: floordiv(i*64 + j, 64) becomes i when j is in [0, 64).
//
// # The interpreter
//
// [Interpret] runs a function on Go slices. It is the oracle: slow, simple,
// and strict. It runs GPU-bound loops serially, checks every access against
// the buffer's shape and the block's declared regions, and reports a fault
// as an error naming the buffer, the index and the statement.
//
// Errors wrap one of [ErrSyntax], [ErrInvalid], [ErrOutOfBounds] and
// [ErrRuntime]. Nothing in the package panics on bad input; a panic means a
// bug in loom (or a callback that broke a documented rule, as MapChildren
// says).
//
// Start with print.go for the text form, then build.go and interp.go.
package ast
