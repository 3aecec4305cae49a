package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/internal/cacheflush"
	"github.com/loom-go/loom/schedule"
	"github.com/nats-io/nats.go/jetstream"
)

// tuneOverQueue is the test's tuner process: one task tuned as a model
// (resumable from its database and state) over the queue at url.
func tuneOverQueue(url, dbPath string, trials int) error {
	nc, err := Connect(url, "test tuner", Security{})
	if err != nil {
		return err
	}
	defer nc.Close()
	campaign, _, finish, err := Campaign(dbPath)
	if err != nil {
		return err
	}
	db, err := autotune.OpenDatabase(dbPath)
	if err != nil {
		return err
	}
	c, err := NewClient(context.Background(), nc, ClientOptions{Campaign: campaign, Threads: 1, Timeout: time.Minute, DB: db})
	if err != nil {
		return err
	}
	defer c.Close()
	task := rowsumTask(nil)
	task.SetCold([]int{0}) // as loom tune -model does: the workers flush X
	o := testOptions
	o.Trials, o.DB = trials, db
	_, err = autotune.TuneModel(context.Background(), []autotune.ModelTask{{Task: task, Weight: 1}}, c.Builder(), c.Runner(),
		autotune.ModelOptions{Options: o, State: dbPath + ".state.json"})
	if err != nil {
		return err
	}
	return finish()
}

func tuner(t *testing.T, url, dbPath string, trials int) *exec.Cmd {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%s,,%d", testTunerEnv, url, dbPath, trials))
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// records loads the database, failing the test on an error.
func records(t *testing.T, path string) []*autotune.Record {
	t.Helper()
	db, err := autotune.OpenDatabase(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := db.Load()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// waitFor polls cond (every 20 ms) up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("waited two minutes for %s", what)
		}
	}
}

// A worker killed with kill -9 in the middle of a measurement, then the
// tuner, lose no record and duplicate none: every measurement result the
// campaign published has exactly one record, and the run, started again,
// finishes its trials.
func TestKillWorkerThenTuner(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	url := startServer(t)
	cache, busy, dir := t.TempDir(), t.TempDir(), t.TempDir()
	target := DefaultTarget()
	victim := worker(t, url, "victim", target, cache, busy, 250)
	worker(t, url, "steady", target, cache, busy, 250)
	dbPath := filepath.Join(dir, "tuning.jsonl")
	const trials = 8 // two rounds: killed in the second
	tn := tuner(t, url, dbPath, trials)

	waitFor(t, "the victim to measure", func() bool {
		_, err := os.Stat(filepath.Join(busy, "victim.busy"))
		return err == nil
	})
	victim.Process.Signal(syscall.SIGKILL)
	victim.Wait()
	worker(t, url, "late", target, cache, busy, 250)
	waitFor(t, "four records and a measurement in flight", func() bool {
		if len(records(t, dbPath)) < 4 {
			return false
		}
		for _, w := range []string{"steady", "late"} {
			if _, err := os.Stat(filepath.Join(busy, w+".busy")); err == nil {
				return true
			}
		}
		return false
	})
	tn.Process.Signal(syscall.SIGKILL)
	tn.Wait()
	before := len(records(t, dbPath))

	again := tuner(t, url, dbPath, trials)
	if err := again.Wait(); err != nil {
		t.Fatalf("the tuner started again failed: %v", err)
	}
	recs := records(t, dbPath)
	if len(recs) < before || len(recs) < trials {
		t.Fatalf("%d records after the restart, %d before it; want at least %d", len(recs), before, trials)
	}
	// No job has two records, no candidate two trials; every
	// measurement's candidate has its record (a backup measurement, see
	// Client.await, is the same candidate's next job, dropped when the
	// first came back: its base ID has the record).
	jobs, bases, schedules := map[string]int{}, map[string]bool{}, map[string]int{}
	recovered := 0
	for _, r := range recs {
		if r.Job == "" {
			t.Errorf("record without a job: %+v", r)
		}
		if want := rowsumTask(t); cacheflush.Supported && (r.Target != autotune.ColdTarget(want.Target) || r.Error != "") {
			t.Errorf("record of trial %d: target %s, error %q; want the cold-weights target, timed", r.Trial, r.Target, r.Error)
		}
		for _, id := range strings.Split(r.Job, ",") {
			jobs[id]++
			bases[baseID(id)] = true
		}
		schedules[r.Trace.String()]++
		if strings.HasPrefix(r.Run, "recovered from campaign ") {
			recovered++
		}
	}
	for id, n := range jobs {
		if n > 1 {
			t.Errorf("job %s has %d records", id, n)
		}
	}
	for tr, n := range schedules {
		if n > 1 {
			t.Errorf("%d records of one schedule:\n%s", n, tr)
		}
	}
	if recovered == 0 {
		t.Error("no record of a measurement that finished while the tuner was down")
	}
	campaigns := map[string]bool{}
	for _, r := range campaignResults(t, url, "*") {
		campaigns[r.Campaign] = true
		if r.Kind == KindMeasure && !bases[baseID(r.ID)] {
			t.Errorf("the result of job %s (by %s) has no record", r.ID, r.Worker)
		}
	}
	if len(campaigns) != 1 {
		t.Errorf("results of %d campaigns; the restarted tuner should have kept its own", len(campaigns))
	}
	if _, err := os.Stat(dbPath + ".campaign"); !os.IsNotExist(err) {
		t.Errorf("the finished run left its campaign file: %v", err)
	}
}

