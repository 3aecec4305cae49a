package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Worker takes jobs of its target from the queues and publishes their
// results. The zero value is ready to Run; its fields override the
// defaults.
type Worker struct {
	// Name names the worker in announcements and results; "": the host
	// name and the process id.
	Name string
	// Target is the name of the jobs it takes; "": DefaultTarget().
	Target string
	// CacheDir is where kernels are compiled and kept; "": loom's cache
	// directory.
	CacheDir string
	// Builds is how many build jobs it runs at once; 0: one per core.
	Builds int
	// Deadline is how long a job may go without word from its worker
	// (which reports progress every third of it) before it is delivered
	// to another; 0: 30 seconds.
	Deadline time.Duration
	// Command is the process a measurement runs in (one per candidate, so
	// that a kernel that crashes ends only it); nil: this program again,
	// with autotune.WorkerEnv set.
	Command []string
	// Log, when set, gets a line per job and per refused payload.
	Log io.Writer
	// OnJob, when set, is called after each job with its result and how
	// long it took.
	OnJob func(job *Job, res *Result, took time.Duration)
	// Timing, when set, replaces the seconds a measurement gave (tests:
	// fake timings that do not depend on the machine's load).
	Timing func(f *ast.Func, seconds []float64) []float64

	done    atomic.Int64
	mu      sync.Mutex
	runners map[string]*autotune.ProcessRunner
	// replayed keeps the last candidates replayed (a candidate's build
	// and measurement usually come to the same worker), oldest first in
	// replayOrder.
	replayed    map[string]replay
	replayOrder []string
}

type replay struct {
	task *autotune.Task
	cand *autotune.Candidate
}

// replayKeep is how many replayed candidates a worker keeps.
const replayKeep = 256

// maxRunners bounds the measurement settings whose runners (and their
// reference outputs) a worker keeps.
const maxRunners = 8

// candidate returns job's task and candidate, replayed once per worker
// for the job's function, trace and sizes.
func (w *Worker) candidate(job *Job) (*autotune.Task, *autotune.Candidate, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%v", job.Func, job.Trace, job.Hash, job.Sizes)
	key := string(h.Sum(nil))
	w.mu.Lock()
	r, ok := w.replayed[key]
	w.mu.Unlock()
	if ok {
		return r.task, r.cand, nil
	}
	task, cand, err := job.candidate()
	if err != nil {
		return nil, nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.replayed == nil {
		w.replayed = map[string]replay{}
	}
	if _, ok := w.replayed[key]; !ok {
		w.replayed[key] = replay{task, cand}
		w.replayOrder = append(w.replayOrder, key)
		if len(w.replayOrder) > replayKeep {
			delete(w.replayed, w.replayOrder[0])
			w.replayOrder = w.replayOrder[1:]
		}
	}
	return task, cand, nil
}

// DefaultTarget names this machine's kind: its architecture, vector
// width, hardware threads and a hash of its CPU model and features, so
// that machines that build and time kernels alike share a name.
func DefaultTarget() string {
	info := native.HostCPU() + "|" + native.HostCPUFlags()
	sum := sha256.Sum256([]byte(runtime.GOARCH + "|" + info))
	name, _ := TargetName(fmt.Sprintf("%s-%dbit-%dt-%s", runtime.GOARCH, llvm.Host().VectorBits(), runtime.NumCPU(), hex.EncodeToString(sum[:4])))
	return name
}

// Done returns how many jobs the worker has finished.
func (w *Worker) Done() int { return int(w.done.Load()) }

func (w *Worker) defaults() error {
	if w.Name == "" {
		h, _ := os.Hostname()
		w.Name = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if w.Target == "" {
		w.Target = DefaultTarget()
	}
	t, err := TargetName(w.Target)
	if err != nil {
		return err
	}
	if t != w.Target {
		return fmt.Errorf("cluster: target %q: use letters, digits, '-' and '_' (%q)", w.Target, t)
	}
	if w.Builds <= 0 {
		w.Builds = runtime.NumCPU()
	}
	if w.Deadline <= 0 {
		w.Deadline = 30 * time.Second
	}
	if w.Deadline < time.Second {
		return fmt.Errorf("cluster: deadline %v: at least a second", w.Deadline)
	}
	if w.Command == nil {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		w.Command = []string{exe}
	}
	return nil
}

// Run takes jobs until ctx is done, announcing the worker's machine
// meanwhile. It returns ctx's error, or why it could not start.
func (w *Worker) Run(ctx context.Context, nc *nats.Conn) error {
	if err := w.defaults(); err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	kv, err := ensureStreams(ctx, js)
	if err != nil {
		return err
	}
	builds, err := consumer(ctx, js, KindBuild, w.Target, w.Deadline)
	if err != nil {
		return err
	}
	measures, err := consumer(ctx, js, KindMeasure, w.Target, w.Deadline)
	if err != nil {
		return err
	}
	cache, err := w.cache()
	if err != nil {
		return err
	}
	lock, err := machineLock(cache.Dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	info := w.info()
	announce := func() {
		info.Done = w.Done()
		data, _ := json.Marshal(info)
		if _, err := kv.Put(ctx, w.Name, data); err != nil && ctx.Err() == nil {
			w.logf("announce: %v", err)
		}
	}
	announce()
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(announceTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				announce()
			}
		}
	})
	take := func(c jetstream.Consumer, kind string) {
		for ctx.Err() == nil {
			msg, err := c.Next(jetstream.FetchMaxWait(2 * time.Second))
			if err != nil {
				if !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
					w.logf("%s jobs: %v", kind, err)
					time.Sleep(time.Second)
				}
				continue
			}
			w.handle(ctx, js, c, msg, cache, lock)
		}
	}
	for range w.Builds {
		wg.Go(func() { take(builds, KindBuild) })
	}
	wg.Go(func() { take(measures, KindMeasure) })
	wg.Wait()
	if ctx.Err() == nil {
		return nil
	}
	kv.Delete(context.Background(), w.Name)
	return ctx.Err()
}

