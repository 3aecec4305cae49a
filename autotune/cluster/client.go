package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ClientOptions say what a tuner's jobs ask for.
type ClientOptions struct {
	// Campaign names the tuning run across restarts (see Campaign); its
	// jobs and results carry it. Required: letters, digits, '-', '_'.
	Campaign string
	// Target is the name of the machines that build and measure; "":
	// DefaultTarget(), machines like this one.
	Target  string
	Threads int // threads each kernel runs on; 0: one per core of the measuring machine
	Options Options
	// Repeats, MinSeconds and Timeout: how a candidate is timed (see
	// autotune.ProcessRunner; 0: its defaults).
	Repeats    int
	MinSeconds float64
	Timeout    time.Duration
	// Attempts is how many deliveries a job gets before it fails without
	// running (its workers died or hung each time); 0: 3.
	Attempts int
	// DB is where results that arrive for no waiting request are
	// recorded (a job finished while the tuner was stopped); nil: they
	// are dropped.
	DB *autotune.Database
	// NoWorker is how long a request waits while no worker of Target
	// announces itself before it fails; 0: two minutes.
	NoWorker time.Duration
	// Log, when set, gets a line per recovered result and per wait.
	Log io.Writer
}

// Client is a tuner's side of the queues: Builder and Runner publish
// jobs and wait for their results, for autotune.Tune and TuneModel.
// NewClient makes one; Close stops it.
type Client struct {
	js     jetstream.JetStream
	o      ClientOptions
	cancel context.CancelFunc
	done   chan struct{}

	// seq is the stream sequence of the last result read.
	seq atomic.Uint64

	mu       sync.Mutex
	results  map[string]Result // the campaign's results read so far, by job ID
	waiters  map[string][]chan Result
	counts   map[string]int  // by base ID: the next count a measurement takes
	recorded map[string]bool // job IDs the database has a record of
	// Recovered counts the results recorded for no waiting request.
	recovered int
}

