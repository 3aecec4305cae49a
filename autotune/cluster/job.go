package cluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/cacheflush"
	"github.com/loom-go/loom/schedule"
)

// Version is the version of the job and result documents; a worker
// refuses a job of any other.
const Version = 1

// Kinds of job.
const (
	KindBuild   = "build"   // lower and compile the candidate into the worker's cache
	KindMeasure = "measure" // build if needed, check against the reference, time
)

// MaxPayload bounds a job's or a result's size (bytes).
const MaxPayload = 8 << 20

// Job is one build or measurement of one candidate.
type Job struct {
	V        int    `json:"v"`
	Kind     string `json:"kind"`
	ID       string `json:"id"`
	Campaign string `json:"campaign"`
	// Target is the name of the machines that may take it (a subject
	// token, see TargetName).
	Target string `json:"target"`
	// Func is the task's function, unscheduled, in loom's text; Trace the
	// candidate's schedule; Hash the structural hash of the scheduled
	// function the replay must give.
	Func  string           `json:"func"`
	Trace json.RawMessage  `json:"trace"`
	Hash  string           `json:"hash"`
	Sizes map[string]int64 `json:"sizes,omitempty"`
	// Options are the code generator's options the job may set.
	Options Options `json:"options"`
	// Threads the kernel runs on (measurement).
	Threads int `json:"threads,omitempty"`
	// Repeats, MinSeconds and Cutoff: how the candidate is timed (see
	// autotune.ProcessRunner); Timeout bounds one run of it (seconds).
	Repeats    int     `json:"repeats,omitempty"`
	MinSeconds float64 `json:"min_seconds,omitempty"`
	Timeout    float64 `json:"timeout,omitempty"`
	// Cold are the positions of the function's parameters that every
	// timed run starts with out of the caches (autotune.Task.Cold: a
	// model's weights); a worker that cannot flush them fails the job.
	Cold []int `json:"cold,omitempty"`
	// Attempts is how many deliveries the job gets: one delivered again
	// after that many (every worker that took it died or hung) fails
	// without running.
	Attempts int `json:"attempts"`
	// Note is the tuner's, returned unread in the result: what it needs
	// to record a result that arrives after it restarted.
	Note json.RawMessage `json:"note,omitempty"`
}

// Options are the code generator's options a job may carry: none that
// names a file, a symbol or a target, and none that skips a proof.
type Options struct {
	FastMath   bool `json:"fast_math,omitempty"`
	NoFMA      bool `json:"no_fma,omitempty"`
	VectorBits int  `json:"vector_bits,omitempty"`
	LLVMUnroll bool `json:"llvm_unroll,omitempty"`
}

func (o Options) llvm() llvm.Options {
	return llvm.Options{FastMath: o.FastMath, NoFMA: o.NoFMA, VectorBits: o.VectorBits, LLVMUnroll: o.LLVMUnroll}
}

// Result is a job's outcome.
type Result struct {
	V        int    `json:"v"`
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Campaign string `json:"campaign"`
	// Seconds are the measured times; Err says why the job failed
	// (empty when it did not).
	Seconds []float64 `json:"seconds,omitempty"`
	Err     string    `json:"err,omitempty"`
	// Worker names the worker that did the job, Machine its host.
	Worker  string          `json:"worker,omitempty"`
	Machine string          `json:"machine,omitempty"`
	Note    json.RawMessage `json:"note,omitempty"`
}

// Decode reads a job, refusing a payload that is not a loom job of
// Version: unknown fields, another version or kind, a missing ID or
// function, settings out of range, a payload over MaxPayload. (The
// function and its sizes are checked when the job is done.)
func Decode(data []byte) (*Job, error) {
	if len(data) > MaxPayload {
		return nil, fmt.Errorf("cluster: job of %d bytes, more than %d", len(data), MaxPayload)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j Job
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("cluster: not a loom job: %v", err)
	}
	if dec.More() {
		return nil, errors.New("cluster: not a loom job: data after the document")
	}
	switch {
	case j.V != Version:
		return nil, fmt.Errorf("cluster: job version %d; this worker knows %d", j.V, Version)
	case j.Kind != KindBuild && j.Kind != KindMeasure:
		return nil, fmt.Errorf("cluster: job kind %q; want %q or %q", j.Kind, KindBuild, KindMeasure)
	case j.Func == "" || len(j.Trace) == 0:
		return nil, errors.New("cluster: job without a function or a trace")
	case !isToken(j.ID):
		return nil, fmt.Errorf("cluster: job id %q: want letters, digits, '-' and '_', at most 128", j.ID)
	case !isToken(j.Campaign):
		return nil, fmt.Errorf("cluster: job campaign %q: want letters, digits, '-' and '_'", j.Campaign)
	case j.Threads < 0 || j.Threads > 4096 || j.Repeats < 0 || j.Repeats > 1000 || j.Attempts < 1 || j.Attempts > 100:
		return nil, fmt.Errorf("cluster: job %s: threads %d, repeats %d or attempts %d out of range", j.ID, j.Threads, j.Repeats, j.Attempts)
	case j.Timeout < 0 || j.Timeout > 24*3600 || j.MinSeconds < 0 || j.MinSeconds > 60:
		return nil, fmt.Errorf("cluster: job %s: timeout %g s or min_seconds %g out of range", j.ID, j.Timeout, j.MinSeconds)
	case j.Options.VectorBits != 0 && j.Options.VectorBits != 128 && j.Options.VectorBits != 256 && j.Options.VectorBits != 512:
		return nil, fmt.Errorf("cluster: job %s: vector_bits %d", j.ID, j.Options.VectorBits)
	case len(j.Cold) > 1024 || slices.ContainsFunc(j.Cold, func(p int) bool { return p < 0 || p >= 1024 }):
		return nil, fmt.Errorf("cluster: job %s: cold parameters %v out of range", j.ID, j.Cold)
	}
	return &j, nil
}

