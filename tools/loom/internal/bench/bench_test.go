package bench

import (
	"errors"
	"testing"
)

// TestMeasure: the samples' fastest, median and slowest are in order, at
// least five of them, counted in calls (no clock is asserted); a failing
// call ends the measurement with its error.
func TestMeasure(t *testing.T) {
	calls := 0
	work := func() error {
		calls++
		x := 0
		for i := range 20000 {
			x += i * i
		}
		if x < 0 {
			t.Log(x)
		}
		return nil
	}
	tm, err := Measure(work)
	if err != nil {
		t.Fatal(err)
	}
	if tm.Samples < 5 || tm.Best > tm.Median || tm.Median > tm.Worst || tm.Best <= 0 {
		t.Errorf("timing %+v", tm)
	}
	if calls < 1+tm.Samples {
		t.Errorf("%d calls for %d samples", calls, tm.Samples)
	}
	boom := errors.New("boom")
	n := 0
	if _, err := Measure(func() error {
		n++
		if n == 3 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Errorf("a failing call: %v", err)
	}
}
