package schedule

import (
	"fmt"

	"github.com/loom-go/loom/ast"
)

var (
	parallelKind   = ast.Parallel
	vectorizedKind = ast.Vectorized
	unrolledKind   = ast.Unrolled
)

// gpuAxes maps the thread axis names Bind accepts to loop kinds.
var gpuAxes = map[string]ast.ForKind{
	"blockIdx.x": ast.GPUBlockX, "blockIdx.y": ast.GPUBlockY, "blockIdx.z": ast.GPUBlockZ,
	"threadIdx.x": ast.GPUThreadX, "threadIdx.y": ast.GPUThreadY, "threadIdx.z": ast.GPUThreadZ,
}

// Bind binds loop l to a GPU thread axis: "blockIdx.x" (.y, .z) or
// "threadIdx.x" (.y, .z). No iteration may depend on another, except that
// a reduce loop may be bound to threads: that is a cross-thread reduction.
func (s *Schedule) Bind(l Loop, axis string) error {
	kind, ok := gpuAxes[axis]
	if !ok {
		loop, _, err := s.loop("bind", l)
		if err != nil {
			return err
		}
		return badArg("bind", s.f, nodes(loop), "unknown thread axis %q (want blockIdx.x, .y, .z or threadIdx.x, .y, .z)", axis)
	}
	return s.setKind("bind", l, kind, []Arg{Str(axis)})
}

func init() {
	register("bind", instKind{
		args: 2,
		replay: func(s *Schedule, args []any) error {
			l, err := argLoop(args[0])
			if err != nil {
				return err
			}
			axis, err := argString(args[1])
			if err != nil {
				return err
			}
			return s.Bind(l, axis)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.Bind(%s, %s)", args[0], args[1]) },
		outputs: "none",
	})
}
