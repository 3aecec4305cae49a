package schedule

import (
	"errors"
	"slices"
	"testing"

	"github.com/loom-go/loom/internal/workload"
)

func TestFitTile(t *testing.T) {
	for _, c := range []struct {
		d        []int64
		extent   int64
		maxInner int
		want     []int64
	}{
		{[]int64{4, 1, 6, 2}, 32, 0, []int64{4, 1, 4, 2}},
		{[]int64{8, 16}, 64, 0, []int64{4, 16}},
		{[]int64{2, 64}, 48, 16, []int64{3, 16}},
		{[]int64{1, 7}, 13, 0, []int64{13, 1}},
	} {
		got := fitTile(c.d, c.extent, c.maxInner)
		if !slices.Equal(got, c.want) || checkPerfectTile(got, c.extent, len(c.d), c.maxInner) != nil {
			t.Errorf("fitTile(%v, %d, %d) = %v, want %v", c.d, c.extent, c.maxInner, got, c.want)
		}
	}
}

// TestReplayAdaptsDecisions: a trace whose tiling was recorded at another
// size is refused as it is, and with AdaptDecisions replays with the
// nearest tiling that fits, which its trace records.
func TestReplayAdaptsDecisions(t *testing.T) {
	s, err := New(workload.Matmul(48, 48, 48).Func, WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.GetBlock("C")
	loops, _ := s.GetLoops(c)
	if _, err := s.SamplePerfectTileWith(loops[0], 3, 0, []int64{3, 4, 4}); err != nil {
		t.Fatal(err)
	}
	trace := s.Trace()
	other := workload.Matmul(32, 32, 32).Func
	_, err = Replay(other, trace, nil)
	var re *ReplayError
	if !errors.As(err, &re) || re.Kind != "sample_perfect_tile" {
		t.Fatalf("replay at another size: %v, want a refusal of the tiling", err)
	}
	r, err := Replay(other, trace, nil, AdaptDecisions())
	if err != nil {
		t.Fatal(err)
	}
	got := r.Trace().Insts[len(r.Trace().Insts)-1].Decision
	if !slices.Equal(got, []int64{2, 4, 4}) {
		t.Errorf("the fitted decision is %v, want [2 4 4]", got)
	}
}
