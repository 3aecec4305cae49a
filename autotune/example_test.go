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

// Tune a function of your own from Go, each piece set up by hand: a Task
// (the function, its sizes, the target and the search space), a
// LocalBuilder that compiles the candidates, and a ProcessRunner that
// runs each one in a worker process of its own, so that a crashing or
// hanging candidate is only recorded as failed. (NewLocal sets all of
// them up as loom tune does; see ExampleLocal.)
//
// The worker is your own program started again with
// LOOM_AUTOTUNE_WORKER=1 (WorkerEnv) in its environment: this package's
// initialization serves the measurement and exits before main runs, so
// the program needs no code for it. Here the test binary is the worker.
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

// Default decides a schedule without measuring anything: here a matrix
// multiply for a CPU with 16-lane vectors (AVX-512) and two threads. The
// decisions are in its trace, as a tuning run's are.
func ExampleDefault() {
	f, err := ast.Parse(`func mm(A: float32[64, 128], B: float32[128, 96], C: float32[64, 96]) {
  ScheduleBlock(root) {
    serial for (i, 0, 64) {
      serial for (j, 0, 96) {
        serial for (k, 0, 128) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 64), vj = spatial(0, 96), vk = reduce(0, 128))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0f
            }
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
          }
        }
      }
    }
  }
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := autotune.Default(f, autotune.Target{VectorLanes: 16, Threads: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, in := range s.Trace().Insts {
		if in.Kind == "sample_perfect_tile" || in.Kind == "sample_categorical" {
			fmt.Println(in.Kind, in.Decision)
		}
	}
	// The write cache after the second spatial level (choice 2); rows of
	// two vectors (32 of j's 96, choice 1), the rest of j outermost
	// (3); 8 rows of i in the register tile (8 x 2 = 16 accumulators),
	// 4 tiles deep, 2 for the threads; the whole reduction of 128 in the
	// register tile's loop; unroll limit 16; whole vectors.
	// Output:
	// sample_categorical [2]
	// sample_categorical [1]
	// sample_perfect_tile [3 1 1]
	// sample_perfect_tile [2 1 4 8]
	// sample_perfect_tile [1 128]
	// sample_categorical [1]
	// sample_categorical [0]
}

// Dispatch runs one function at any size with the schedule tuned for the
// bucket of sizes that holds it (loom tune -buckets records them), and
// the default schedule elsewhere. Here two buckets' records, made by hand
// from sampled schedules, stand for a tuning run's.
func ExampleDispatch() {
	f, err := ast.Parse(`func scale[N: int32](X: float32[N, 8], Y: float32[N, 8]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (j, 0, 8) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, N), vj = spatial(0, 8))
          reads(X[vi, vj])
          writes(Y[vi, vj])
          Y[vi, vj] = X[vi, vj] * 2.0f
        }
      }
    }
  }
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "dispatch")
	defer os.RemoveAll(dir)
	db, _ := autotune.OpenDatabase(dir + "/db.jsonl")
	tg := autotune.Target{VectorLanes: 16, Threads: 1}
	space := &autotune.Space{Rules: autotune.DefaultRules(), Target: tg}
	for i, b := range [][2]int64{{1, 15}, {16, 4096}} {
		s, err := space.Sample(f, uint64(i+1))
		if err != nil {
			fmt.Println(err)
			return
		}
		db.Append(&autotune.Record{Workload: ast.Hash(f).String(), Name: "scale", Target: "cpu", Trace: s.Trace(),
			Median: 1e-6, Seconds: []float64{1e-6}, Bucket: map[string][2]int64{"N": b}, Sizes: map[string]int64{"N": b[0]}})
	}
	cache, _ := native.NewCache(dir + "/cache")
	d, err := autotune.DispatchFromDatabase(f, db, "cpu", tg, cache, llvm.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range []int64{3, 100, 5000} {
		x, y := make([]float32, 8*n), make([]float32, 8*n)
		x[8*n-1] = 1.5
		if err := d.Run(map[string]int64{"N": n}, map[string]any{"X": x, "Y": y}); err != nil {
			fmt.Println(err)
			return
		}
		_, bucket, _ := d.Kernel(map[string]int64{"N": n})
		from := "the default"
		if bucket != nil {
			from = fmt.Sprintf("the bucket N=%d..%d", bucket["N"][0], bucket["N"][1])
		}
		fmt.Printf("N=%d: %s, Y[N-1][7] = %g\n", n, from, y[8*n-1])
	}
	// Output:
	// N=3: the bucket N=1..15, Y[N-1][7] = 3
	// N=100: the bucket N=16..4096, Y[N-1][7] = 3
	// N=5000: the default, Y[N-1][7] = 3
}

