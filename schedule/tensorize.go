package schedule

import (
	"errors"
	"fmt"
	"strings"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/intrin"
)

// TensorizeKey is the annotation Tensorize puts on a nest's outer loop:
// the name of the intrinsic (package intrin) that computes the nest.
const TensorizeKey = intrin.AnnotationKey

// Tensorize marks loop l, the outer loop of a perfect nest around one
// block, as computed by the hardware instruction named intrinsic (see
// package intrin; intrin.Names lists them): a Tensor Core's mma.sync
// computes a 16 x 8 tile of C += A · B at once. The nest must compute
// exactly the intrinsic's description on tiles of its buffers (the same
// loop extents in order, the same update operation by operation, each
// operand a tile at an offset the nest's loops leave alone); Tensorize
// checks that and refuses otherwise, naming the difference. The loops
// stay (the interpreter runs them); the code generator of the
// intrinsic's target emits the instruction instead. Tile the loops to the
// intrinsic's shape, reorder them to its order and decompose the
// reduction's init first.
func (s *Schedule) Tensorize(l Loop, intrinsic string) error {
	const prim = "tensorize"
	loop, _, err := s.loop(prim, l)
	if err != nil {
		return err
	}
	in, ok := intrin.Lookup(intrinsic)
	if !ok {
		return badArg(prim, s.f, []ast.Node{loop}, "no intrinsic %q (have %s)", intrinsic, strings.Join(intrin.Names(), ", "))
	}
	if _, err := in.Match(loop); err != nil {
		var mm *intrin.MismatchError
		if errors.As(err, &mm) {
			at := []ast.Node{loop}
			switch mm.At.(type) {
			case *ast.For, *ast.ScheduleBlock:
				if mm.At != ast.Node(loop) {
					at = append(at, mm.At)
				}
			}
			return illegal(prim, s.f, at, "loop %s: %s", loop.Var.Name, mm.Error())
		}
		return illegal(prim, s.f, []ast.Node{loop}, "loop %s: %v", loop.Var.Name, err)
	}
	c := *loop
	c.Annotations = loop.Annotations.Clone()
	if c.Annotations == nil {
		c.Annotations = ast.Annotations{}
	}
	c.Annotations[TensorizeKey] = intrinsic
	if err := s.commit(prim, replace(s.f, loop, &c)); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(l.rv), Str(intrinsic)}})
	return nil
}

func init() {
	register("tensorize", instKind{
		args: 2,
		replay: func(s *Schedule, args []any) error {
			l, err := argLoop(args[0])
			if err != nil {
				return err
			}
			name, err := argString(args[1])
			if err != nil {
				return err
			}
			return s.Tensorize(l, name)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.Tensorize(%s, %s)", args[0], args[1]) },
		outputs: "none",
	})
}
