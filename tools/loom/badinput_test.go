package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadInput feeds the command line's entry points (files, flags, sizes)
// with bad input, each in a child process of its own under a memory limit
// (ulimit -v) and a time limit, and checks that it exits non-zero with a
// short error that says what is wrong: never a panic, a crash, an
// out-of-memory death or a hang.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	empty := file("empty.txt", "")
	comments := file("comments.trace", "# nothing but a comment\n\n")
	badJSONTrace := file("bad.json", `{"insts": [{"kind": "split", "inputs": [`)
	badJSONTrace2 := file("bad2.json", "{\n  \"insts\": 7\n}")
	manyFactors := file("many.trace", `b0 = get_block("C")
l0, l1, l2 = get_loops(b0)
ls = split(l0, [`+strings.Repeat("1, ", 1999)+`-1])
`)
	overflow := file("overflow.loom", "func f(A: float32[4]) {\n  A[0] = 1e40f\n}\n")
	longName := strings.Repeat("b", 5<<20)
	hugeName := file("huge.loom", "func f(A: float32[4]) {\n  serial for (i, 0, 4) {\n    ScheduleBlock("+longName+") {\n      vi = axis.bind(i)\n      axis.domain(vi = spatial(0, 4))\n      reads()\n      writes(A[vi + 1])\n      A[vi + 1] = 1.0f\n    }\n  }\n}\n")
	bigFunc := file("big.loom", "func f[N: int32](A: float32[N], B: float32[N]) {\n  serial for (i, 0, N) {\n    B[i] = A[i] * 2.0f\n  }\n}\n")
	graph := "../../testdata/fusion/mlp.json"

	for _, c := range []struct {
		args []string
		want string // in the first line of stderr
		// multi: the error may go on to print the function, marked
		multi bool
	}{
		// Sizes: validated where they enter.
		{args: []string{"tune", "-workload", "gemm", "-size", "99999999999"}, want: "want a size N from 1 to 2147483647"},
		{args: []string{"bench", "-workload", "gemm", "-size", "99999999999"}, want: "want a size N"},
		{args: []string{"lower", "-workload", "gemm", "-size", "99999999999"}, want: "want a size N"},
		{args: []string{"replay", "-workload", "gemm", "-size", "99999999999"}, want: "want a size N"},
		{args: []string{"plot", "-workload", "gemm", "-size", "99999999999"}, want: "want a size N"},
		{args: []string{"bench", "-workload", "gemm", "-size", "-5"}, want: "want a size N"},
		{args: []string{"bench", "-workload", "all", "-size", "-5"}, want: "want a size N"},
		{args: []string{"bench", "-workload", "gemm", "-size", "100000"}, want: "larger than 1073741824 elements"},
		{args: []string{"tune", "-workload", "gemm", "-size", "2147483647"}, want: "larger than 1073741824 elements"},
		{args: []string{"bench", "-workload", "softmax", "-size", "256"}, want: "workload softmax takes named sizes, -size R=8192,D=1024"},
		{args: []string{"tune", "-workload", "softmax", "-size", "R=0"}, want: "size R = 0: want 1 to 2147483647"},
		{args: []string{"tune", "-workload", "softmax", "-size", "Q=5"}, want: "workload softmax has no size Q"},
		{args: []string{"tune", "-workload", "conv2d", "-size", "C=100000,H=100000,W=100000"}, want: "larger than"},
		{args: []string{"tune", "-graph", graph, "-size", "T=-1"}, want: "size T: want a whole number from 0 to 2147483647"},
		{args: []string{"tune", "-graph", graph, "-size", "T=0"}, want: "-size T=0: want 1 to 2147483647"},
		{args: []string{"tune", "-graph", graph, "-size", "T=8,Q=3"}, want: "has no symbol Q"},
		{args: []string{"tune", "-graph", graph, "-size", "T=2147483647"}, want: "kernel mlp_0 at T=2147483647: ast: interpret: buffer X is larger than"},
		{args: []string{"tune", "-graph", graph, "-size", "64"}, want: "-graph takes its symbols' values as -size NAME=VALUE"},
		{args: []string{"tune", "-workload", "gemm", "-graph", graph, "-size", "T=4"}, want: "-workload and -graph name two sources; give one"},
		{args: []string{"run", "-size", "N=-5", bigFunc}, want: "want a whole number from 0 to 2147483647"},
		{args: []string{"run", "-size", "N=2000000000", bigFunc}, want: "larger than 1073741824 elements", multi: true},
		// Flags: unknown or out-of-range values are errors.
		{args: []string{"tune", "-trials", "0"}, want: "-trials 0: want 1 to 1000000"},
		{args: []string{"tune", "-trials", "-3"}, want: "-trials -3: want 1 to 1000000"},
		{args: []string{"tune", "-confirm", "-3"}, want: "-confirm -3: want 0 to 1000"},
		{args: []string{"tune", "-timeout", "0"}, want: "-timeout 0s: want 1ms to 24h0m0s"},
		{args: []string{"tune", "-threads", "-2"}, want: "-threads -2: want 0 to 256"},
		{args: []string{"bench", "-threads", "-1"}, want: "-threads -1: want 0 to 256"},
		{args: []string{"tune", "-bogus"}, want: "flag provided but not defined: -bogus"},
		{args: []string{"tune", "-workload", "gemm", "extra"}, want: `unexpected argument "extra"`},
		{args: []string{"tune", "-workload", "gemm", "-size", "8", "-out", empty}, want: "-out: mkdir"},
		{args: []string{"lower", "-workload", "nope"}, want: `unknown workload "nope"`},
		{args: []string{"fuse", "-dump", "bogus", graph}, want: "-dump bogus: no such pass"},
		{args: []string{"fuse"}, want: "want one GRAPH.json as arguments"},
		{args: []string{"help", "bogus"}, want: `unknown command "bogus"`, multi: true},
		// Files: empty, malformed, huge.
		{args: []string{"fuse", empty}, want: "the input is empty; want a JSON graph"},
		{args: []string{"fmt", "/dev/zero"}, want: "larger than 64 MiB"},
		{args: []string{"fuse", "/dev/zero"}, want: "larger than 64 MiB"},
		{args: []string{"fmt", dir}, want: "is a directory"},
		{args: []string{"lower", "-workload", "gemm", "-size", "8", "-trace", empty}, want: "holds no schedule instructions"},
		{args: []string{"lower", "-workload", "gemm", "-size", "8", "-trace", comments}, want: "holds no schedule instructions"},
		{args: []string{"bench", "-workload", "gemm", "-size", "8", "-trace", badJSONTrace}, want: "schedule: trace: unexpected EOF"},
		{args: []string{"bench", "-workload", "gemm", "-size", "8", "-trace", badJSONTrace2}, want: "trace at 2:"},
		{args: []string{"lower", "-workload", "gemm", "-size", "8", "-trace", manyFactors}, want: "split takes at most 32 factors, got 2000", multi: true},
		{args: []string{"fmt", overflow}, want: "overflow.loom:2:10: float constant 1e40f out of the float32 range"},
		{args: []string{"run", hugeName}, want: "out-of-bounds store", multi: true},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			code, stderr := runLimited(t, c.args...)
			if code == 0 {
				t.Fatalf("exit 0; stderr:\n%.2000s", stderr)
			}
			first, rest, _ := strings.Cut(strings.TrimSpace(stderr), "\n")
			if !strings.Contains(first, c.want) {
				t.Errorf("exit %d, stderr:\n%.2000s\nwant the first line to say %q", code, stderr, c.want)
			}
			if rest != "" && !c.multi {
				t.Errorf("a %d-line error, want one line:\n%.2000s", strings.Count(stderr, "\n"), stderr)
			}
			if len(stderr) > 20000 {
				t.Errorf("%d bytes of errors: echoes of the input are cut", len(stderr))
			}
			for _, crash := range []string{"panic:", "goroutine ", "fatal error:", "SIGSEGV"} {
				if strings.Contains(stderr, crash) {
					t.Errorf("crashed (%q):\n%.3000s", crash, stderr)
				}
			}
		})
	}
}

// runLimited runs loom with args in a child process limited to 4 GiB of
// address space and 2 minutes, and returns its exit code and stderr.
func runLimited(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return runLimitedEnv(t, nil, args...)
}

// runLimitedEnv is runLimited with env added to the child's environment.
func runLimitedEnv(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sh := `ulimit -v 4194304; exec "$0" "$@"`
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", sh, os.Args[0]}, args...)...)
	cmd.Env = append(append(os.Environ(), asLoomEnv+"=1"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("loom %.200s: still running after 2 minutes (a hang)", strings.Join(args, " "))
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("loom %.200s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}