// candidate replays the job's trace on its function: the task and the
// scheduled function loom's own primitives make of them. The replayed
// function must hash as the job says.
func (j *Job) candidate() (*autotune.Task, *autotune.Candidate, error) {
	f, err := ast.Parse(j.Func)
	if err != nil {
		return nil, nil, fmt.Errorf("function: %v", err)
	}
	tr, err := schedule.ParseTrace(j.Trace)
	if err != nil {
		return nil, nil, fmt.Errorf("trace: %v", err)
	}
	task := &autotune.Task{Name: f.Name, Func: f, Sizes: j.Sizes, Cold: j.Cold}
	if err := task.Check(); err != nil {
		return nil, nil, err
	}
	for _, p := range j.Cold {
		if p >= len(f.Params) {
			return nil, nil, fmt.Errorf("cold parameter %d of %s, which has %d", p, f.Name, len(f.Params))
		}
	}
	if len(j.Cold) > 0 && !cacheflush.Supported {
		return nil, nil, errors.New("the job times its weights out of the caches, and this worker's CPU has no cache flush (x86-64 has)")
	}
	s, err := autotune.Replay(f, tr)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: %v", err)
	}
	g := s.Func()
	if h := ast.Hash(g).String(); h != j.Hash {
		return nil, nil, fmt.Errorf("replay gives function %s, the job names %s", h, j.Hash)
	}
	return task, &autotune.Candidate{Sched: s, Func: g, Hash: j.Hash}, nil
}

// jobID names the n-th measurement (or build) of a candidate at sizes in
// a campaign: the same on every restart of the tuner.
func jobID(campaign, kind, target string, threads int, cand string, sizes map[string]int64, cold []int, n int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%s\x00", campaign, kind, target, threads, cand)
	for _, k := range slices.Sorted(maps.Keys(sizes)) {
		fmt.Fprintf(h, "%s=%d\x00", k, sizes[k])
	}
	if len(cold) > 0 {
		fmt.Fprintf(h, "cold=%v\x00", cold)
	}
	return fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil))[:32], n)
}

// baseID is a job ID without its count.
func baseID(id string) string {
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		return id[:i]
	}
	return id
}

// Stream and subject names.
const (
	jobStream    = "LOOM_JOBS"
	resultStream = "LOOM_RESULTS"
	workerBucket = "loom_workers"
)

// jobSubject is where a campaign's jobs of a kind for a target go; the
// target's workers take them all (jobFilter).
func jobSubject(kind, target, campaign string) string {
	return "loom.job." + kind + "." + target + "." + campaign
}

func jobFilter(kind, target string) string { return "loom.job." + kind + "." + target + ".*" }

func resultSubject(campaign string) string { return "loom.result." + campaign }

// TargetName makes a name usable as a target: letters, digits, '-' and
// '_' kept, anything else '_'. The empty name is an error.
func TargetName(name string) (string, error) {
	if name == "" {
		return "", errors.New("cluster: empty target name")
	}
	if len(name) > 128 {
		return "", fmt.Errorf("cluster: target name of %d bytes, more than 128", len(name))
	}
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b), nil
}

// isToken reports whether s is a non-empty name of letters, digits, '-'
// and '_', at most 128 bytes: a subject token.
func isToken(s string) bool {
	t, err := TargetName(s)
	return err == nil && t == s
}

// identify reads what a refused payload says of itself, for the failed
// result that answers it: its ID, kind and campaign, when they are names
// a result can carry.
func identify(data []byte) (id, kind, campaign string, ok bool) {
	var head struct {
		ID       string `json:"id"`
		Kind     string `json:"kind"`
		Campaign string `json:"campaign"`
	}
	if len(data) > MaxPayload || json.Unmarshal(data, &head) != nil || !isToken(head.ID) || !isToken(head.Campaign) {
		return "", "", "", false
	}
	if head.Kind != KindBuild && head.Kind != KindMeasure {
		head.Kind = KindMeasure
	}
	return head.ID, head.Kind, head.Campaign, true
}
