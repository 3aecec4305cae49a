package validate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/validate"
)

// initBeforeFill is the long run's reduce_elementwise at seed 82, c0ba562,
// cut down: S's cache is filled from S under the row loop, then S's block
// updates it; decompose_reduction at that loop put the init before the
// loop, where the fill overwrote it.
const initBeforeFillBefore = `func fill_init[R: int32, C: int32](X: float32[R, C], Out: float32[R]) {
  ScheduleBlock(root) {
    alloc S: float32[R]
    alloc S_local: float32[R] in local
    serial for (i_S, 0, R) {
      ScheduleBlock(S_local_fill) {
        v0 = axis.bind(i_S)
        axis.domain(v0 = spatial(0, R))
        reads(S[v0])
        writes(S_local[v0])
        S_local[v0] = S[v0]
      }
      serial for (k_S, 0, C) {
        ScheduleBlock(S) {
          vi, vk = axis.bind(i_S, k_S)
          axis.domain(vi = spatial(0, R), vk = reduce(0, C))
          reads(S_local[vi], X[vi, vk])
          writes(S_local[vi])
          init {
            S_local[vi] = 0.0f
          }
          S_local[vi] = S_local[vi] + X[vi, vk]
        }
      }
      ScheduleBlock(S_local) {
        v0 = axis.bind(i_S)
        axis.domain(v0 = spatial(0, R))
        reads(S_local[v0])
        writes(S[v0])
        S[v0] = S_local[v0]
      }
    }
    serial for (i, 0, R) {
      ScheduleBlock(Out) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, R))
        reads(S[vi])
        writes(Out[vi])
        Out[vi] = S[vi]
      }
    }
  }
}`

// initBeforeFillAfter has the init out of S, before the row loop.
var initBeforeFillAfter = strings.NewReplacer(`    serial for (i_S, 0, R) {
      ScheduleBlock(S_local_fill) {`, `    serial for (i_S_init, 0, R) {
      ScheduleBlock(S_init) {
        vi = axis.bind(i_S_init)
        axis.domain(vi = spatial(0, R))
        writes(S_local[vi])
        S_local[vi] = 0.0f
      }
    }
    serial for (i_S, 0, R) {
      ScheduleBlock(S_local_fill) {`, `          init {
            S_local[vi] = 0.0f
          }
`, "").Replace(initBeforeFillBefore)

// initInPlace is the decomposition done right: the init after the fill,
// under the row loop.
var initInPlace = strings.NewReplacer(`      serial for (k_S, 0, C) {`, `      ScheduleBlock(S_init) {
        vi = axis.bind(i_S)
        axis.domain(vi = spatial(0, R))
        writes(S_local[vi])
        S_local[vi] = 0.0f
      }
      serial for (k_S, 0, C) {`, `          init {
            S_local[vi] = 0.0f
          }
`, "").Replace(initBeforeFillBefore)

// TestCreatedBlockOrdered: a block a step creates is ordered against every
// other access of what it writes: an init whose values a fill overwrites
// before the update reads them is refused (the "created" question), one
// after the fill is not; a created block under a parallel loop that shares
// cells with another block is a race.
func TestCreatedBlockOrdered(t *testing.T) {
	check := func(before, after string) error {
		t.Helper()
		f, err := ast.Parse(before)
		if err != nil {
			t.Fatal(err)
		}
		g, err := ast.Parse(after)
		if err != nil {
			t.Fatalf("%v\n%s", err, after)
		}
		return validate.Check(f, g)
	}
	err := check(initBeforeFillBefore, initBeforeFillAfter)
	var ve *validate.Error
	if !errors.As(err, &ve) || ve.Question != "created" || ve.Block != "S_init" {
		t.Errorf("the init before the fill: got %v, want the created question to refuse S_init", err)
	}
	if err := check(initBeforeFillBefore, initInPlace); err != nil {
		t.Errorf("the init after the fill: %v", err)
	}
	// Rows in parallel, the init of row R-1-i in row i's iteration: it
	// meets row R-1-i's update in another iteration, at once.
	par := strings.Replace(initBeforeFillBefore, "serial for (i_S, 0, R)", "parallel for (i_S, 0, R)", 1)
	race := strings.Replace(strings.Replace(initInPlace, "serial for (i_S, 0, R)", "parallel for (i_S, 0, R)", 1),
		`      ScheduleBlock(S_init) {
        vi = axis.bind(i_S)`, `      ScheduleBlock(S_init) {
        vi = axis.bind(R - 1 - i_S)`, 1)
	if err := check(par, race); !errors.As(err, &ve) || ve.Question != "created" {
		t.Errorf("an init of another row's cell under a parallel loop: got %v, want the created question to refuse it", err)
	}
}
