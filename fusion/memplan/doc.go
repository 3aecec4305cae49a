// Package memplan places buffers with known live ranges in one arena, so
// that buffers that are never needed at the same time share memory, and
// reports the arena's peak size.
//
// The buffers are the intermediates passed between the kernels of a fused
// operator graph. Time is counted in kernel steps: step i is the i-th kernel
// to run. A [Buffer] is live from the step that first writes it ([Buffer.First])
// through the last step that reads it ([Buffer.Last]), both inclusive, so a
// buffer written by kernel 0 and read by kernel 1 has the range 0..1 and
// still conflicts with a buffer that kernel 1 writes: a kernel's inputs and
// outputs must not alias. Two buffers conflict when their ranges intersect;
// a buffer of size zero occupies no bytes and conflicts with nothing.
//
// [Place] uses the "greedy by size" heuristic of the arena planners of
// TFLite and ONNX Runtime: buffers are taken by decreasing size (then
// earlier First, then input order), and each goes to the lowest offset that
// is a multiple of the alignment and does not overlap any already placed
// buffer it conflicts with. The peak is the largest offset+size, rounded up
// to the alignment. Finding the smallest arena is NP-hard (dynamic storage
// allocation); the greedy plan is usually close to the lower bound, the
// largest total size live at any one step, and never worse than allocating
// every buffer separately ([Plan.Naive]).
//
// Sizes above 1<<60 bytes are rejected, so rounding and summing never
// overflow. [Plan.Check] verifies a plan independently of how it was made;
// read place.go first.
package memplan