// NewClient connects a tuner to the queues on nc. It reads the
// campaign's results published so far, records in o.DB those it lacks,
// and waits until the campaign has no job in flight (one published
// before a restart), so that the search that follows resumes from the
// database with everything measured.
func NewClient(ctx context.Context, nc *nats.Conn, o ClientOptions) (*Client, error) {
	if !isToken(o.Campaign) {
		return nil, fmt.Errorf("cluster: campaign %q: want letters, digits, '-' and '_'", o.Campaign)
	}
	if o.Target == "" {
		o.Target = DefaultTarget()
	}
	if !isToken(o.Target) {
		return nil, fmt.Errorf("cluster: target %q: want letters, digits, '-' and '_'", o.Target)
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.NoWorker <= 0 {
		o.NoWorker = 2 * time.Minute
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if _, err := ensureStreams(ctx, js); err != nil {
		return nil, err
	}
	c := &Client{js: js, o: o, done: make(chan struct{}), results: map[string]Result{}, waiters: map[string][]chan Result{}, counts: map[string]int{}, recorded: map[string]bool{}}
	if o.DB != nil {
		recs, _, err := o.DB.Load()
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			for _, id := range strings.Split(r.Job, ",") {
				if id != "" {
					c.recorded[id] = true
				}
			}
		}
	}
	cons, err := js.OrderedConsumer(ctx, resultStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{resultSubject(o.Campaign)}})
	if err != nil {
		return nil, err
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		go func() { <-bg.Done(); it.Stop() }()
		for {
			msg, err := it.Next()
			if err != nil {
				if bg.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
					return
				}
				continue
			}
			c.accept(msg.Data())
			if md, err := msg.Metadata(); err == nil {
				c.seq.Store(md.Sequence.Stream)
			}
		}
	}()
	// The results published so far, then the jobs still in flight and
	// their results: the search that follows starts from a database with
	// all of them.
	if err := c.caughtUp(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.awaitInFlight(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.caughtUp(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// caughtUp waits until the client has read the campaign's last result.
func (c *Client) caughtUp(ctx context.Context) error {
	stream, err := c.js.Stream(ctx, resultStream)
	if err != nil {
		return err
	}
	last, err := stream.GetLastMsgForSubject(ctx, resultSubject(c.o.Campaign))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: the campaign's results: %w", err)
	}
	for c.seq.Load() < last.Sequence {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return errors.New("cluster: the reader of results stopped (the connection closed)")
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

// Close stops reading results.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	return nil
}

// Recovered returns how many results the client recorded for no waiting
// request (jobs that finished while their tuner was stopped).
func (c *Client) Recovered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.recovered
}

// awaitInFlight waits until the campaign has no job in the queue. It
// gives up when a target with jobs in flight has had no worker for
// o.NoWorker, naming it.
func (c *Client) awaitInFlight(ctx context.Context) error {
	stream, err := c.js.Stream(ctx, jobStream)
	if err != nil {
		return err
	}
	filter := "loom.job.*.*." + c.o.Campaign
	lastSeen := map[string]time.Time{} // target → when a worker of it was last seen
	start := time.Now()
	for said := false; ; {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return err
		}
		n, targets := uint64(0), map[string]bool{}
		for subj, k := range info.State.Subjects {
			n += k
			if tok := strings.Split(subj, "."); len(tok) == 5 {
				targets[tok[3]] = true
			}
		}
		if n == 0 {
			return nil
		}
		if !said {
			c.logf("campaign %s has %d jobs in flight from before; waiting for them", c.o.Campaign, n)
			said = true
		}
		ws, err := Workers(ctx, c.js)
		if err == nil {
			for _, w := range ws {
				lastSeen[w.Target] = time.Now()
			}
			for t := range targets {
				seen, ok := lastSeen[t]
				if !ok {
					seen = start
				}
				if time.Since(seen) > c.o.NoWorker {
					return fmt.Errorf("cluster: campaign %s has jobs in flight for target %s, and no worker of it has announced itself for %v: start one (loom worker -target %s), or remove %s.campaign beside the database to start a new campaign", c.o.Campaign, t, c.o.NoWorker, t, "the run's")
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hasWorker reports whether a worker of the client's target announced
// itself lately.
func (c *Client) hasWorker(ctx context.Context) bool {
	ws, err := Workers(ctx, c.js)
	if err != nil {
		return true // the registry cannot be read: do not give up on it
	}
	for _, w := range ws {
		if w.Target == c.o.Target {
			return true
		}
	}
	return false
}

func (c *Client) logf(format string, args ...any) {
	if c.o.Log != nil {
		fmt.Fprintf(c.o.Log, "loom tune: %s\n", fmt.Sprintf(format, args...))
	}
}

// accept takes one published result: the first of each job ID counts.
// One that no request waits for is recorded in the database when it is
// a measurement the database lacks.
func (c *Client) accept(data []byte) {
	var r Result
	if json.Unmarshal(data, &r) != nil || r.V != Version || r.ID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.results[r.ID]; dup {
		return
	}
	c.results[r.ID] = r
	if r.Kind == KindMeasure {
		base, n := baseID(r.ID), countOf(r.ID)
		c.counts[base] = max(c.counts[base], n+1)
	}
	if ws, ok := c.waiters[r.ID]; ok {
		delete(c.waiters, r.ID)
		if r.Kind == KindMeasure {
			c.recorded[r.ID] = true // the search records it
		}
		for _, w := range ws {
			w <- r
		}
		return
	}
	if r.Kind != KindMeasure || c.recorded[r.ID] || c.o.DB == nil {
		return
	}
	rec := &autotune.Record{}
	if json.Unmarshal(r.Note, rec) != nil || rec.Trace == nil {
		return
	}
	rec.Seconds, rec.Error = r.Seconds, r.Err
	if r.Err == "" {
		rec.Median, rec.Spread = autotune.Summarize(r.Seconds)
	}
	rec.Job, rec.Machine, rec.Time, rec.Run = r.ID, r.Machine, time.Now().UTC(), "recovered from campaign "+r.Campaign
	if err := c.o.DB.Append(rec); err != nil {
		c.logf("recording the result of %s: %v", r.ID, err)
		return
	}
	c.recorded[r.ID] = true
	c.recovered++
	c.logf("recorded %s, which finished while no tuner waited for it", r.ID)
}

// countOf is a job ID's count (see jobID).
func countOf(id string) int {
	i := strings.LastIndexByte(id, '-')
	n, _ := strconv.Atoi(id[i+1:])
	return n
}

// Builder returns the client as an autotune.Builder: each candidate is
// built by a worker of the target (once per campaign).
func (c *Client) Builder() autotune.Builder { return builder{c} }

// Runner returns the client as an autotune.Runner: each candidate is
// checked and timed by a worker of the target.
func (c *Client) Runner() autotune.Runner { return runner{c} }

type builder struct{ c *Client }

func (b builder) Build(ctx context.Context, task *autotune.Task, cands []*autotune.Candidate) []autotune.BuildResult {
	out := make([]autotune.BuildResult, len(cands))
	for i, r := range b.c.do(ctx, KindBuild, task, cands, nil) {
		out[i].Err = r.err
	}
	return out
}

type runner struct{ c *Client }

func (r runner) Run(ctx context.Context, task *autotune.Task, cands []*autotune.Candidate, builds []autotune.BuildResult) []autotune.RunResult {
	out := make([]autotune.RunResult, len(cands))
	skip := make([]bool, len(cands))
	for i, b := range builds {
		if b.Err != nil {
			out[i].Err, skip[i] = b.Err, true
		}
	}
	for i, res := range r.c.do(ctx, KindMeasure, task, cands, skip) {
		if skip[i] {
			continue
		}
		out[i] = autotune.RunResult{Seconds: res.r.Seconds, Err: res.err, Job: strings.Join(res.ids, ","), Machine: res.r.Machine}
	}
	return out
}

type outcome struct {
	r   Result
	err error
	// ids are the jobs published for the candidate (a backup's too):
	// its record names them all, so that one that comes back later, to
	// a tuner started again, is known as measured.
	ids []string
}

// do publishes a job of kind for each candidate not skipped and waits
// for their results. A build already done in the campaign is not done
// again; a measurement is, as the campaign's next one of that candidate.
func (c *Client) do(ctx context.Context, kind string, task *autotune.Task, cands []*autotune.Candidate, skip []bool) []outcome {
	out := make([]outcome, len(cands))
	waits := map[int]chan Result{}
	fn := ast.Print(task.Func)
	for i, cand := range cands {
		if skip != nil && skip[i] {
			continue
		}
		job, err := c.job(kind, task, cand, fn)
		if err != nil {
			out[i].err = err
			continue
		}
		out[i].ids = []string{job.ID}
		c.mu.Lock()
		if r, ok := c.results[job.ID]; ok {
			c.mu.Unlock()
			out[i].r, out[i].err = r, resultErr(r)
			continue
		}
		ch := make(chan Result, 1)
		c.waiters[job.ID] = append(c.waiters[job.ID], ch)
		c.mu.Unlock()
		waits[i] = ch
		if err := c.publish(ctx, job); err != nil {
			c.forget(job.ID, ch)
			delete(waits, i)
			out[i].err = err
		}
	}
	c.await(ctx, kind, task, cands, fn, waits, out)
	return out
}

// forget removes the waiter ch of job id.
func (c *Client) forget(id string, ch chan Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ws := slices.DeleteFunc(c.waiters[id], func(w chan Result) bool { return w == ch })
	if len(ws) == 0 {
		delete(c.waiters, id)
	} else {
		c.waiters[id] = ws
	}
}

// await waits for the results of waits (by candidate). A measurement
// still out when the others of its batch are in, and four times their
// median time has passed, is published again as the candidate's next
// measurement (a backup, to another worker): a slow or stuck machine
// delays a batch by no more than that. The first of the two results
// counts; the other is dropped when it comes.
func (c *Client) await(ctx context.Context, kind string, task *autotune.Task, cands []*autotune.Candidate, fn string, waits map[int]chan Result, out []outcome) {
	type answer struct {
		i int
		r Result
	}
	type waiter struct {
		id string
		ch chan Result
	}
	answers := make(chan answer, 2*len(cands)+1)
	stop := make(chan struct{})
	var forwarders sync.WaitGroup
	forward := func(i int, ch chan Result) {
		forwarders.Go(func() {
			select {
			case r := <-ch:
				answers <- answer{i, r}
			case <-stop:
			}
		})
	}
	pending := map[int][]waiter{}
	for i, ch := range waits {
		pending[i] = []waiter{{out[i].ids[0], ch}}
		forward(i, ch)
	}
	fail := func(err error) {
		for i := range pending {
			out[i].err = err
		}
	}
	start, lastWorker, lastCheck := time.Now(), time.Now(), time.Now()
	var took []time.Duration
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
wait:
	for len(pending) > 0 {
		select {
		case a := <-answers:
			if _, ok := pending[a.i]; ok {
				out[a.i].r, out[a.i].err = a.r, resultErr(a.r)
				delete(pending, a.i)
				took = append(took, time.Since(start))
			}
			continue
		case <-ctx.Done():
			fail(ctx.Err())
			break wait
		case <-c.done:
			fail(errors.New("cluster: the reader of results stopped (the connection closed)"))
			break wait
		case <-tick.C:
		}
		if time.Since(lastCheck) > 2*time.Second {
			lastCheck = time.Now()
			if c.hasWorker(ctx) {
				lastWorker = time.Now()
			} else if time.Since(lastWorker) > c.o.NoWorker {
				fail(fmt.Errorf("cluster: no worker of target %s has announced itself for %v", c.o.Target, c.o.NoWorker))
				break wait
			}
		}
		if kind != KindMeasure || len(took) == 0 || len(pending) > len(took) {
			continue
		}
		slices.Sort(took)
		late := 4*took[len(took)/2] + time.Second
		for i, ws := range pending {
			if len(ws) > 1 || time.Since(start) < late {
				continue
			}
			job, err := c.job(kind, task, cands[i], fn)
			if err != nil {
				continue
			}
			ch := make(chan Result, 1)
			c.mu.Lock()
			c.waiters[job.ID] = append(c.waiters[job.ID], ch)
			c.mu.Unlock()
			if err := c.publish(ctx, job); err != nil {
				c.forget(job.ID, ch)
				continue
			}
			pending[i] = append(ws, waiter{job.ID, ch})
			out[i].ids = append(out[i].ids, job.ID)
			forward(i, ch)
			c.logf("measuring %s again on another worker: %v and no result", cands[i].Hash[:12], time.Since(start).Round(time.Millisecond))
		}
	}
	close(stop)
	forwarders.Wait()
	// A result a forwarder passed on as the wait ended is the
	// candidate's after all.
	for len(answers) > 0 {
		a := <-answers
		if _, ok := pending[a.i]; ok {
			out[a.i].r, out[a.i].err = a.r, resultErr(a.r)
			delete(pending, a.i)
		}
	}
	// The requests still unanswered: a result already handed to their
	// waiters is theirs. Interrupted, the search records none of them:
	// their waiters go, so that results that come later are recorded as
	// the tuner's own would have been. Failed (no worker), their record
	// names their jobs: the waiters stay, and drop what comes, as those
	// of the backups that lost do.
	for i, ws := range pending {
		for _, w := range ws {
			select {
			case r := <-w.ch:
				out[i].r, out[i].err = r, resultErr(r)
			default:
				if ctx.Err() != nil {
					c.forget(w.id, w.ch)
				}
			}
		}
	}
}

func resultErr(r Result) error {
	if r.Err == "" {
		return nil
	}
	return errors.New(r.Err)
}

// job makes the job of kind for a candidate of task.
func (c *Client) job(kind string, task *autotune.Task, cand *autotune.Candidate, fn string) (*Job, error) {
	tr, err := json.Marshal(cand.Sched.Trace())
	if err != nil {
		return nil, err
	}
	var cold []int // a build does not time
	if kind == KindMeasure {
		cold = task.Cold
	}
	base := jobID(c.o.Campaign, kind, c.o.Target, c.o.Threads, cand.Hash, task.Sizes, cold, 0)
	base = baseID(base)
	n := 0
	if kind == KindMeasure {
		c.mu.Lock()
		n = c.counts[base]
		c.counts[base] = n + 1
		c.mu.Unlock()
	}
	note, err := json.Marshal(&autotune.Record{
		Workload: ast.Hash(task.Func).String(), Name: task.Name, Sizes: task.Sizes, Shape: task.Shape,
		Target: task.Target, Trace: cand.Sched.Trace(), Bucket: task.Bucket,
		Features: cand.Features, FeaturesVersion: autotune.FeaturesVersion,
	})
	if err != nil {
		return nil, err
	}
	return &Job{
		V: Version, Kind: kind, ID: fmt.Sprintf("%s-%d", base, n), Campaign: c.o.Campaign, Target: c.o.Target,
		Func: fn, Trace: tr, Hash: cand.Hash, Sizes: task.Sizes, Options: c.o.Options, Threads: c.o.Threads,
		Repeats: c.o.Repeats, MinSeconds: c.o.MinSeconds, Timeout: c.o.Timeout.Seconds(), Attempts: c.o.Attempts,
		Cold: cold, Note: note,
	}, nil
}

func (c *Client) publish(ctx context.Context, job *Job) error {
	data, err := json.Marshal(job)
	if err != nil {
		return err
	}
	// A job the workers would refuse is refused here, with the reason.
	if _, err := Decode(data); err != nil {
		return err
	}
	_, err = c.js.Publish(ctx, jobSubject(job.Kind, job.Target, job.Campaign), data, jetstream.WithMsgID(job.ID))
	return err
}

// Campaign returns the campaign of the tuning run whose database is at
// dbPath: the one a stopped run left (in dbPath + ".campaign"), resumed,
// or a new one, written there. finish removes the file once the run is
// done, so that the next run is a campaign of its own.
func Campaign(dbPath string) (id string, resumed bool, finish func() error, err error) {
	path := dbPath + ".campaign"
	finish = func() error { return os.Remove(path) }
	data, err := os.ReadFile(path)
	if err == nil {
		id = strings.TrimSpace(string(data))
		if !isToken(id) {
			return "", false, nil, fmt.Errorf("cluster: %s holds %q, not a campaign", path, id)
		}
		return id, true, finish, nil
	}
	if !os.IsNotExist(err) {
		return "", false, nil, err
	}
	var b [8]byte
	rand.Read(b[:])
	id = time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
	// Written whole or not at all: a crash leaves no empty file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", false, nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", false, nil, err
	}
	return id, false, finish, nil
}