// A worker that takes two seconds a measurement does not stall the
// run: the others take the jobs it cannot, and it holds one at a time.
func TestSlowWorker(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	url := startServer(t)
	cache, busy := t.TempDir(), t.TempDir()
	target := DefaultTarget()
	// The slow worker is a machine of its own (a cache directory, and so
	// a measurement lock, of its own): on one machine the lock would
	// make the others wait for it.
	worker(t, url, "slow", target, t.TempDir(), busy, 2000)
	worker(t, url, "quick1", target, cache, busy, 0)
	worker(t, url, "quick2", target, cache, busy, 0)
	c := client(t, url, ClientOptions{Campaign: "slow", Target: target, Threads: 1, Timeout: time.Minute})
	opts := testOptions
	res, err := autotune.Tune(context.Background(), rowsumTask(t), c.Builder(), c.Runner(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != opts.Trials {
		t.Fatalf("%d records, want %d", len(res.Records), opts.Trials)
	}
	by := map[string]int{}
	for _, r := range campaignResults(t, url, "slow") {
		if r.Kind == KindMeasure {
			by[r.Worker]++
		}
	}
	if by["slow"] >= opts.Trials/2 {
		t.Errorf("the slow worker measured %d of %d candidates (by worker: %v)", by["slow"], opts.Trials, by)
	}
	t.Logf("measurements by worker: %v", by)
}

// A candidate that kills every worker it reaches is recorded as failed
// once: after its Attempts deliveries the next worker answers for it
// without running it.
func TestJobThatKillsEveryWorker(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	url := startServer(t)
	busy := t.TempDir()
	target := DefaultTarget()
	for i := range 3 {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), testWorkerEnv+"="+strings.Join([]string{url, fmt.Sprint("doomed", i), target, t.TempDir(), busy, "0", "die"}, ","))
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	c := client(t, url, ClientOptions{Campaign: "doomed", Target: target, Threads: 1, Attempts: 2, NoWorker: time.Minute})
	task := rowsumTask(t)
	opts := testOptions
	opts.Trials, opts.Population, opts.Batch = 1, 1, 1
	res, err := autotune.Tune(context.Background(), task, c.Builder(), c.Runner(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 1 || !strings.Contains(res.Records[0].Error, "abandoned after 2 deliveries") {
		t.Fatalf("records %v; want one, failed as abandoned", traces(res.Records))
	}
	n := 0
	for _, r := range campaignResults(t, url, "doomed") {
		if r.Kind == KindMeasure {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d measurement results, want 1", n)
	}
}

// A job that finishes twice (redelivered after its first worker went
// quiet, and both finished) is recorded once: the server keeps one
// result per job ID within its de-duplication window, and the tuner
// records one per job ID beyond it.
func TestResultTwiceRecordedOnce(t *testing.T) {
	url := startServer(t)
	dbPath := filepath.Join(t.TempDir(), "tuning.jsonl")
	db, err := autotune.OpenDatabase(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	task := rowsumTask(t)
	sch, err := schedule.New(task.Func)
	if err != nil {
		t.Fatal(err)
	}
	note, _ := json.Marshal(&autotune.Record{Workload: "w", Name: "rowsum", Target: task.Target, Trace: sch.Trace()})
	res, _ := json.Marshal(Result{V: Version, ID: "job-0", Kind: KindMeasure, Campaign: "twice", Seconds: []float64{1e-3}, Worker: "a", Note: note})
	js := queues(t, url)
	ctx := context.Background()
	for range 2 {
		if _, err := js.Publish(ctx, resultSubject("twice"), res, jetstream.WithMsgID("job-0")); err != nil {
			t.Fatal(err)
		}
	}
	// Past the window: published again without its ID.
	if _, err := js.Publish(ctx, resultSubject("twice"), res); err != nil {
		t.Fatal(err)
	}
	if n := len(campaignResults(t, url, "twice")); n != 2 {
		t.Errorf("the stream holds %d results, want 2 (the second publication with the ID dropped)", n)
	}
	c := client(t, url, ClientOptions{Campaign: "twice", Target: "t", DB: db})
	if c.Recovered() != 1 {
		t.Errorf("recorded %d results, want 1", c.Recovered())
	}
	c.Close()
	// A tuner started again reads them again and records none.
	c2 := client(t, url, ClientOptions{Campaign: "twice", Target: "t", DB: db})
	if c2.Recovered() != 0 {
		t.Errorf("started again, recorded %d more", c2.Recovered())
	}
	if recs := records(t, dbPath); len(recs) != 1 || recs[0].Job != "job-0" || recs[0].Median != 1e-3 {
		t.Errorf("records %+v, want one of job-0", recs)
	}
}

// StartWorkers starts worker processes (here the test binary, which
// this package's initialization makes a worker): a tuning run over them
// finishes, and stop ends them.
func TestStartWorkers(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	url := startServer(t)
	stop, err := StartWorkers(url, 2, LocalWorkers{Target: "local", CacheDir: t.TempDir(), Command: []string{os.Args[0], "-test.run=^$"}})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := client(t, url, ClientOptions{Campaign: "local", Target: "local", Threads: 1})
	opts := testOptions
	opts.Trials, opts.Population, opts.Batch = 4, 4, 4
	res, err := autotune.Tune(context.Background(), rowsumTask(t), c.Builder(), c.Runner(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 4 || res.Best == nil || res.Best.Job == "" {
		t.Fatalf("records %v", traces(res.Records))
	}
	info, err := WaitForWorker(context.Background(), queues(t, url).Conn(), "local")
	if err != nil || info.Threads < 1 || info.VectorBits == 0 || info.CPU == "" && info.Arch == "amd64" {
		t.Errorf("a local worker announces %+v, %v", info, err)
	}
	stop()
}

// A job the workers refuse (a tuner of another version, settings out of
// range) fails with the reason instead of waiting: the tuner refuses its
// own before publishing, a worker answers one that came anyway.
func TestRefusedJobAnswered(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	url := startServer(t)
	target := DefaultTarget()
	worker(t, url, "w", target, t.TempDir(), t.TempDir(), 0)
	c := client(t, url, ClientOptions{Campaign: "refused", Target: target, Repeats: 5000})
	task := rowsumTask(t)
	sch, err := schedule.New(task.Func)
	if err != nil {
		t.Fatal(err)
	}
	cand := &autotune.Candidate{Sched: sch, Func: task.Func, Hash: "h"}
	if r := c.Runner().Run(context.Background(), task, []*autotune.Candidate{cand}, []autotune.BuildResult{{}}); r[0].Err == nil || !strings.Contains(r[0].Err.Error(), "out of range") {
		t.Errorf("a job of 5000 repeats: %v", r[0].Err)
	}
	// A job of a later version, published by hand.
	js := queues(t, url)
	payload := fmt.Sprintf(`{"v":%d,"kind":"measure","id":"future-0","campaign":"refused","func":"x","trace":{},"attempts":1,"new_field":true}`, Version+1)
	if _, err := js.Publish(context.Background(), jobSubject(KindMeasure, target, "refused"), []byte(payload)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refusal", func() bool {
		for _, r := range campaignResults(t, url, "refused") {
			if r.ID == "future-0" && strings.Contains(r.Err, "refused by worker w") {
				return true
			}
		}
		return false
	})
}

// A tuner started again whose campaign has jobs in flight for a target
// no worker serves gives up, naming the target, instead of waiting.
func TestInFlightForAbsentTarget(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	url := startServer(t)
	js := queues(t, url)
	ctx := context.Background()
	if _, err := js.Publish(ctx, jobSubject(KindMeasure, "gone", "stuck"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	_, err := NewClient(ctx, js.Conn(), ClientOptions{Campaign: "stuck", Target: "here", NoWorker: time.Second})
	if err == nil || !strings.Contains(err.Error(), "target gone") {
		t.Errorf("got %v, want an error naming target gone", err)
	}
}

// queues connects to the server at url (closed when the test ends) and
// makes loom's streams there.
func queues(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := Connect(url, "test", Security{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ensureStreams(context.Background(), js); err != nil {
		t.Fatal(err)
	}
	return js
}