// Refine is Default refined by the cost model without running anything:
// the default and mutants of it scored by a model (here the one loom
// ships), the default kept unless a mutant scores 1.25x above it.
func ExampleRefine() {
	f, err := ast.Parse(`func rowsum[R: int32](X: float32[R, 96], S: float32[R]) {
  ScheduleBlock(root) {
    serial for (i, 0, R) {
      serial for (k, 0, 96) {
        ScheduleBlock(S) {
          vi, vk = axis.bind(i, k)
          axis.domain(vi = spatial(0, R), vk = reduce(0, 96))
          reads(S[vi], X[vi, vk])
          writes(S[vi])
          init {
            S[vi] = 0.0f
          }
          S[vi] = S[vi] + X[vi, vk]
        }
      }
    }
  }
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := autotune.Refine(f, autotune.Target{VectorLanes: 16, Threads: 1}, autotune.RefineOptions{Candidates: 8, Sizes: map[string]int64{"R": 4096}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("scored:", r.Ranked, "schedules; the default kept:", r.FromDefault, "; score >= the default's:", r.Score >= r.DefaultScore)
	// Output:
	// scored: 5 schedules; the default kept: true ; score >= the default's: true
}

// Tune the kernels of a model together: the same kernel twice is one
// task of weight 2, every task's default schedule is measured first, and
// the rounds that follow go where they are expected to cut the model's
// time most. With State and ModelFile set, running the same code again
// continues the run instead of starting over.
func ExampleTuneModel() {
	parse := func(src string) *ast.Func {
		f, err := ast.Parse(src)
		if err != nil {
			panic(err)
		}
		return f
	}
	rowsum := parse(`func rowsum(X: float32[64, 256], Y: float32[64]) {
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
	scale := parse(`func scale(X: float32[64, 256], Y: float32[64, 256]) {
  ScheduleBlock(root) {
    serial for (i, 0, 64) {
      serial for (j, 0, 256) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 64), vj = spatial(0, 256))
          reads(X[vi, vj])
          writes(Y[vi, vj])
          Y[vi, vj] = X[vi, vj] * 2.0f
        }
      }
    }
  }
}`)
	dir, err := os.MkdirTemp("", "tune-model-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cache, err := native.NewCache(dir)
	if err != nil {
		panic(err)
	}
	const threads = 1
	task := func(name string, f *ast.Func) *autotune.Task {
		return &autotune.Task{
			Name: name, Func: f, Target: autotune.TargetKey(llvm.Host(), threads),
			Space: &autotune.Space{Rules: autotune.DefaultRules(), Target: autotune.HostTarget(threads)},
		}
	}
	// The model runs scale, rowsum, then scale again.
	tasks := autotune.DistinctTasks([]*autotune.Task{task("scale", scale), task("rowsum", rowsum), task("scale again", scale)})
	for _, t := range tasks {
		fmt.Printf("%s x%d\n", t.Task.Name, t.Weight)
	}
	builder := &autotune.LocalBuilder{Cache: cache, Parallel: 2}
	runner := &autotune.ProcessRunner{
		Command:  []string{os.Args[0], "-test.run=^$"},
		Env:      []string{"LOOM_AUTOTUNE_WORKER=1"},
		CacheDir: cache.Dir, Threads: threads, Timeout: time.Minute,
	}
	db, err := autotune.OpenDatabase(dir + "/tuning.jsonl")
	if err != nil {
		panic(err)
	}
	res, err := autotune.TuneModel(context.Background(), tasks, builder, runner, autotune.ModelOptions{
		Options: autotune.Options{Trials: 6, Population: 4, Batch: 2, Seed: 1, DB: db},
		// Budget: 30 * time.Minute limits the time instead (or as well).
		State:     dir + "/tuning.jsonl.state.json",
		ModelFile: dir + "/tuning.jsonl.model.json",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("trials:", res.Trials)
	measured := 0
	for _, t := range res.Tasks {
		if t.Best != nil {
			measured++
		}
	}
	fmt.Println("kernels with a time:", measured)
	fmt.Println("tuned no slower than the defaults:", res.Estimate <= res.Default)
	// Output:
	// scale x2
	// rowsum x1
	// trials: 6
	// kernels with a time: 2
	// tuned no slower than the defaults: true
}

// Tune a function in one call: NewLocal sets up the builder, the worker
// processes (this program started again, served before main by this
// package's initialization), the database and loom tune's defaults.
func ExampleLocal() {
	f, err := ast.Parse(`func double(X: float32[4096], Y: float32[4096]) {
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
	dir, err := os.MkdirTemp("", "local-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// DB and CacheDir default to loom's cache directory, as loom tune's.
	l, err := autotune.NewLocal(autotune.LocalOptions{Threads: 1, Trials: 4, DB: dir + "/tuning.jsonl", CacheDir: dir})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	res, err := l.Tune(context.Background(), "double", f, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("found a correct kernel:", res.Best != nil)
	// Output:
	// found a correct kernel: true
}
