package autotune_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
)

// Tune a function of your own from Go: a Task (the function, its sizes,
// the target and the search space), a LocalBuilder that compiles the
// candidates, and a ProcessRunner that runs each one in a worker process
// of its own, so that a crashing or hanging candidate is only recorded as
// failed.
//
// The worker is your own program started again: its main serves one
// measurement when asked, before anything else:
//
//	func main() {
//		if len(os.Args) > 1 && os.Args[1] == "worker" {
//			if err := autotune.ServeWorker(os.Stdin, os.Stdout); err != nil {
//				fmt.Fprintln(os.Stderr, err)
//				os.Exit(1)
//			}
//			return
//		}
//		...
//	}
//
// with ProcessRunner.Command set to []string{exe, "worker"} (exe from
// os.Executable). Here the test binary serves it (see TestMain) when
// LOOM_AUTOTUNE_WORKER is set.
func ExampleTune() {
	f, err := ast.Parse(`func rowsum(X: float32[64, 256], Y: float32[64]) {
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
}`)
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "tune-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cache, err := native.NewCache(dir) // compiled kernels, shared with the workers
	if err != nil {
		panic(err)
	}
	const threads = 1
	task := &autotune.Task{
		Name:   "rowsum",
		Func:   f,
		Target: autotune.TargetKey(llvm.Host(), threads), // as records name it
		Space:  &autotune.Space{Rules: autotune.DefaultRules(), Target: autotune.HostTarget(threads)},
	}
	builder := &autotune.LocalBuilder{Cache: cache, Parallel: 2}
	runner := &autotune.ProcessRunner{
		Command:  []string{os.Args[0], "-test.run=^$"},
		Env:      []string{"LOOM_AUTOTUNE_WORKER=1"},
		CacheDir: cache.Dir, Threads: threads, Timeout: time.Minute,
	}
	db, err := autotune.OpenDatabase(dir + "/tuning.jsonl") // optional: keeps every record
	if err != nil {
		panic(err)
	}
	res, err := autotune.Tune(context.Background(), task, builder, runner,
		autotune.Options{Trials: 4, Population: 4, Batch: 4, Seed: 1, DB: db})
	if err != nil {
		panic(err)
	}
	fmt.Println("trials:", len(res.Records))
	fmt.Println("found a correct kernel:", res.Best != nil)
	// The best record replays on the function: the tuned schedule.
	best, err := res.Best.Apply(f)
	if err != nil {
		panic(err)
	}
	k, err := native.Compile(best, llvm.Options{})
	if err != nil {
		panic(err)
	}
	x, y := make([]float32, 64*256), make([]float32, 64)
	for i := range x {
		x[i] = 1
	}
	if err := k.Run(nil, map[string]any{"X": x, "Y": y}); err != nil {
		panic(err)
	}
	fmt.Println("Y[0] =", y[0])
	// Output:
	// trials: 4
	// found a correct kernel: true
	// Y[0] = 256
}
