package partition_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/internal/compact"
	"github.com/loom-go/loom/codegen/partition"
	"github.com/loom-go/loom/fusion"
)

// TestBordersOfWindows: convolutions and poolings that read a padded
// input through tests (grouped ones in NHWC) or copy it into a padded
// buffer (the others), under their default schedules at one and two
// threads (channels last, one of them per window, in turn; both with -long):
// versioned, they compute what they computed (interpreted, every buffer
// compared), at image sizes from 1x1 (all border) up, and every version
// runs some block with fewer tests.
func TestBordersOfWindows(t *testing.T) {
	versioned, turn := 0, 0
	for _, c := range []struct {
		x, op, w, attrs string
	}{
		{"[1, 16, 12, 11]", "conv2d", "[16, 1, 3, 3]", `{"groups": 16, "pads": [1, 1, 1, 1]}`},
		{"[1, 16, 13, 12]", "conv2d", "[16, 1, 3, 3]", `{"groups": 16, "strides": [2, 2], "pads": [1, 1, 1, 1]}`},
		{"[1, 8, 14, 9]", "conv2d", "[8, 1, 5, 5]", `{"groups": 8, "strides": [2, 1], "pads": [2, 1, 2, 3]}`},
		{"[1, 8, 11, 12]", "conv2d", "[8, 2, 3, 3]", `{"groups": 4, "dilations": [2, 2], "pads": [2, 2, 2, 2]}`},
		{"[1, 16, 1, 1]", "conv2d", "[16, 1, 7, 7]", `{"groups": 16, "pads": [3, 3, 3, 3]}`},
		// Rows of the register tile along a width of 7 in tiles of 4:
		// the tail declares its own accumulators inside the loop the
		// border versions.
		{"[1, 16, 7, 7]", "conv2d", "[16, 1, 3, 3]", `{"groups": 16, "pads": [1, 1, 1, 1]}`},
		{"[1, 8, 2, 3]", "conv2d", "[8, 1, 3, 3]", `{"groups": 8, "strides": [2, 2], "pads": [1, 1, 1, 1]}`},
		{"[1, 4, 10, 9]", "conv2d", "[6, 4, 3, 3]", `{"pads": [1, 1, 1, 1]}`},
		{"[1, 8, 12, 10]", "max_pool2d", "", `{"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}`},
		{"[1, 8, 9, 9]", "avg_pool2d", "", `{"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}`},
	} {
		for _, layout := range []string{fusion.LayoutChannelsLast, fusion.LayoutChannelsFirst} {
			name := fmt.Sprintf("%s %s %s %s", c.op, c.x, c.attrs, layout)
			inputs := `{"name": "X", "dtype": "float32", "shape": ` + c.x + `}`
			args := `"X"`
			if c.w != "" {
				inputs += `, {"name": "W", "dtype": "float32", "shape": ` + c.w + `}`
				args += `, "W"`
			}
			g, err := fusion.ParseJSON([]byte(`{"name": "w", "inputs": [` + inputs + `],
				"nodes": [{"op": "` + c.op + `", "inputs": [` + args + `], "output": "Y", "attrs": ` + c.attrs + `}],
				"outputs": ["Y"]}`))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			p, err := fusion.Compile(g, fusion.Options{Layout: layout})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			threadCounts := []int{1, 2}
			if layout == fusion.LayoutChannelsLast && !*long {
				// Channels last, the convolutions' defaults and their
				// interpretation cost seconds each: one thread count
				// per window, in turn.
				threadCounts = []int{1 + turn%2}
				turn++
			}
			for _, k := range p.Kernels {
				for _, threads := range threadCounts {
					s, err := autotune.Default(k.Func, autotune.Target{VectorLanes: 8, Threads: threads})
					if err != nil {
						t.Fatalf("%s: %v", k.Name, err)
					}
					before := partition.Func(s.Func())
					after := partition.Borders(before)
					if after == before {
						continue
					}
					versioned++
					if err := ast.Verify(after); err != nil {
						t.Fatalf("%s: %v\n%s", name, err, ast.Print(after))
					}
					allowed := func(*ast.Buffer, []*ast.For) bool { return true }
					if !allocInLoop(before) {
						// Nothing declared inside a loop the versioning
						// copies (the compaction check costs two
						// polyhedral models of the kernel).
					} else if n, m := len(compact.Plan(before, allowed)), len(compact.Plan(after, allowed)); m < n {
						t.Errorf("%s, %s: %d temporaries compact before versioning, %d after\n%s", name, k.Name, n, m, ast.Print(after))
					}
					if !fewerTests(before, after) {
						t.Errorf("%s, %s: versioned, yet no block runs with fewer tests\n%s", name, k.Name, ast.Print(after))
					}
					same(t, name+" "+k.Name, before, after, map[string]int64{})
				}
			}
		}
	}
	least := 10 // of 18 at this writing; without -long, of 10 (half the channels-last kernels)
	if !*long {
		least = 8
	}
	t.Logf("%d kernels versioned", versioned)
	if versioned < least {
		t.Errorf("%d kernels versioned: the test checks little", versioned)
	}
}

// fewestTests returns, by block name (the copies the versions make named
// after it), the fewest conjuncts of selects one copy tests.
func fewestTests(f *ast.Func) map[string]int {
	out := map[string]int{}
	ast.Inspect(f, func(x ast.Node) bool {
		b, ok := x.(*ast.ScheduleBlock)
		if !ok || b.HoldsBlock() {
			return true
		}
		n := 0
		ast.Inspect(b.Body, func(x ast.Node) bool {
			if s, ok := x.(*ast.Select); ok {
				n += strings.Count(ast.Print(s.Cond), "&&") + 1
			}
			return true
		})
		name := strings.TrimRight(strings.ReplaceAll(b.Name, "_in", ""), "0123456789")
		if m, ok := out[name]; !ok || n < m {
			out[name] = n
		}
		return true
	})
	return out
}

// fewerTests reports whether some block of after runs with fewer tests
// than in before.
func fewerTests(before, after *ast.Func) bool {
	was := fewestTests(before)
	for name, n := range fewestTests(after) {
		if n < was[name] {
			return true
		}
	}
	return false
}

// allocInLoop reports whether f declares a temporary inside a loop (a
// tail's own accumulators).
func allocInLoop(f *ast.Func) bool {
	found := false
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.For); ok {
			ast.Inspect(l.Body, func(m ast.Node) bool {
				_, isAlloc := m.(*ast.Alloc)
				found = found || isAlloc
				return !found
			})
			return false
		}
		return !found
	})
	return found
}
