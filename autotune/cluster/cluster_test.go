package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/nats-io/nats.go/jetstream"
)

// The test binary is also the tests' worker and tuner processes: with
// testWorkerEnv set it runs a worker with fake timings, with testTunerEnv
// a tuning run.
const (
	testWorkerEnv = "LOOM_CLUSTER_TEST_WORKER" // url,name,target,cache,busy-dir,sleep-ms[,die]
	testTunerEnv  = "LOOM_CLUSTER_TEST_TUNER"  // url,db,cache,trials
)

func TestMain(m *testing.M) {
	if v := os.Getenv(testWorkerEnv); v != "" {
		p := strings.Split(v, ",")
		sleep, _ := strconv.Atoi(p[5])
		die := len(p) > 6 && p[6] == "die"
		w := &Worker{Name: p[1], Target: p[2], CacheDir: p[3], Builds: 1, Deadline: 1500 * time.Millisecond,
			Timing: func(f *ast.Func, secs []float64) []float64 {
				if die {
					os.Exit(3) // the worker dies in the middle of every measurement
				}
				busy := filepath.Join(p[4], p[1]+".busy")
				os.WriteFile(busy, nil, 0o644)
				time.Sleep(time.Duration(sleep) * time.Millisecond)
				os.Remove(busy)
				return fakeSeconds(f, secs)
			}}
		if err := ServeWorker(p[0], Security{}, w); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if v := os.Getenv(testTunerEnv); v != "" {
		p := strings.Split(v, ",")
		trials, _ := strconv.Atoi(p[3])
		if err := tuneOverQueue(p[0], p[1], trials); err != nil {
			fmt.Fprintln(os.Stderr, "tuner:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeSeconds are a measurement's times as a function of the kernel alone:
// the same on every machine and every run.
func fakeSeconds(f *ast.Func, _ []float64) []float64 {
	h := fnv.New64a()
	h.Write([]byte(ast.Hash(f).String()))
	base := 1e-3 * (1 + float64(h.Sum64()%1000)/1000)
	return []float64{base * 0.99, base, base * 1.01}
}

const rowsum = `func rowsum(X: float32[64, 256], Y: float32[64]) {
  ScheduleBlock(root) {
    serial for (i, 0, 64) {
      serial for (k, 0, 256) {
        ScheduleBlock(Y) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, 64), vk = reduce(0, 256))
          reads(Y[vi], X[vi, vk])
          writes(Y[vi])
          init {
            Y[vi] = 0.0f
          }
          Y[vi] = Y[vi] + X[vi, vk]
        }
      }
    }
  }
}`

func rowsumTask(t testing.TB) *autotune.Task {
	f, err := ast.Parse(rowsum)
	if err != nil {
		t.Fatal(err)
	}
	return &autotune.Task{Name: "rowsum", Func: f, Target: autotune.TargetKey(llvm.Host(), 1),
		Space: &autotune.Space{Rules: autotune.DefaultRules(), Target: autotune.HostTarget(1)}}
}

func startServer(t *testing.T) string {
	t.Helper()
	s, url, err := StartServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return url
}

// worker starts a worker process with fake timings that sleep sleepMS
// per measurement, and marks it busy (busyDir/NAME.busy) meanwhile.
func worker(t *testing.T, url, name, target, cache, busyDir string, sleepMS int) *exec.Cmd {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), testWorkerEnv+"="+strings.Join([]string{url, name, target, cache, busyDir, strconv.Itoa(sleepMS)}, ","))
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// testOptions: two rounds of four, the second the model's choice among
// mutants of the first (a third round repeats that path; each trial is a
// compile, and a measurement in a process of its own).
var testOptions = autotune.Options{Trials: 8, Population: 8, Batch: 4, Seed: 7, Confirm: 0}

// fakeRunner times candidates as the test workers do.
type fakeRunner struct{ autotune.Runner }

func (r fakeRunner) Run(ctx context.Context, task *autotune.Task, cands []*autotune.Candidate, builds []autotune.BuildResult) []autotune.RunResult {
	out := r.Runner.Run(ctx, task, cands, builds)
	for i := range out {
		if out[i].Err == nil {
			out[i].Seconds = fakeSeconds(cands[i].Func, out[i].Seconds)
		}
	}
	return out
}

func client(t *testing.T, url string, o ClientOptions) *Client {
	t.Helper()
	nc, err := Connect(url, "test tuner", Security{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := NewClient(context.Background(), nc, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func traces(recs []*autotune.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%s %v %q", r.Trace, r.Seconds, r.Error))
	}
	return out
}

// Three worker processes give the records a local run gives, trial by
// trial (fixed seed, fake timings); a worker of another target takes no
// job.
func TestSameRecordsAsLocal(t *testing.T) {
	t.Parallel() // mostly waiting on other processes
	url := startServer(t)
	cache, busy := t.TempDir(), t.TempDir()
	target := DefaultTarget()
	for i := range 3 {
		worker(t, url, fmt.Sprintf("w%d", i), target, cache, busy, 0)
	}
	worker(t, url, "elsewhere", "another-kind", cache, busy, 0)
	c := client(t, url, ClientOptions{Campaign: "same", Target: target, Threads: 1, Timeout: time.Minute})
	remote, err := autotune.Tune(context.Background(), rowsumTask(t), c.Builder(), c.Runner(), testOptions)
	if err != nil {
		t.Fatal(err)
	}

	// The local run builds in the workers' cache directory: it finds
	// there the kernels they built (the same functions, so the same
	// objects) instead of compiling each again.
	lc, err := native.NewCache(cache)
	if err != nil {
		t.Fatal(err)
	}
	pr := &autotune.ProcessRunner{Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{autotune.WorkerEnv + "=1"}, CacheDir: lc.Dir, Threads: 1}
	defer pr.Close()
	local, err := autotune.Tune(context.Background(), rowsumTask(t), &autotune.LocalBuilder{Cache: lc, Parallel: 2}, fakeRunner{pr}, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	got, want := traces(remote.Records), traces(local.Records)
	if len(got) != testOptions.Trials || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records over the queue differ from a local run's:\n%s\nlocal:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range remote.Records {
		if r.Job == "" || !r.OK() {
			t.Errorf("record %d: job %q, error %q", r.Trial, r.Job, r.Error)
		}
	}
	for _, r := range campaignResults(t, url, "same") {
		if r.Worker == "elsewhere" {
			t.Errorf("the worker of another target did job %s", r.ID)
		}
	}
}

// campaignResults reads every result published for a campaign.
func campaignResults(t *testing.T, url, campaign string) []Result {
	t.Helper()
	nc, err := Connect(url, "test reader", Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	s, err := js.Stream(ctx, resultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(resultSubject(campaign)))
	if err != nil {
		t.Fatal(err)
	}
	n := uint64(0)
	for _, k := range info.State.Subjects {
		n += k
	}
	cons, err := js.OrderedConsumer(ctx, resultStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{resultSubject(campaign)}})
	if err != nil {
		t.Fatal(err)
	}
	var out []Result
	for range n {
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var r Result
		if err := json.Unmarshal(m.Data(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}
