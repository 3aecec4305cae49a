package cluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/schedule"
)

// BenchmarkQueueRoundTrip is the queue's own cost per job: a build job
// published, taken by a worker, answered and its result read, for a job
// whose work is nothing (its schedule replays to another function than it
// names, which the worker finds at once).
func BenchmarkQueueRoundTrip(b *testing.B) {
	s, url, err := StartServer(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Shutdown()
	nc, err := Connect(url, "bench", Security{})
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &Worker{Name: "bench", Target: "bench", CacheDir: b.TempDir(), Builds: 1}
	go w.Run(ctx, nc)
	c, err := NewClient(ctx, nc, ClientOptions{Campaign: "bench", Target: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	task := rowsumTask(b)
	sch, err := schedule.New(task.Func)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		cand := &autotune.Candidate{Sched: sch, Func: task.Func, Hash: fmt.Sprint("bench-", i)}
		if r := c.Builder().Build(ctx, task, []*autotune.Candidate{cand}); r[0].Err == nil {
			b.Fatal("a job naming another function built")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/job")
}
