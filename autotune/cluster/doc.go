// Package cluster tunes across machines: the tuner publishes build and
// measurement jobs to work queues on a NATS JetStream server, `loom
// worker` processes on any number of machines take them, and results flow
// back into the tuner's database. loom runs no cluster software of its
// own; a one-machine run starts the server in process (StartServer) and
// takes the same path.
//
// The model, in the order a candidate goes through it:
//
//   - A Job is a versioned JSON document: the task's function as loom
//     text, unscheduled, and the candidate's schedule as a trace, never a
//     binary. A worker replays the trace on the function with loom's own
//     primitives (which refuse what they cannot prove legal), so that no
//     job runs code other than loom's kernels. A payload that is not a
//     job of a version the worker knows is refused (Decode).
//   - Jobs go to the stream LOOM_JOBS under loom.job.build.TARGET and
//     loom.job.measure.TARGET, with work-queue retention: each is taken by
//     one worker, acknowledged when its result is published, and
//     redelivered to another after the deadline when its worker died. A
//     worker takes only its own TARGET's jobs, so a search on one machine
//     can measure on another kind. Builds run as many at once as a worker
//     has cores; measurements one at a time per machine (a lock file all
//     of the machine's workers share), never beside a build.
//   - Results go to the stream LOOM_RESULTS under loom.result.CAMPAIGN,
//     kept after they are read: a tuner restarted mid-run reads its
//     campaign's results again, records those its database lacks, and
//     waits for a job still in flight instead of publishing it again. A
//     job's ID names the campaign, the candidate, its sizes and how many
//     times the campaign measured it before, and is the message ID of its
//     publication and of its result, so that a redelivered job that
//     finishes twice is recorded once.
//   - Workers announce their machine (ISA, features, cores, GPU) in the
//     key-value bucket loom_workers, refreshed while they run (Workers).
//
// The file to read first is client.go (Client, the tuner's side); then
// worker.go.
package cluster