func (w *Worker) cache() (*native.Cache, error) {
	if w.CacheDir != "" {
		return native.NewCache(w.CacheDir)
	}
	return native.DefaultCache()
}

func (w *Worker) logf(format string, args ...any) {
	if w.Log != nil {
		fmt.Fprintf(w.Log, "loom worker %s: %s\n", w.Name, fmt.Sprintf(format, args...))
	}
}

// handle does one job: refuses it when it is not a loom job, fails it
// when it was delivered more often than it allows, else builds or
// measures it, publishes the result and acknowledges the job.
func (w *Worker) handle(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer, msg jetstream.Msg, cache *native.Cache, lock *lockFile) {
	job, err := Decode(msg.Data())
	if err == nil {
		if want := jobSubject(job.Kind, w.Target, job.Campaign); msg.Subject() != want {
			err = fmt.Errorf("cluster: job %s came on %s, not %s", job.ID, msg.Subject(), want)
		}
	}
	if err != nil {
		// Refused: answered with the reason when the payload says whose
		// it is (a tuner of another version waits for it), and never
		// delivered again.
		w.logf("refused a payload on %s: %v", msg.Subject(), err)
		if id, kind, campaign, ok := identify(msg.Data()); ok {
			res := &Result{V: Version, ID: id, Kind: kind, Campaign: campaign, Worker: w.Name, Machine: hostname(), Err: "refused by worker " + w.Name + ": " + err.Error()}
			if data, err := json.Marshal(res); err == nil {
				js.Publish(ctx, resultSubject(campaign), data, jetstream.WithMsgID(id))
			}
		}
		msg.Term()
		return
	}
	res := &Result{V: Version, ID: job.ID, Kind: job.Kind, Campaign: job.Campaign, Worker: w.Name, Machine: hostname(), Note: job.Note}
	md, err := msg.Metadata()
	switch {
	case err != nil:
		res.Err = "cluster: " + err.Error()
	case md.NumDelivered > uint64(job.Attempts):
		res.Err = fmt.Sprintf("abandoned after %d deliveries: every worker that took it died or stopped answering", job.Attempts)
	default:
		stop := w.keepAlive(ctx, cons, msg)
		start := time.Now()
		w.do(ctx, job, res, cache, lock)
		stop()
		if ctx.Err() != nil {
			// Stopped, not failed: another worker takes the job.
			msg.Nak()
			return
		}
		took := time.Since(start)
		w.logf("%s %s in %.2fs%s", job.Kind, job.ID, took.Seconds(), errSuffix(res.Err))
		if w.OnJob != nil {
			w.OnJob(job, res, took)
		}
	}
	data, err := json.Marshal(res)
	if err == nil {
		_, err = js.Publish(ctx, resultSubject(job.Campaign), data, jetstream.WithMsgID(job.ID))
	}
	if err != nil {
		// Not acknowledged: the job is delivered again.
		w.logf("result of %s: %v", job.ID, err)
		return
	}
	msg.DoubleAck(ctx)
	w.done.Add(1)
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

// keepAlive tells the server, every third of the deadline, that the job
// is in progress, until the returned function is called. The deadline is
// the consumer's as it is now (the last worker of the target to start
// set it), or the worker's when that cannot be read.
func (w *Worker) keepAlive(ctx context.Context, cons jetstream.Consumer, msg jetstream.Msg) func() {
	every := w.Deadline / 3
	if info, err := cons.Info(ctx); err == nil && info.Config.AckWait > 0 {
		every = min(every, info.Config.AckWait/3)
	}
	every = max(every, 100*time.Millisecond)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				msg.InProgress()
			}
		}
	}()
	return func() { close(done) }
}

