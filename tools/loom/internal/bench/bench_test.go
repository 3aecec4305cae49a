package bench

import (
	"errors"
	"math"
	"testing"
	"time"
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

// TestVariation: the coefficient of variation of samples (the sample
// standard deviation over the mean), 0 for equal samples or one.
func TestVariation(t *testing.T) {
	ms := func(xs ...float64) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x*float64(time.Millisecond)))
		}
		return out
	}
	for _, c := range []struct {
		samples []time.Duration
		want    float64
	}{
		{ms(1, 1, 1), 0},
		{ms(2), 0},
		{ms(1, 3), 0.7071067811865476}, // sd sqrt(2), mean 2
		{ms(2, 4, 4, 4, 5, 5, 7, 9), 0.4276179870598791},
	} {
		if got := Variation(c.samples); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Variation(%v) = %v, want %v", c.samples, got, c.want)
		}
	}
}
