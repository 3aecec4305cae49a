package bench_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/loom-go/loom/internal/hand"
	"github.com/loom-go/loom/schedule"
	"github.com/loom-go/loom/tools/loom/internal/bench"
)

// TestConfigChecked: every hand schedule refuses a configuration it
// cannot be cut to with an error naming what is wrong (a width under 32
// bits divided by zero in the matrix multiply's tiles; one over 4096 split
// a loop by 0), and takes every power of two from 32 to 4096 bits.
func TestConfigChecked(t *testing.T) {
	for _, w := range bench.Workloads {
		d := w.Defaults()
		for name := range d {
			d[name] = min(d[name], 16) // small: scheduling cost only
		}
		c, err := w.Case(d)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		apply := func(cfg hand.Config) error {
			s, err := schedule.New(c.Func)
			if err != nil {
				t.Fatal(err)
			}
			return w.Hand(s, cfg)
		}
		for _, bits := range []int{0, 3, 31, 48, 8192, 100000, -128} {
			err := apply(hand.Config{Threads: 1, VectorBits: bits})
			if !errors.Is(err, hand.ErrConfig) || !strings.Contains(err.Error(), "vector width") {
				t.Errorf("%s at %d bits: %v, want an ErrConfig naming the vector width", w.Name, bits, err)
			}
		}
		for _, bits := range []int{32, 128, 512, 4096} {
			if err := apply(hand.Config{Threads: 1, VectorBits: bits}); errors.Is(err, hand.ErrConfig) {
				t.Errorf("%s at %d bits: %v", w.Name, bits, err)
			}
		}
		if err := apply(hand.Config{Threads: -1, VectorBits: 256}); !errors.Is(err, hand.ErrConfig) {
			t.Errorf("%s with -1 threads: %v, want an ErrConfig", w.Name, err)
		}
	}
}
