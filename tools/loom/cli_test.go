package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDidYouMean: a mistyped command, workload or schedule is a usage
// error (exit 2) that names what it was probably meant to be.
func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tuen"}, `unknown command "tuen" (did you mean "tune"?)`},
		{[]string{"help", "bulid"}, `(did you mean "build"?)`},
		{[]string{"bench", "-workload", "softmx"}, `(did you mean "softmax"?)`},
		{[]string{"bench", "-workload", "gemm", "-size", "8", "-schedule", "defualt"}, `unknown -schedule "defualt" (did you mean "default"?)`},
	} {
		if code, _, errs := runLoom(t, c.args...); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("loom %s: exit %d, %s (want %s)", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
}

// TestFlagsAfterArguments: flags may follow a command's positional
// arguments, and "--" ends the flags.
func TestFlagsAfterArguments(t *testing.T) {
	graph := "../../testdata/fusion/mlp.json"
	for _, args := range [][]string{
		{"fuse", graph, "-size", "T=4"},
		{"fuse", "-size", "T=4", graph},
		{"fuse", "-size", "T=4", "--", graph},
	} {
		code, out, errs := runLoom(t, args...)
		if code != 0 || !strings.Contains(out, "kernel 0 mlp_0") {
			t.Errorf("loom %s: exit %d, %s\n%s", strings.Join(args, " "), code, errs, out)
		}
	}
	if code, _, errs := runLoom(t, "fuse", graph, "-size", "T=4", "extra"); code != 2 || !strings.Contains(errs, "got 2") {
		t.Errorf("an extra argument after the flags: exit %d, %s", code, errs)
	}
}

// TestTuneSaysWhenTheSpaceRunsOut: a function with three schedules, asked
// for 16 trials, says why it measured three.
func TestTuneSaysWhenTheSpaceRunsOut(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "tiny.loom")
	os.WriteFile(src, []byte(`func tiny(X: float32[4], Y: float32[4]) {
  ScheduleBlock(root) {
    serial for (i, 0, 4) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 4))
        reads(X[vi])
        writes(Y[vi])
        Y[vi] = X[vi] * 2.0f
      }
    }
  }
}
`), 0o644)
	code, out, errs := runLoom(t, "tune", "-func", src, "-trials", "16", "-threads", "1", "-confirm", "0", "-q", "-db", filepath.Join(dir, "db.jsonl"))
	if code != 0 || !strings.Contains(out, "the search space holds no other schedule") {
		t.Errorf("exit %d: %s\n%s", code, errs, out)
	}
}

// TestEveryCommandHasJSON: every command takes -json (the README says
// so), and fmt's and import's print what they say.
func TestEveryCommandHasJSON(t *testing.T) {
	for _, name := range commandNames() {
		_, _, errs := runLoom(t, name, "-h")
		if !strings.Contains(errs, "  -json") {
			t.Errorf("loom %s has no -json", name)
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "f.loom")
	os.WriteFile(src, []byte("func f(X: float32[4], Y: float32[4]) { ScheduleBlock(root) { serial for (i, 0, 4) { ScheduleBlock(Y) { vi = axis.bind(i) axis.domain(vi = spatial(0, 4)) reads(X[vi]) writes(Y[vi]) Y[vi] = X[vi] } } } }\n"), 0o644)
	code, out, errs := runLoom(t, "fmt", "-json", src)
	var f formatted
	if code != 0 || json.Unmarshal([]byte(out), &f) != nil || !f.Changed || !strings.Contains(f.Text, "ScheduleBlock(Y)") {
		t.Errorf("fmt -json: exit %d, %s\n%s", code, errs, out)
	}
	code, out, errs = runLoom(t, "import", "-json", "-o", dir, "../../testdata/onnx/abs/model.onnx")
	var g importedGraph
	if code != 0 || json.Unmarshal([]byte(out), &g) != nil || g.Nodes == 0 || len(g.Inputs) == 0 {
		t.Errorf("import -json: exit %d, %s\n%s", code, errs, out)
	}
}

// TestSweepWithoutSize: the README's loom bench -graph G -sweep T=LO..HI
// -one-size T=V runs as written: the sweep gives T its values.
func TestSweepWithoutSize(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db.jsonl")
	os.WriteFile(db, nil, 0o644) // nothing tuned: the defaults everywhere
	code, out, errs := runLoom(t, "bench", "-graph", "../../testdata/fusion/mlp.json", "-sweep", "T=1..2", "-one-size", "T=2", "-threads", "1", "-db", db)
	if code != 0 || strings.Count(out, `"kernel":"mlp_`) != 3*2 {
		t.Errorf("exit %d: %s\n%s", code, errs, out)
	}
}

// TestHelpConventions: loom help lists the conventions every command
// keeps (and exits 0; loom alone is a usage mistake, 2), and each command
// that writes files takes -o.
func TestHelpConventions(t *testing.T) {
	code, _, errs := runLoom(t, "help")
	if code != 0 || !strings.Contains(errs, "exit status 0 on success, 1 when the work failed, 2 for a usage mistake") || !strings.Contains(errs, "flags go before or after") {
		t.Errorf("loom help: exit %d, conventions missing:\n%s", code, errs)
	}
	if code, _, _ := runLoom(t); code != 2 {
		t.Errorf("loom alone: exit %d, want 2", code)
	}
	for _, cmd := range []string{"build", "import", "plot", "tune"} {
		if _, _, errs := runLoom(t, cmd, "-h"); !strings.Contains(errs, "\n  -o ") {
			t.Errorf("loom %s has no -o:\n%s", cmd, errs)
		}
	}
}
