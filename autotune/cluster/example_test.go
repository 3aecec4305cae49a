package cluster_test

import (
	"context"
	"fmt"
	"os"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/autotune/cluster"
	"github.com/loom-go/loom/codegen/llvm"
)

// Tune through a work queue: a server started in process, one worker in
// process too (on other machines it is `loom worker -nats URL`), and the
// search's builder and runner taken from the client. The worker measures
// each candidate in a process of its own: this program started again
// with autotune.WorkerEnv set (here the test binary).
func ExampleClient() {
	dir, _ := os.MkdirTemp("", "cluster-example")
	defer os.RemoveAll(dir)
	srv, url, err := cluster.StartServer(dir + "/nats")
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, err := cluster.Connect(url, "example", cluster.Security{})
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w := &cluster.Worker{Target: "example", CacheDir: dir + "/cache"}
	defer w.Close()
	go w.Run(ctx, nc)

	c, err := cluster.NewClient(ctx, nc, cluster.ClientOptions{Campaign: "example", Target: "example", Threads: 1})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	f, err := ast.Parse(`func scale(X: float32[4096], Y: float32[4096]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4096) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 4096))
        reads(X[vi])
        writes(Y[vi])
        Y[vi] = X[vi] * 2.0f
      }
    }
  }
}`)
	if err != nil {
		panic(err)
	}
	task := &autotune.Task{Name: "scale", Func: f, Target: autotune.TargetKey(llvm.Host(), 1),
		Space: &autotune.Space{Rules: autotune.DefaultRules(), Target: autotune.HostTarget(1)}}
	res, err := autotune.Tune(ctx, task, c.Builder(), c.Runner(), autotune.Options{Trials: 4, Population: 4, Batch: 4, Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println("trials:", len(res.Records))
	fmt.Println("measured through the queue:", res.Best != nil && res.Best.Job != "")
	// Output:
	// trials: 4
	// measured through the queue: true
}
