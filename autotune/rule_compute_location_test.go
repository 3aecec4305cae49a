package autotune

import (
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/schedule"
)

// TestCacheTileLocationGroupSteps: a pad read in groups of 8 channels
// (floordiv(c, 8)*8 + rc) by a tiled convolution whose first tile level
// steps the filters by CS. By 16 (whole groups) each iteration of the
// filters' loop reads its own groups, and the pad goes under it; by 4,
// two neighbouring iterations read one group and the pad computed there
// would be computed twice, so it stops at the rows' loop above.
func TestCacheTileLocationGroupSteps(t *testing.T) {
	const src = `func tiled(X: float32[14, 32], W: float32[3, 8, 32], Y: float32[14, 32]) {
  ScheduleBlock(root) {
    alloc P: float32[16, 32]
    serial for (ph, 0, 16) {
      serial for (pc, 0, 32) {
        ScheduleBlock(P) {
          vph, vpc = axis.bind(ph, pc)
          axis.domain(vph = spatial(0, 16), vpc = spatial(0, 32))
          reads(X[min(13, max(0, vph - 1)), vpc])
          writes(P[vph, vpc])
          P[vph, vpc] = select(vph >= 1 && vph < 15, X[min(13, max(0, vph - 1)), vpc], 0.0f)
        }
      }
    }
    serial for (h_0, 0, 2) {
      serial for (c_0, 0, CN) {
        serial for (h_1, 0, 7) {
          serial for (c_1, 0, CS) {
            serial for (rc, 0, 8) {
              serial for (rh, 0, 3) {
                ScheduleBlock(Y) {
                  vh, vc, vrc, vrh = axis.bind(h_0 * 7 + h_1, c_0 * CS + c_1, rc, rh)
                  axis.domain(vh = spatial(0, 14), vc = spatial(0, 32), vrc = reduce(0, 8), vrh = reduce(0, 3))
                  reads(Y[vh, vc], P[vh + vrh, floordiv(vc, 8) * 8 + vrc], W[vrh, vrc, vc])
                  writes(Y[vh, vc])
                  attrs("autotune.tiling_structure" = "SSRSRS")
                  init {
                    Y[vh, vc] = 0.0f
                  }
                  Y[vh, vc] = Y[vh, vc] + P[vh + vrh, floordiv(vc, 8) * 8 + vrc] * W[vrh, vrc, vc]
                }
              }
            }
          }
        }
      }
    }
  }
}`
	for _, c := range []struct {
		step string
		want int64 // index among the compute locations: 0 h_0, 1 c_0
	}{{"16", 1}, {"4", 0}} {
		n := map[string]string{"16": "2", "4": "8"}[c.step]
		f, err := ast.Parse(strings.NewReplacer("CS", c.step, "CN", n).Replace(src))
		if err != nil {
			t.Fatal(err)
		}
		s, err := schedule.New(f)
		if err != nil {
			t.Fatal(err)
		}
		var pad *ast.ScheduleBlock
		for _, b := range s.Func().Blocks() {
			if b.Name == "P" {
				pad = b
			}
		}
		if !readThroughGroups(s, pad) {
			t.Fatalf("step %s: the pad is not read through groups", c.step)
		}
		got, ok := cacheTileLocation(s, pad)
		if !ok || got != c.want {
			t.Errorf("filters stepped by %s: location %d (found %v), want %d", c.step, got, ok, c.want)
		}
	}
}
