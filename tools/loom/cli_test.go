package main

import (
	"strings"
	"testing"
)

// TestDidYouMean: a mistyped command or workload gets the name it was
// probably meant to be.
func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tuen"}, `unknown command "tuen" (did you mean "tune"?)`},
		{[]string{"help", "bulid"}, `(did you mean "build"?)`},
		{[]string{"bench", "-workload", "softmx"}, `(did you mean "softmax"?)`},
	} {
		if code, _, errs := runLoom(t, c.args...); code == 0 || !strings.Contains(errs, c.want) {
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
