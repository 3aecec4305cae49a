package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/autotune/cluster"
)

// queueFlags are the flags of loom tune and loom worker that reach a NATS
// server.
type queueFlags struct {
	url, target, name   string
	creds, nkey         string
	ca, cert, key       string
	workers             int
	verbose, asJSON     bool
	builds              int
	deadline            time.Duration
	cacheDir            string
	forTune, haveTarget bool
}

func (q *queueFlags) register(fs *flag.FlagSet, forTune bool) {
	q.forTune = forTune
	if forTune {
		fs.StringVar(&q.url, "nats", "", "build and measure the candidates through the NATS JetStream server at `URL` (nats://host:4222, tls://host:4222, user:password@ or a token in it; several comma separated), on the `loom worker` processes of the target, on any machines; \"embedded\" starts a server in this process (its streams kept beside -db, in DB.nats) and -workers local workers. The kernels are then tuned as a model (-model): a run stopped at any moment, kill -9 included, and started again with the same -db continues it, measuring nothing twice")
		fs.IntVar(&q.workers, "workers", 0, "with -nats embedded, start `N` worker processes on this machine (default 1); with a server URL, as many local workers besides the remote ones")
		fs.StringVar(&q.target, "nats-target", "", "with -nats, the `NAME` of the machines that build and measure (a worker's -target): candidates are searched for that kind of machine as its workers announce it (vector width, caches); default: machines like this one")
	} else {
		fs.StringVar(&q.url, "nats", "", "the NATS JetStream server to take jobs from, `URL` as loom tune -nats takes it (required)")
		fs.StringVar(&q.target, "target", "", "the `NAME` of the jobs this worker takes (letters, digits, '-', '_'); default: this machine's kind, its architecture, vector width, hardware threads and a hash of its CPU model and features, the name loom tune -nats uses for machines like the one it runs on")
		fs.StringVar(&q.name, "name", "", "the worker's `NAME` in announcements and results (default: host name and process id)")
		fs.IntVar(&q.builds, "builds", 0, "build jobs run at once (default: one per core); measurements run one at a time per machine, never beside a build")
		fs.DurationVar(&q.deadline, "deadline", 30*time.Second, "a job in hand whose worker stops answering for this long goes to another worker")
		fs.StringVar(&q.cacheDir, "cache", "", "where kernels are compiled and kept (default: loom's cache directory); workers of one machine share it, and with it the lock that keeps their measurements apart")
		fs.BoolVar(&q.verbose, "v", false, "print a line per job")
		fs.BoolVar(&q.asJSON, "json", false, "print one JSON line per job done (kind, id, seconds it took, error)")
	}
	fs.StringVar(&q.creds, "creds", "", "a NATS credentials `FILE` (JWT and nkey seed) to authenticate with")
	fs.StringVar(&q.nkey, "nkey", "", "a `FILE` holding an nkey seed to authenticate with")
	fs.StringVar(&q.ca, "tls-ca", "", "a PEM `FILE` of the authorities the server's certificate must chain to (implies TLS)")
	fs.StringVar(&q.cert, "tls-cert", "", "a client certificate `FILE` (PEM), for servers that require one (implies TLS)")
	fs.StringVar(&q.key, "tls-key", "", "the client certificate's key `FILE` (PEM)")
}

func (q *queueFlags) security() cluster.Security {
	return cluster.Security{Creds: q.creds, NKey: q.nkey, CA: q.ca, Cert: q.cert, Key: q.key}
}

// runClusterWorker is loom worker with flags: a worker of the tuning
// queues.
func runClusterWorker(args []string, stdout, stderr io.Writer) int {
	var q queueFlags
	fs := newFlags("worker", "-nats URL [-target NAME] [flags]", "take build and measurement jobs of loom tune -nats from a NATS JetStream server, until interrupted", stderr)
	q.register(fs, false)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if q.url == "" {
		fmt.Fprintln(stderr, "loom worker: -nats URL is required")
		return 2
	}
	w := &cluster.Worker{Name: q.name, Target: q.target, CacheDir: q.cacheDir, Builds: q.builds, Deadline: q.deadline}
	if q.verbose {
		w.Log = stderr
	}
	if q.asJSON {
		var mu sync.Mutex
		enc := json.NewEncoder(stdout)
		w.OnJob = func(job *cluster.Job, res *cluster.Result, took time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			enc.Encode(struct {
				Kind    string  `json:"kind"`
				ID      string  `json:"id"`
				Seconds float64 `json:"seconds"`
				Err     string  `json:"error,omitempty"`
			}{job.Kind, job.ID, took.Seconds(), res.Err})
		}
	}
	fmt.Fprintf(stderr, "loom worker: taking jobs of target %s from %s\n", orDefault(q.target, cluster.DefaultTarget()), cluster.Redact(q.url))
	if err := cluster.ServeWorker(q.url, q.security(), w); err != nil {
		fmt.Fprintln(stderr, "loom worker:", err)
		return 1
	}
	return 0
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// useQueue makes t build and measure through the queues of q: a server
// started here for "embedded", local workers when asked. Without
// -threads (threadsFlag 0), kernels run on as many threads as the
// measuring machines have. It returns what stops them.
func (t *tuner) useQueue(q *queueFlags, dbPath string, threadsFlag int, stderr io.Writer) (stop func(), err error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stopAll()
		}
	}()
	url := q.url
	workers := q.workers
	if url == "embedded" {
		// The streams beside the database: a run started again with the
		// same -db finds its campaign's jobs and results.
		s, surl, err := cluster.StartServer(dbPath + ".nats")
		if err != nil {
			return nil, err
		}
		stops = append(stops, s.Shutdown)
		url = surl
		workers = max(workers, 1)
	}
	if workers > 0 {
		ws, err := cluster.StartWorkers(url, workers, cluster.LocalWorkers{Target: q.target, Command: []string{os.Args[0]}, Security: q.security()})
		if err != nil {
			return nil, err
		}
		stops = append(stops, ws)
	}
	nc, err := cluster.Connect(url, "loom tune", q.security())
	if err != nil {
		return nil, err
	}
	stops = append(stops, nc.Close)
	campaign, resumed, finish, err := cluster.Campaign(dbPath)
	if err != nil {
		return nil, err
	}
	if resumed {
		fmt.Fprintf(stderr, "loom tune: continuing campaign %s (its jobs and results are on the server)\n", campaign)
	}
	target := q.target
	if target == "" {
		target = cluster.DefaultTarget()
	} else if target != cluster.DefaultTarget() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		info, err := cluster.WaitForWorker(ctx, nc, target)
		if err != nil {
			return nil, err
		}
		if threadsFlag <= 0 {
			t.threads = info.Threads // one per hardware thread of the machines that measure
		}
		t.target = autotune.Target{VectorLanes: info.VectorBits / 32, Threads: t.threads, Caches: info.Caches}
		// Keyed as TargetKey keys a CPU, with the target's name for
		// the CPU and its announced vector width.
		t.targetKey = fmt.Sprintf("%s/%s/%dbit/%dT", info.Arch, target, info.VectorBits, t.threads)
	}
	c, err := cluster.NewClient(context.Background(), nc, cluster.ClientOptions{
		Campaign: campaign, Target: target, Threads: t.threads, Timeout: t.timeout, DB: t.opts.DB, Log: stderr,
	})
	if err != nil {
		return nil, err
	}
	stops = append(stops, func() { c.Close() })
	t.builder, t.runner = c.Builder(), c.Runner()
	t.finishCampaign = finish
	return stopAll, nil
}
