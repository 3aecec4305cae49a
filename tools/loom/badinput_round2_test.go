package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-go/loom/codegen/llvm/native"
)

// checkOneLine fails the test unless a command exited non-zero with one
// line of error that says want, without a crash.
func checkOneLine(t *testing.T, code int, stderr, want string) {
	t.Helper()
	if code == 0 {
		t.Fatalf("exit 0; stderr:\n%.2000s", stderr)
	}
	first, rest, _ := strings.Cut(strings.TrimSpace(stderr), "\n")
	if !strings.Contains(first, want) {
		t.Errorf("exit %d, stderr:\n%.2000s\nwant the first line to say %q", code, stderr, want)
	}
	if rest != "" {
		t.Errorf("a %d-line error, want one line:\n%.2000s", strings.Count(stderr, "\n"), stderr)
	}
	if len(stderr) > 1000 {
		t.Errorf("%d bytes of errors, want one short line", len(stderr))
	}
	for _, crash := range []string{"panic:", "goroutine ", "fatal error:", "SIGSEGV"} {
		if strings.Contains(stderr, crash) {
			t.Errorf("crashed (%q):\n%.3000s", crash, stderr)
		}
	}
}

// TestBadInputRound2: the second round of hostile flags and files (issue
// 45): each is one line naming the flag or file and the bad value, in a
// child process under a 4 GiB address-space limit; never a panic, a hang,
// an out-of-memory death, a silently ignored or clamped value, a raw
// compiler log or a megabyte of message.
func TestBadInputRound2(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// 2^62 iterations of a loop: loom run had no work limit.
	endless := file("endless.loom", "func f(A: float32[4]) {\n  serial for (i, 0L, 4611686018427387904L) {\n    serial for (j, 0, 4) {\n      A[j] = A[j] + 1.0f\n    }\n  }\n}\n")
	graph := "../../testdata/fusion/mlp.json"
	g, err := os.ReadFile(graph)
	if err != nil {
		t.Fatal(err)
	}
	// A graph named by 2 MB: its library's file name quoted it whole.
	hugeName := file("huge.json", strings.Replace(string(g), `"name": "mlp"`, `"name": "`+strings.Repeat("b", 2<<20)+`"`, 1))
	_, llcErr := native.FindToolchain()

	for _, c := range []struct {
		args []string
		want string
		llc  bool // needs llc to check against
	}{
		// panic, and a bad width blamed on the size
		{args: []string{"bench", "-workload", "gemm", "-size", "64", "-vector-bits", "3"}, want: "loom bench: -vector-bits 3: want 128, 256 or 512 (or 0: the host's)"},
		{args: []string{"bench", "-workload", "gemm", "-size", "64", "-vector-bits", "31"}, want: "-vector-bits 31: want 128, 256 or 512"},
		{args: []string{"bench", "-workload", "gemm", "-size", "64", "-vector-bits", "100000"}, want: "-vector-bits 100000: want 128, 256 or 512"},
		// hang
		{args: []string{"run", endless}, want: "loom run: f: ast: interpret: more than 50000000 loop iterations (at loop i): interpreter's budget exhausted; raise -max-iterations to run it further"},
		{args: []string{"run", "-max-iterations", "0", endless}, want: "loom run: -max-iterations 0: want 1 to 1099511627776"},
		{args: []string{"bench", "-workload", "gemm", "-size", "64", "-schedule", "refined", "-refine", "100000000"}, want: "loom bench: -refine 100000000: want 1 to 256"},
		{args: []string{"bench", "-workload", "gemm", "-size", "8", "-schedule", "tuned", "-db", "/dev/urandom"}, want: "loom bench: -db /dev/urandom: not a regular file; want a tuning database (a file of JSON lines)"},
		// out of memory
		{args: []string{"bench", "-workload", "gemm", "-size", "8", "-schedule", "tuned", "-db", "/dev/zero"}, want: "loom bench: -db /dev/zero: not a regular file"},
		{args: []string{"plot", "-workload", "gemm", "-size", "8", "-db", "/dev/zero"}, want: "loom plot: -db /dev/zero: not a regular file"},
		{args: []string{"replay", "-workload", "gemm", "-size", "8", "-db", "/dev/zero"}, want: "loom replay: -db /dev/zero: not a regular file"},
		{args: []string{"build", "-workload", "gemm", "-size", "8", "-o", filepath.Join(dir, "out"), "-db", "/dev/zero"}, want: "loom build: -db /dev/zero: not a regular file"},
		{args: []string{"lower", "-workload", "gemm", "-size", "8", "-db", dir}, want: "loom lower: -db " + dir + ": a directory"},
		{args: []string{"tune", "-workload", "gemm", "-size", "8", "-db", "/dev/zero"}, want: "loom tune: -db /dev/zero: not a regular file"},
		{args: []string{"tune", "-workload", "gemm", "-size", "8", "-confirm", "2147483647"}, want: "loom tune: -confirm 2147483647: want 0 to 1000"},
		// silently wrong
		{args: []string{"build", "-graph", graph, "-size", "T=8", "-o", filepath.Join(dir, "out")}, want: "loom build: -graph builds a library for every value of the graph's symbols (each call reads them from its inputs' shapes); -size T=8 does not apply: drop it"},
		{args: []string{"tune", "-workload", "gemm", "-size", "M=8,M=16"}, want: `loom tune: invalid value "M=8,M=16" for flag -size: size M given twice (8 and 16); give each size once`},
		{args: []string{"bench", "-workload", "gemm", "-size", "M=8", "-size", "M=16"}, want: "size M given twice (8 and 16)"},
		{args: []string{"bench", "-workload", "gemm", "-size", "64", "-size", "128"}, want: "size N given twice (64 and 128)"},
		{args: []string{"run", "-size", "N=2", "-size", "N=3", endless}, want: "size N given twice (2 and 3)"},
		{args: []string{"bench", "-workload", "gemm", "-threads", "2147483648"}, want: "loom bench: -threads 2147483648: want 0 to 256"},
		{args: []string{"tune", "-workload", "gemm", "-threads", "2147483648"}, want: "loom tune: -threads 2147483648: want 0 to 256"},
		{args: []string{"build", "-workload", "gemm", "-threads", "257", "-o", filepath.Join(dir, "out")}, want: "loom build: -threads 257: want 0 to 256"},
		{args: []string{"lower", "-workload", "gemm", "-threads", "1000"}, want: "loom lower: -threads 1000: want 0 to 256"},
		{args: []string{"plot", "-workload", "gemm", "-threads", "-1"}, want: "loom plot: -threads -1: want 0 to 256"},
		{args: []string{"replay", "-workload", "gemm", "-threads", "999999"}, want: "loom replay: -threads 999999: want 0 to 256"},
		{args: []string{"bench", "-workload", "gemm", "-schedule", "refined", "-refine", "-5"}, want: "loom bench: -refine -5: want 1 to 256"},
		{args: []string{"lower", "-workload", "gemm", "-default", "-refine", "-5"}, want: "loom lower: -refine -5: want 0 to 256"},
		{args: []string{"tune", "-workload", "gemm", "-trials", "2147483648"}, want: "loom tune: -trials 2147483648: want 1 to 1000000"},
		{args: []string{"tune", "-workload", "gemm", "-timeout", "10000h"}, want: "loom tune: -timeout 10000h0m0s: want 1ms to 24h0m0s"},
		{args: []string{"bench", "-suite", dir, "-trials", "-1"}, want: "loom bench: -trials -1: want 0 to 1000000"},
		{args: []string{"example", "-S1", "4294967296", "-S2", "4294967296"}, want: "loom example: S1 and S2 must be non-negative with S1*S2 <= 4096"},
		{args: []string{"bench", "-workload", "gemm", "-size", "8", "-mattr", "+bogus"}, llc: true, want: "loom bench: -mattr +bogus: LLVM does not know the feature bogus for"},
		{args: []string{"bench", "-workload", "gemm", "-size", "8", "-mattr", "+avx2,avx"}, llc: true, want: "loom bench: -mattr +avx2,avx: write +avx to enable avx, or -avx to disable it"},
		// flags that would be ignored
		{args: []string{"bench", "-workload", "gemm", "-refine", "4"}, want: "loom bench: -refine applies only with -schedule refined; drop it"},
		{args: []string{"bench", "-workload", "gemm", "-any-size"}, want: "loom bench: -any-size applies only with -schedule tuned; drop it"},
		{args: []string{"bench", "-suite", dir, "-workload", "gemm"}, want: "loom bench: -workload applies only without -suite (which times its own graphs); drop it"},
		{args: []string{"bench", "-graph", graph, "-size", "T=8", "-vector-bits", "256"}, want: "loom bench: -vector-bits applies only to a -workload timed on its own (not -suite, -sweep or -graph); drop it"},
		{args: []string{"bench", "-workload", "gemm", "-trials", "3"}, want: "loom bench: -trials applies only with -suite; drop it"},
		{args: []string{"bench", "-workload", "gemm", "-schedule", "hand", "-trace", endless}, want: "loom bench: -schedule and -trace choose the same thing; give one"},
		{args: []string{"tune", "-workload", "gemm", "-name", "k"}, want: "loom tune: -name applies only with -out (it names the files written); drop it"},
		{args: []string{"build", "-graph", graph, "-any-size", "-o", filepath.Join(dir, "out")}, want: "loom build: -any-size applies only without -graph (its kernels take the best record of any size); drop it"},
		{args: []string{"build", "-workload", "gemm", "-schedule", "tuned", "-trace", endless, "-o", filepath.Join(dir, "out")}, want: "loom build: -schedule and -trace choose the same thing; give one"},
		{args: []string{"lower", "-workload", "gemm", "-default", "-trace", endless}, want: "loom lower: -default and -trace choose the same thing; give one"},
		{args: []string{"lower", "-workload", "gemm", "-refine", "4"}, want: "loom lower: -refine applies only with -default; drop it"},
		// unclear
		{args: []string{"bench", "-workload", "gemm", "-size", "8", "-mcpu", "bogus"}, llc: true, want: "loom bench: -mcpu bogus: LLVM does not know this CPU for"},
		{args: []string{"build", "-graph", hugeName, "-o", filepath.Join(dir, "out")}, want: "loom build: " + hugeName + ": open"},
		{args: []string{"bench", "-workload", strings.Repeat("w", 100000)}, want: `loom bench: unknown workload "wwww`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			if c.llc && llcErr != nil {
				t.Skip(llcErr)
			}
			t.Parallel()
			code, stderr := runLimited(t, c.args...)
			checkOneLine(t, code, stderr, c.want)
		})
	}
}

