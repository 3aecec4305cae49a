// Package autotune searches schedules for a function and keeps what it
// measured.
//
// A search space is a list of rules (rules.go) applied to the blocks of a
// function, as MetaSchedule and Ansor do: each rule uses the schedule
// package's sampling primitives, so every candidate is a trace whose
// decisions can be replayed, mutated and stored. The search is
// evolutionary, guided by a cost model that learns from the candidates
// measured so far. Candidates are built and run through the Builder and
// Runner interfaces; every result lands in a Database, an append-only
// file of JSON lines that a killed tuner cannot corrupt.
//
// A candidate's trace is all of it: the rules' instructions with their
// decisions, then, after an enter_postproc mark, the steps Finish derives
// from them (the sampled unroll limits and vector widths, as unroll and
// annotate instructions, and four steps of a channel reduction unrolled
// around a register tile, as split, reorder and unroll). So a record's trace, replayed or printed as Go
// (schedule.Trace.Go), rebuilds exactly the function that was measured.
// A mutant replays the trace before the mark with one decision changed
// and is finished anew (Replay does the same for a trace edited by hand,
// and for the records of a loom that did not record the steps).
//
// A rule may take a primitive's refusal for an answer, but not a bug of
// loom: a step that loom's own checks reject (an error wrapping
// schedule.ErrInternal, as the translation validator's rejections with
// schedule.SetValidation) ends the candidate as an InternalError, which
// the search records as a failed trial and counts in Result.Internal.
//
// Without measuring, Default (Space.Decide for a space of one's own)
// applies the same rules with every choice taken by a heuristic from the
// target and the extents: register tiles that fill the accumulators,
// reduction blocks that stay in cache, outer tiles the threads share
// evenly, a matrix-vector product's row as four vectors. It is
// the schedule of a kernel nobody tuned (loom build, loom bench -schedule
// default), and Tune measures it in its first round, so that tuning never
// ends below it. Its tiles follow the target's vector width, registers,
// threads and caches (HostTarget reads them from the machine).
//
// Refine is Default refined by the cost model, still without running
// anything: it ranks the default and a few dozen samples of the rules by
// a Model's score of their Features and keeps the best. The model is one
// trained on a tuning database (ModelFromDatabase, TrainModel: tuning
// records carry their features) or the one loom ships (DefaultModel,
// fitted by tools/trainmodel).
//
// TuneModel tunes the kernels of a model together (DistinctTasks makes
// them tasks, weighted by how often the model runs each; kernels that
// differ only in their names, as a network's layers do, are one task
// whose function is their canonical form, ast.Canonical, and whose
// records the database finds for each of them and builds under its own
// names, the record's trace renamed (Record.Schedule); a
// task's weights, Task.Cold, are flushed from the caches before each
// timed run, as a model's call finds them): every task's
// default schedule is measured first, then each round of Tune's search
// goes to the task whose next round is expected to cut the model's time
// most (Ansor's task scheduler: the weight times a mix of the gain its
// last round paid and its best time over its trials), with one Model for
// every task, within a time budget or a number of trials. Its state and
// model are saved after every round, and a search starts from the
// database's records of its task, so that a run stopped at any moment is
// continued, not restarted, by the next.
//
// DefaultRules are the CPU rules. GPURules bind loops to CUDA blocks and
// threads (multi-level tiling SSSRRSRS with shared-memory tiles fetched
// by the whole block and a local write cache, cross-thread reductions,
// auto-bind), for code the cuda package lowers.
//
// Measuring: on the CPU, LocalBuilder builds shared objects and
// ProcessRunner times them in worker processes; on a GPU, the Builder of
// package autotune/cudatune lowers to CUDA C and a ProcessRunner with
// Target "cuda" compiles (NVRTC), checks and times each candidate in a
// worker, between device events with the data left on the device. The
// tuner reaches a GPU only through the Device interface, which cudatune
// registers, so a program that tunes for its CPU links no GPU back end. The reference outputs come from where the
// candidates run: on the CPU the unscheduled function, on a GPU its
// plainest kernel (one thread per output, see referenceKernel), each
// checked against the interpreter where that is small; a GPU's are
// compared in the 2-norm, without the error twin's bounds. Package
// autotune/cluster is a Builder and a Runner that send the candidates, as
// traces, to workers on other machines through NATS JetStream; their
// records name the job that measured them (Record.Job).
package autotune
