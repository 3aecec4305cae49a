package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/schedule"
	"github.com/loom-go/loom/tools/loom/internal/bench"
)

// TestReplayRebuildsTuned: for every built-in workload, a short search
// records its candidates as loom tune does (sampled, mutated, finished;
// timed by a stand-in runner that builds nothing); then loom replay
// prints the best record's schedule as Go, and one program made of the
// printed functions, run with go run, rebuilds every workload's function
// with the structural hash of the function loom lower prints for the
// record, and with the record's trace. loom bench -schedule tuned builds
// the same function (Record.Apply).
func TestReplayRebuildsTuned(t *testing.T) {
	if testing.Short() {
		t.Skip("samples every workload at its benchmark shape and runs a program: skipped in short mode")
	}
	longInParallel(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	// What is checked here is the replay, at the workloads' benchmark
	// shapes, where the translation validator takes minutes a candidate
	// (conv2d's); the other tests run it.
	defer schedule.SetValidation(schedule.SetValidation(false))
	db := filepath.Join(t.TempDir(), "db.jsonl")
	d, err := autotune.OpenDatabase(db)
	if err != nil {
		t.Fatal(err)
	}
	const threads = "1"
	key := autotune.TargetKey(llvm.Host(), 1)
	type want struct {
		hash  string // of loom lower's function after the schedule
		trace string // the record's, as JSON
	}
	wants := map[string]want{}
	var program strings.Builder
	var table strings.Builder
	for _, w := range bench.Workloads {
		c, err := w.Case(w.Defaults())
		if err != nil {
			t.Fatal(err)
		}
		task := &autotune.Task{
			Name: w.Name, Func: c.Func, Sizes: c.Sizes, Target: key,
			// 512-bit vectors and two threads, whatever this machine
			// has: every rule's choice, vector widths included.
			Space: &autotune.Space{Rules: autotune.DefaultRules(), Target: autotune.Target{VectorLanes: 16, Threads: 2}},
		}
		// Two rounds: the second measures mutants, replayed and finished
		// anew.
		res, err := autotune.Tune(context.Background(), task, nopBuilder{}, hashRunner{}, autotune.Options{Trials: 4, Population: 2, Batch: 2, Mutants: 4, Seed: 1, DB: d, Version: version})
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		if res.Best == nil || len(res.Internal) > 0 {
			t.Fatalf("%s: best %v, %d rejected by loom's own checks", w.Name, res.Best, len(res.Internal))
		}
		if !res.Best.Trace.HasPostproc() {
			t.Errorf("%s: the record's trace has no post-processing:\n%s", w.Name, res.Best.Trace)
		}
		args := []string{"-workload", w.Name, "-threads", threads, "-db", db}
		code, out, errs := runLoom(t, append([]string{"lower"}, args...)...)
		if code != 0 {
			t.Fatalf("%s: lower: exit %d: %s", w.Name, code, errs)
		}
		_, after, ok := strings.Cut(out, "// "+w.Name+" after:\n")
		if !ok {
			t.Fatalf("%s: lower printed no function after the schedule:\n%s", w.Name, out)
		}
		lowered, err := ast.Parse(after)
		if err != nil {
			t.Fatalf("%s: lower's function does not parse: %v\n%s", w.Name, err, after)
		}
		// The record loom lower chose is the search's best: its trace
		// replayed is the function that was measured.
		best, err := res.Best.Apply(c.Func)
		if err != nil {
			t.Fatal(err)
		}
		if ast.Hash(best) != ast.Hash(lowered) {
			t.Fatalf("%s: loom lower prints another function than the best record's:\n%s\nwant\n%s", w.Name, after, ast.Print(best))
		}
		trace, _ := json.Marshal(res.Best.Trace)
		wants[w.Name] = want{ast.Hash(lowered).String(), string(trace)}

		code, out, errs = runLoom(t, append([]string{"replay"}, args...)...)
		if code != 0 {
			t.Fatalf("%s: replay: exit %d: %s", w.Name, code, errs)
		}
		if !strings.Contains(out, "func apply(sch *schedule.Schedule) error {") {
			t.Fatalf("%s: replay printed no Go function:\n%s", w.Name, out)
		}
		// What a person would write: each block looked up once, no
		// sampling calls (their decisions are in the primitives), no
		// variable kept alive by "_ = x".
		lookups := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			if _, call, ok := strings.Cut(line, "sch.GetBlock("); ok {
				if lookups[call] {
					t.Errorf("%s: replay looks the block up again: %s", w.Name, line)
				}
				lookups[call] = true
			}
			if strings.Contains(line, "sch.Sample") || strings.HasPrefix(strings.TrimSpace(line), "_ = ") {
				t.Errorf("%s: replay prints %q", w.Name, line)
			}
		}
		fn := "apply_" + w.Name
		program.WriteString(strings.Replace(out, "func apply(", "func "+fn+"(", 1) + "\n")
		fmt.Fprintf(&table, "\t{%q, %s},\n", w.Name, fn)
	}

	// The program, in a directory of the module (it imports its internal
	// packages), ignored by ./... for its leading underscore.
	dir, err := os.MkdirTemp(".", "_replay")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	src := `package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/tools/loom/internal/bench"
	"github.com/loom-go/loom/schedule"
)

` + program.String() + `
func main() {
	for _, w := range []struct {
		name  string
		apply func(*schedule.Schedule) error
	}{
` + table.String() + `	} {
		wl, err := bench.Lookup(w.name)
		if err != nil {
			panic(err)
		}
		c, err := wl.Case(wl.Defaults())
		if err != nil {
			panic(err)
		}
		sch, err := schedule.New(c.Func)
		if err != nil {
			panic(err)
		}
		if err := w.apply(sch); err != nil {
			fmt.Fprintln(os.Stderr, w.name+":", schedule.Explain(err))
			os.Exit(1)
		}
		trace, _ := json.Marshal(sch.Trace())
		fmt.Printf("%s %s %s\n", w.name, ast.Hash(sch.Func()), trace)
	}
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "run", "./"+filepath.Base(dir))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go run: %v\n%s\nthe program:\n%s", err, stderr.String(), src)
	}
	got := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		name, rest, _ := strings.Cut(line, " ")
		hash, trace, _ := strings.Cut(rest, " ")
		w, ok := wants[name]
		if !ok {
			t.Fatalf("the program printed %q", line)
		}
		got[name] = true
		if hash != w.hash {
			t.Errorf("%s: the printed Go builds a function of hash %.12s, loom lower prints %.12s", name, hash, w.hash)
		}
		var rebuilt, recorded schedule.Trace
		if err := json.Unmarshal([]byte(trace), &rebuilt); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(w.trace), &recorded); err != nil {
			t.Fatal(err)
		}
		if len(rebuilt.Insts) >= len(recorded.Insts) {
			t.Errorf("%s: the printed Go makes %d steps, the record %d", name, len(rebuilt.Insts), len(recorded.Insts))
		}
	}
	if len(got) != len(bench.Workloads) {
		t.Errorf("the program rebuilt %d workloads of %d:\n%s", len(got), len(bench.Workloads), stdout.String())
	}
}

// nopBuilder builds nothing.
type nopBuilder struct{}

func (nopBuilder) Build(_ context.Context, _ *autotune.Task, cands []*autotune.Candidate) []autotune.BuildResult {
	return make([]autotune.BuildResult, len(cands))
}

// hashRunner times a candidate by its structural hash: a deterministic
// time, different for different functions.
type hashRunner struct{}

func (hashRunner) Run(_ context.Context, _ *autotune.Task, cands []*autotune.Candidate, _ []autotune.BuildResult) []autotune.RunResult {
	out := make([]autotune.RunResult, len(cands))
	for i, c := range cands {
		h := fnv.New32a()
		h.Write([]byte(c.Hash))
		out[i].Seconds = []float64{1e-3 * (1 + float64(h.Sum32()%1000)/1000)}
	}
	return out
}

// startFastest times the unscheduled function (Candidate.Hash empty, as
// tune measures the start) faster than every candidate of the search.
type startFastest struct{}

func (startFastest) Run(_ context.Context, _ *autotune.Task, cands []*autotune.Candidate, _ []autotune.BuildResult) []autotune.RunResult {
	out := make([]autotune.RunResult, len(cands))
	for i, c := range cands {
		out[i].Seconds = []float64{2e-3}
		if c.Hash == "" {
			out[i].Seconds = []float64{1e-3}
		}
	}
	return out
}

// TestTuneKeepsAFasterStart: when no candidate beats the function as
// written, tune keeps (and would write out) the function as written and
// says so, never a slower kernel; and the progress bar's last best is
// the figure tune reports.
func TestTuneKeepsAFasterStart(t *testing.T) {
	j, tu := smallTune(startFastest{}, 4, 2)
	c := j.Case
	var bar strings.Builder
	tu.opts.Progress = autotune.PrintProgressWith(&bar, j.Name, j.speed)
	sum, best, err := tu.tune(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.KeptStart || best != c.Func || sum.BestMs != 1 || sum.Speedup != 1 {
		t.Errorf("kept_start %v, best_ms %v, speedup %v, the function kept is the start: %v", sum.KeptStart, sum.BestMs, sum.Speedup, best == c.Func)
	}
	if !strings.Contains(bar.String(), "confirming the leaders: round 2/2") {
		t.Errorf("the progress bar does not show the confirmation rounds:\n%s", bar.String())
	}
	if strings.Contains(bar.String(), "\r") || !strings.HasSuffix(bar.String(), "\n") {
		t.Errorf("the progress, not on a terminal, is not plain lines: %q", bar.String())
	}
}

// TestProgressAgreesWithResult: after the confirmation rounds the
// progress bar's best is the best tune reports.
func TestProgressAgreesWithResult(t *testing.T) {
	j, tu := smallTune(hashRunner{}, 6, 3)
	var last autotune.Progress
	tu.opts.Progress = func(p autotune.Progress) { last = p }
	sum, _, err := tu.tune(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	if sum.KeptStart {
		t.Skip("the start was fastest")
	}
	if last.Round == 0 || last.Best*1e3 != sum.BestMs {
		t.Errorf("the last progress (round %d) shows %g ms; tune reports %g ms", last.Round, last.Best*1e3, sum.BestMs)
	}
}

// smallTune is a tuner of a 16³ gemm with a stand-in runner: trials
// candidates, the confirm fastest measured again.
func smallTune(r autotune.Runner, trials, confirm int) (*job, *tuner) {
	c := workload.Matmul(16, 16, 16)
	return &job{Name: "gemm", Shape: "16x16x16", Case: c, Flops: 2 * 16 * 16 * 16}, &tuner{
		threads: 1, builder: nopBuilder{}, runner: r,
		opts:      autotune.Options{Trials: trials, Population: trials, Batch: trials / 2, Seed: 1, Confirm: confirm},
		rules:     autotune.DefaultRules(),
		target:    autotune.Target{VectorLanes: 8, Threads: 1},
		targetKey: "test",
	}
}
