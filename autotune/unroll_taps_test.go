package autotune

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/codegen/llvm/native"
)

// unrollCase is a function for Default (src with sizes substituted for
// defaultOf) and whether the loops a test asks about come out unrolled;
// run, when not nil, also checks the kernel against the interpreter.
type unrollCase struct {
	description string
	src         string
	sizes       map[string]int
	unrolled    bool
	run         *native.Cache
}

// TestDefaultUnrollsSharedTaps: with AVX-512, Default's register tile of
// a depthwise convolution in NHWC at stride 1 (seven pixels along the
// width by two vectors of channels) is unrolled with the taps along the
// row (sharesWindows), so that neighbouring pixels' taps load each input
// vector once; at stride 2, and for a dense convolution, the taps stay
// rolled. The unrolled 3x3 case computes what the interpreter does.
func TestDefaultUnrollsSharedTaps(t *testing.T) {
	cache, err := sharedCache()
	if err != nil {
		t.Fatal(err)
	}
	const depthwise = `func dw(X: float32[HP, HP, 384], W: float32[KK, KK, 384], Y: float32[14, 14, 384]) {
  ScheduleBlock(root) {
    serial for (h, 0, 14) {
      serial for (w, 0, 14) {
        serial for (c, 0, 384) {
          serial for (rh, 0, KK) {
            serial for (rw, 0, KK) {
              ScheduleBlock(Y) {
                vh, vw, vc, vrh, vrw = axis.bind(h, w, c, rh, rw)
                axis.domain(vh = spatial(0, 14), vw = spatial(0, 14), vc = spatial(0, 384), vrh = reduce(0, KK), vrw = reduce(0, KK))
                reads(Y[vh, vw, vc], X[vh * SS + vrh, vw * SS + vrw, vc], W[vrh, vrw, vc])
                writes(Y[vh, vw, vc])
                init {
                  Y[vh, vw, vc] = 0.0f
                }
                Y[vh, vw, vc] = Y[vh, vw, vc] + X[vh * SS + vrh, vw * SS + vrw, vc] * W[vrh, vrw, vc]
              }
            }
          }
        }
      }
    }
  }
}`
	for _, c := range []unrollCase{
		{"depthwise 3x3, stride 1", depthwise, map[string]int{"HP": 16, "KK": 3, "SS": 1}, true, cache},
		{"depthwise 5x5, stride 1", depthwise, map[string]int{"HP": 18, "KK": 5, "SS": 1}, true, nil},
		{"depthwise 3x3, stride 2", depthwise, map[string]int{"HP": 29, "KK": 3, "SS": 2}, false, nil},
		{"dense 3x3, stride 1", denseConvSrc, map[string]int{"CC": 64}, false, nil},
	} {
		_, s := defaultOf(t, c.run, avx512Server, c.src, c.sizes)
		if unrolled := strings.Contains(s.Func().String(), "unrolled for (rw,"); unrolled != c.unrolled {
			t.Errorf("%s: the taps along the row unrolled: %v, want %v; trace:\n%s", c.description, unrolled, c.unrolled, s.Trace())
		}
	}
}
