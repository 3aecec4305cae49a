package main

import (
	"bytes"
	"strings"
	"testing"
)

func ptr(x float64) *float64 { return &x }

// TestSummarizeSuite checks the suite's summary: the geometric mean of the
// ratios against oneDNN (at its best layout, and at its plain ones), the
// cases below 0.7 of its speed, and the default
// schedule's speed against the tuned one's and oneDNN's, with the cases
// whose default is slower than their unscheduled nests named.
func TestSummarizeSuite(t *testing.T) {
	lines := []suiteLine{
		// tuned 1 ms, default 2 ms, oneDNN 2 ms at its best layout and 4
		// at its plain ones, unscheduled 10 ms.
		{Case: "a", Threads: 1, LoomMs: 1, OneDNNMs: ptr(2), OneDNNPlainMs: ptr(4), OneDNNAnyMs: ptr(2), Ratio: ptr(2), RatioPlain: ptr(4), DefaultMs: ptr(2), UnscheduledMs: ptr(10)},
		// tuned 4 ms, default 8 ms, oneDNN 1 ms, unscheduled 4 ms.
		{Case: "b", Threads: 1, LoomMs: 4, OneDNNMs: ptr(1), Ratio: ptr(0.25), DefaultMs: ptr(8), UnscheduledMs: ptr(4)},
		// An old line without the default: in the ratios only.
		{Case: "c", Threads: 1, LoomMs: 1, OneDNNMs: ptr(1), Ratio: ptr(1)},
		// A failed case counts nowhere.
		{Case: "d", Threads: 1, Error: "boom", DefaultMs: ptr(1), LoomMs: 1},
		{Case: "a", Threads: 2, LoomMs: 1, DefaultMs: ptr(4)},
	}
	var w bytes.Buffer
	summarizeSuite(&w, lines)
	got := w.String()
	for _, want := range []string{
		// (2 * 0.25 * 1)^(1/3) = 0.794; plain: (4 * 0.25 * 1)^(1/3) = 1
		"1 threads: 3 cases against oneDNN, geometric mean of oneDNN ms / loom ms 0.794 (oneDNN at its best layout where faster, 1 cases have one; at its plain layouts 1.000), worst b 0.25, best a 2.00",
		"below 0.7: b 0.25\n",
		// tuned/default: (1/2 * 4/8)^(1/2) = 0.5; oneDNN/default: (2/2 * 1/8)^(1/2) = 0.354
		"1 threads: the default schedule, geometric mean of tuned ms / default ms 0.500 over 2 cases, of oneDNN ms / default ms 0.354 over 2",
		"default slower than unscheduled: b 0.50x",
		"2 threads: the default schedule, geometric mean of tuned ms / default ms 0.250 over 1 cases\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}