// TestBuildCompilerError: when the C compiler fails on a graph's library,
// loom build says so in one line, with the compiler's first error and
// the log that holds its whole output (it printed the output raw, 17
// lines and more). The compiler here is a stand-in that fails on the
// library's source as cc does and builds anything else.
func TestBuildCompilerError(t *testing.T) {
	realCC, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no cc")
	}
	bin := t.TempDir()
	var lines strings.Builder
	for i := range 17 {
		lines.WriteString("echo \"mlp_graph.c:" + string(rune('1'+i%9)) + ":9: note: line " + string(rune('a'+i)) + "\" >&2\n")
	}
	script := "#!/bin/sh\ncase \"$*\" in *_graph.c*)\n" +
		"echo 'In file included from mlp_graph.c:2:' >&2\n" +
		"echo \"mlp.h:49:9: error: 'mlp' redeclared as different kind of symbol\" >&2\n" +
		lines.String() + "exit 1;;\nesac\nexec " + realCC + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "cc"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "lib")
	code, stderr := runLimitedEnv(t, []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}, "build", "-graph", "../../testdata/fusion/mlp.json", "-o", out)
	log := filepath.Join(out, "loom-cc.log")
	checkOneLine(t, code, stderr, "loom build: ../../testdata/fusion/mlp.json: module: build: cc failed (exit status 1): mlp.h:49:9: error: 'mlp' redeclared as different kind of symbol (the whole output: "+log+")")
	if data, err := os.ReadFile(log); err != nil || strings.Count(string(data), "note: line") != 17 {
		t.Errorf("the log %s: %v\n%s", log, err, data)
	}
}

