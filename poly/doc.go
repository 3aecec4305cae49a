// Package poly is loom's polyhedral model: exact integer sets and relations,
// the dependences between the block instances of a function, and the
// legality queries the schedule primitives ask.
//
// # Sets and maps
//
// A [Set] is a finite union of basic sets. A basic set is a conjunction of
// affine equalities and inequalities with integer coefficients over four
// kinds of variables, which are also its column order:
//
//   - parameters: symbolic constants such as the sizes S1, S2 of a
//     function, shared by name between sets;
//   - input dimensions (maps only) and output dimensions (a set's
//     dimensions): the tuple;
//   - locals: existentially quantified variables. A point of the tuple is in
//     the set when some integer values of the locals satisfy every
//     constraint. Locals make projection exact and express the divisions of
//     quasi-affine expressions: i = 4q + r with 0 <= r < 4 stands for
//     q = floor(i / 4).
//
// A [Map] relates an input tuple to an output tuple in the same way. Both
// print and parse in the notation of isl ([ParseSet], [ParseMap]):
//
//	[N] -> { S[i, j] -> A[i + j] : 0 <= i < N and 0 <= j <= i }
//
// Operations ([Intersect], [Union], [Apply], [ApplyRange], [Map.Reverse],
// [Map.Domain], [Map.Range], [Set.ProjectOut], ...) are exact over the
// integers: what cannot be eliminated exactly stays as a local. After each
// operation the constraints are normalized (divided by their gcd, the
// constant of an inequality rounded down), equalities eliminate variables
// where they can, and locals are removed where Fourier-Motzkin is exact.
//
// # Arithmetic
//
// Coefficients are [Int]s: int64 while values fit, math/big beyond, so no
// computation overflows silently and the fast path allocates nothing.
//
// # Emptiness, points and bounds
//
// [Set.IsEmpty] decides integer emptiness exactly with the Omega test
// (omega.go): parameters count as unknown integers, so a set is empty when
// it has no point for any parameter values. Every "not empty" answer comes
// with a point ([Set.Sample]), which the tests check against the
// constraints. [Set.DimBounds] returns the least and greatest value of a
// dimension as a [Bound]: a constant where one exists, otherwise a min/max
// of affine functions of the parameters, marked exact when it is attained.
// [ImageHull] gives the rectangular box an access touches.
//
// # Programs and dependences
//
// [Extract] builds the model of an ast function: for each leaf block the
// set of its instances (loop values and iteration variables), its read and
// write accesses from the block's declared regions, and its place in the
// execution order. Non-affine bounds, conditions or bindings are left out,
// which over-approximates and is flagged. [Program.Dependences] computes
// the memory-based dependences, with the loops that carry them and their
// distances. The queries the schedule primitives need are
// [Program.CarriedBy] (may a loop run in parallel, vectorized or bound to
// GPU threads?), [Program.Permutable] (may a band of loops be reordered or
// tiled?), [Program.Region] (which box of a buffer does a block need in one
// iteration of a loop? compute-at produces exactly that) and
// [Program.Violations] (does a rescheduled function still run every
// dependent pair in order?).
//
// Read omega.go first, then basic.go and set.go.
package poly
