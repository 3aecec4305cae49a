package suggest

import (
	"slices"
	"testing"
)

func TestClosest(t *testing.T) {
	have := []string{"gemm", "gemm_bias_relu", "softmax", "rmsnorm", "conv2d", "tune", "bench", "build"}
	for _, c := range []struct {
		name string
		want []string
	}{
		{"gem", []string{"gemm", "gemm_bias_relu"}},
		{"softmx", []string{"softmax"}},
		{"RMSNorm", []string{"rmsnorm"}},
		{"bulid", []string{"build"}},
		{"tuen", []string{"tune"}},
		{"xyz", nil},
		{"", nil},
		{"conv", []string{"conv2d"}},
	} {
		if got := Closest(c.name, have); !slices.Equal(got, c.want) {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if got := DidYouMean("softmx", have); got != ` (did you mean "softmax"?)` {
		t.Errorf("DidYouMean: %q", got)
	}
	if got := DidYouMean("zzzz", have); got != "" {
		t.Errorf("DidYouMean of nothing close: %q", got)
	}
}