// TestDatabaseNULTailCLI: a real database followed by a 9 GiB NUL tail
// (truncate -s +9G, what a crash can leave) made every record unreadable
// and ran loom out of memory. Under a 4 GiB limit, loom replay reads the
// records before the tail and says once what it skipped; records a later
// loom tune appends after the tail are read too.
func TestDatabaseNULTailCLI(t *testing.T) {
	if _, err := native.FindToolchain(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "db.jsonl")
	tune := func(seed string) {
		t.Helper()
		if code, stderr := runLimited(t, "tune", "-workload", "gemm", "-size", "8", "-trials", "2", "-confirm", "0", "-q", "-seed", seed, "-db", db); code != 0 {
			t.Fatalf("tune: exit %d\n%s", code, stderr)
		}
	}
	replay := func() (n int, warning string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", `ulimit -v 4194304; exec "$0" "$@"`, os.Args[0], "replay", "-workload", "gemm", "-size", "8", "-db", db, "-json")
		cmd.Env = append(os.Environ(), asLoomEnv+"=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("replay: %v\n%s", err, stderr.String())
		}
		var r replayed
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.Trial == 0 {
			t.Fatalf("replay printed %q: %v", stdout.String(), err)
		}
		return strings.Count(stderr.String(), "\n"), strings.TrimSpace(stderr.String())
	}
	tune("1")
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(db, fi.Size()+9<<30); err != nil {
		t.Fatal(err)
	}
	n, warning := replay()
	if n != 1 || !strings.Contains(warning, "loom replay: warning: autotune: database "+db+": skipped 9.0 GiB of NUL bytes (what a crash can leave) from byte") || !strings.HasSuffix(warning, "kept the 2 records before and 0 after") {
		t.Errorf("%d lines on stderr: %q; want one warning of the tail", n, warning)
	}
	tune("2")
	if _, warning := replay(); !strings.HasSuffix(warning, "kept the 2 records before and 2 after") {
		t.Errorf("after another tune: %q; want the 2 records appended after the tail read", warning)
	}
}

