package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runLoom(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = loom(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExample(t *testing.T) {
	code, out, errs := runLoom(t, "example", "-S1", "2", "-S2", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"func chain[S1: int32, S2: int32]", "ScheduleBlock(C)", "max |F - Go reference| = 0", "rfactor(", "max relative difference from the interpreter"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestFmtAndRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "axpy.loom")
	src := "func axpy[N: int32](X: float32[N], Y: float32[N]) { serial for (i, 0, N) { Y[i] = 2.0f * X[i] + Y[i] } }"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runLoom(t, "fmt", path)
	want := "func axpy[N: int32](X: float32[N], Y: float32[N]) {\n  serial for (i, 0, N) {\n    Y[i] = 2.0f * X[i] + Y[i]\n  }\n}\n"
	if code != 0 || out != want {
		t.Fatalf("fmt: exit %d, stderr %s\n%s", code, errs, out)
	}
	if code, _, errs := runLoom(t, "fmt", "-w", path); code != 0 {
		t.Fatalf("fmt -w: %s", errs)
	}
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Fatalf("fmt -w wrote:\n%s", b)
	}
	code, out, errs = runLoom(t, "run", "-size", "N=5", path)
	if code != 0 || !strings.Contains(out, "X: 5 elements") || !strings.Contains(out, "Y: 5 elements") {
		t.Fatalf("run: exit %d, stderr %s\n%s", code, errs, out)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.loom")
	os.WriteFile(bad, []byte("func f(A: float32[4]) {\n  serial for (i, 0, 4) {\n    A[i + 1] = 1.0f\n  }\n}\n"), 0o644)
	broken := filepath.Join(dir, "broken.loom")
	os.WriteFile(broken, []byte("func f(A: float32[4]) {\n  A[0] = \n}\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"fmt"}, 2, "usage: loom fmt"},
		{[]string{"fmt", broken}, 1, "broken.loom:3:1: expected an expression"},
		{[]string{"fmt", filepath.Join(dir, "missing.loom")}, 1, "no such file"},
		{[]string{"run", bad}, 1, "out-of-bounds store to A[4]"},
		{[]string{"run", "-size", "N", bad}, 2, "want NAME=VALUE"},
		{[]string{"example", "-S1", "-3"}, 2, "must be non-negative"},
	} {
		code, _, errs := runLoom(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("loom %v: exit %d, stderr:\n%s\nwant exit %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// TestBench runs loom bench on a small gemm and checks its JSON line.
func TestBench(t *testing.T) {
	code, out, errs := runLoom(t, "bench", "-workload", "gemm", "-size", "64", "-threads", "2", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, key := range []string{"workload", "size", "threads", "schedule", "ms", "gflops", "gbps", "compile_ms", "max_rel_err"} {
		if _, ok := r[key]; !ok {
			t.Errorf("no %q in %s", key, out)
		}
	}
	if r["workload"] != "gemm" || r["size"] != 64.0 || r["threads"] != 2.0 || r["schedule"] != "hand" {
		t.Errorf("wrong fields: %s", out)
	}
	if e, _ := r["max_rel_err"].(float64); e > 1e-4 {
		t.Errorf("max_rel_err %g", e)
	}
	if code, _, errs := runLoom(t, "bench", "-workload", "nope"); code == 0 || !strings.Contains(errs, "unknown workload") {
		t.Errorf("an unknown workload: exit %d, %s", code, errs)
	}
}
