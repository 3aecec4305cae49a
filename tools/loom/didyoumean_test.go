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
