package autotune

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// PrintProgress returns a Progress reporter for Options.Progress that
// writes to w: on a terminal one line redrawn after every round, else
// (a log, a pipe) a plain line per round. name heads the line.
func PrintProgress(w io.Writer, name string) func(Progress) {
	return PrintProgressWith(w, name, nil)
}

// PrintProgressWith is PrintProgress with the best time's speed shown
// beside it, as speed says it ("161.8 GFLOP/s"; nil: none).
func PrintProgressWith(w io.Writer, name string, speed func(seconds float64) string) func(Progress) {
	tty := IsTerminal(w)
	return func(p Progress) { writeProgress(w, progressLine(p, name, speed), tty) }
}

// progressLine is the line PrintProgressWith writes for p.
func progressLine(p Progress, name string, speed func(float64) string) string {
	const width = 24
	done := width * min(max(p.Trials, 0), max(p.Total, 1)) / max(p.Total, 1)
	var b strings.Builder
	if name != "" {
		b.WriteString(name + " ")
	}
	best := msOrNone(p.Best)
	if speed != nil && best != "-" {
		best += " (" + speed(p.Best) + ")"
	}
	fmt.Fprintf(&b, "[%s%s] %d/%d trials, %d failed", strings.Repeat("#", done), strings.Repeat(".", width-done), p.Trials, p.Total, p.Failed)
	if p.Round > 0 {
		// After the search: the leaders measured again; the best is
		// theirs, and after the last round the one the search reports.
		fmt.Fprintf(&b, ", confirming the leaders: round %d/%d, best %s, elapsed %s", p.Round, p.Rounds, best, p.Elapsed.Round(time.Second))
		return b.String()
	}
	eta := time.Duration(0)
	if p.Trials > 0 && p.Total > p.Trials {
		eta = time.Duration(float64(p.Elapsed) * float64(p.Total-p.Trials) / float64(p.Trials))
	}
	fmt.Fprintf(&b, ", best %s, elapsed %s, ETA %s", best, p.Elapsed.Round(time.Second), eta.Round(time.Second))
	return b.String()
}

// PrintModelProgress returns a reporter for ModelOptions.OnRound that
// writes to w as PrintProgress does: the round, trials, time spent and
// left, the model's estimated time against its default schedules, and
// the task the round went to.
func PrintModelProgress(w io.Writer) func(ModelProgress) {
	tty := IsTerminal(w)
	return func(p ModelProgress) { writeProgress(w, ModelProgressLine(p), tty) }
}

// ModelProgressLine is the line PrintModelProgress writes for p.
func ModelProgressLine(p ModelProgress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "round %d, %d trials (%d failed), elapsed %s", p.Round, p.Trials, p.Failed, p.Elapsed.Round(time.Second))
	if p.Budget > 0 {
		fmt.Fprintf(&b, ", budget left %s", max(p.Budget-p.Spent, 0).Round(time.Second))
	}
	if p.Measured > 0 {
		fmt.Fprintf(&b, ", model %.3f ms (default %.3f ms, %.2fx; %d of %d kernels measured)", p.Estimate*1e3, p.Default*1e3, p.Default/p.Estimate, p.Measured, p.Tasks)
	}
	switch {
	case p.Confirming:
		b.WriteString(", confirming the leaders")
	case p.Task != "":
		fmt.Fprintf(&b, ", tuned %s (best %s)", p.Task, msOrNone(p.TaskBest))
	}
	return b.String()
}

func msOrNone(seconds float64) string {
	if math.IsInf(seconds, 0) || math.IsNaN(seconds) {
		return "-"
	}
	return fmt.Sprintf("%.4g ms", seconds*1e3)
}

// writeProgress writes a progress line: redrawn in place on a terminal,
// a line of its own elsewhere.
func writeProgress(w io.Writer, line string, tty bool) {
	if tty {
		fmt.Fprintf(w, "\r%s   ", line)
		return
	}
	fmt.Fprintln(w, line)
}

// IsTerminal reports whether w is a terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