// do builds or measures job into res. A build holds the machine's lock
// shared, a measurement alone.
func (w *Worker) do(ctx context.Context, job *Job, res *Result, cache *native.Cache, lock *lockFile) {
	defer func() {
		if p := recover(); p != nil {
			res.Err = fmt.Sprintf("internal: loom panicked: %v", p)
		}
	}()
	task, cand, err := w.candidate(job)
	if err != nil {
		res.Err = err.Error()
		return
	}
	switch job.Kind {
	case KindBuild:
		unlock, err := lock.shared(ctx)
		if err != nil {
			res.Err = err.Error()
			return
		}
		defer unlock()
		// Here, not in a builder's goroutine: a panic of loom's is this
		// job's failure, not the worker's end.
		m, err := llvm.Lower(cand.Func, job.Options.llvm())
		if err == nil {
			_, _, err = cache.BuildFile(m)
		}
		if err != nil {
			res.Err = err.Error()
		}
	case KindMeasure:
		unlock, err := lock.exclusive(ctx)
		if err != nil {
			res.Err = err.Error()
			return
		}
		defer unlock()
		r := w.runner(job, cache).Run(ctx, task, []*autotune.Candidate{cand}, []autotune.BuildResult{{}})[0]
		if r.Err != nil {
			res.Err = r.Err.Error()
			return
		}
		res.Seconds = r.Seconds
		if w.Timing != nil {
			res.Seconds = w.Timing(cand.Func, r.Seconds)
		}
	}
}

// runner returns the process runner for job's settings, one per setting
// so that each keeps its tasks' reference outputs across jobs.
func (w *Worker) runner(job *Job, cache *native.Cache) *autotune.ProcessRunner {
	key := fmt.Sprintf("%d/%d/%g/%g/%+v", job.Threads, job.Repeats, job.MinSeconds, job.Timeout, job.Options)
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.runners[key]; r != nil {
		return r
	}
	if w.runners == nil {
		w.runners = map[string]*autotune.ProcessRunner{}
	}
	if len(w.runners) >= maxRunners {
		// Each keeps its tasks' reference outputs on disk: a long-lived
		// worker keeps those of the latest settings only.
		for k, r := range w.runners {
			r.Close()
			delete(w.runners, k)
		}
	}
	r := &autotune.ProcessRunner{
		Command: w.Command, Env: []string{autotune.WorkerEnv + "=1"}, CacheDir: cache.Dir,
		Options: job.Options.llvm(), Threads: job.Threads, Repeats: job.Repeats, MinSeconds: job.MinSeconds,
		Timeout: time.Duration(job.Timeout * float64(time.Second)),
	}
	w.runners[key] = r
	return r
}

// Close removes the files the worker's runners keep (their reference
// outputs).
func (w *Worker) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, r := range w.runners {
		errs = append(errs, r.Close())
	}
	w.runners = nil
	return errors.Join(errs...)
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