// TestTuneRemovesTempDir: loom tune left a loom-tune-* directory (its
// reference outputs) in the temporary folder every run; it removes it
// when it ends, fails or is interrupted.
func TestTuneRemovesTempDir(t *testing.T) {
	if _, err := native.FindToolchain(); err != nil {
		t.Skip(err)
	}
	leftovers := func(tmp string) []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "loom-tune-*"))
		return m
	}
	args := func(extra ...string) []string {
		return append([]string{"tune", "-workload", "gemm", "-size", "8", "-confirm", "0", "-q", "-db", filepath.Join(t.TempDir(), "db.jsonl")}, extra...)
	}
	t.Run("done", func(t *testing.T) {
		tmp := t.TempDir()
		if code, stderr := runLimitedEnv(t, []string{"TMPDIR=" + tmp}, args("-trials", "2")...); code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		if l := leftovers(tmp); len(l) > 0 {
			t.Errorf("left %v", l)
		}
	})
	t.Run("failed", func(t *testing.T) {
		// Every candidate, the reference first, runs past 1 ms.
		tmp := t.TempDir()
		if code, stderr := runLimitedEnv(t, []string{"TMPDIR=" + tmp}, args("-trials", "1", "-timeout", "1ms")...); code != 1 {
			t.Fatalf("exit %d, want 1\n%s", code, stderr)
		}
		if l := leftovers(tmp); len(l) > 0 {
			t.Errorf("left %v", l)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		tmp := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], args("-trials", "100000")...)
		cmd.Env = append(os.Environ(), asLoomEnv+"=1", "TMPDIR="+tmp)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Interrupt once the directory is there: the search is running.
		for len(leftovers(tmp)) == 0 && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ctx.Err() != nil {
			t.Fatalf("still running after 2 minutes: %s", stderr.String())
		}
		if code := cmd.ProcessState.ExitCode(); code != 130 {
			t.Errorf("exit %d (%v), want 130\n%s", code, err, stderr.String())
		}
		if l := leftovers(tmp); len(l) > 0 {
			t.Errorf("left %v", l)
		}
	})
}

// TestParseLLCHelp: the CPUs and features of llc -mcpu=help's lists.
func TestParseLLCHelp(t *testing.T) {
	help := "Available CPUs for this target:\n\n  athlon         - Select the athlon processor.\n  x86-64-v3      - Select the x86-64-v3 processor.\n\n" +
		"Available features for this target:\n\n  avx2    - Enable AVX2 instructions.\n  sse4.1  - Enable SSE 4.1 instructions.\n\n" +
		"Use +feature to enable a feature, or -feature to disable it.\nFor example, llc -mcpu=mycpu -mattr=+feature1,-feature2\n"
	k := parseLLCHelp(help)
	if strings.Join(k.cpus, " ") != "athlon x86-64-v3" || strings.Join(k.features, " ") != "avx2 sse4.1" {
		t.Errorf("cpus %q, features %q", k.cpus, k.features)
	}
}
