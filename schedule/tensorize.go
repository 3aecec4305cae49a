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
// reduction's init first. TensorizeBlock is the same for the block
// Blockize makes around such a nest.
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
		return illegal(prim, s.f, mismatchNodes(nil, loop, err), "loop %s: %s", loop.Var.Name, mismatchReason(err))
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

// TensorizeBlock marks block b, the block Blockize made around a nest, as
// computed by the hardware instruction named intrinsic: TVM's tensorize
// of a block. b's body must be one perfect nest that computes exactly the
// intrinsic's description on tiles of its buffers, as Tensorize checks for
// a loop; the tiles' offsets may use b's iteration variables (which tile
// an instance of b computes). The intrinsic's name becomes b's annotation
// under TensorizeKey; the nest stays for the interpreter, and the code
// generator of the intrinsic's target emits the instruction for each
// instance of b. The flow is TVM's: split and reorder the loops to the
// intrinsic's shape, decompose the reduction's init, blockize the inner
// nest, tensorize the new block.
//
// TensorizeBlock refuses the root block, a block with an init, and a
// block whose body is not one loop nest the intrinsic matches, naming the
// difference.
func (s *Schedule) TensorizeBlock(b Block, intrinsic string) error {
	const prim = "tensorize"
	blk, _, err := s.block(prim, b)
	if err != nil {
		return err
	}
	at := []ast.Node{blk}
	in, ok := intrin.Lookup(intrinsic)
	if !ok {
		return badArg(prim, s.f, at, "no intrinsic %q (have %s)", intrinsic, strings.Join(intrin.Names(), ", "))
	}
	if s.f.Body == ast.Stmt(blk) {
		return illegal(prim, s.f, at, "block %s is the root block; blockize the nest to tensorize and tensorize the new block", blk.Name)
	}
	if blk.Init != nil {
		return illegal(prim, s.f, at, "block %s has an init, which the instruction does not compute", blk.Name)
	}
	body := blk.Body
	for {
		seq, ok := body.(*ast.Seq)
		if !ok || len(seq.Stmts) != 1 {
			break
		}
		body = seq.Stmts[0]
	}
	loop, ok := body.(*ast.For)
	if !ok {
		return illegal(prim, s.f, at, "the body of block %s is not one loop nest (blockize the nest's outer loop to make such a block)", blk.Name)
	}
	if _, err := in.Match(loop); err != nil {
		return illegal(prim, s.f, mismatchNodes(at, loop, err), "block %s: %s", blk.Name, mismatchReason(err))
	}
	c := *blk
	c.Annotations = blk.Annotations.Clone()
	if c.Annotations == nil {
		c.Annotations = ast.Annotations{}
	}
	c.Annotations[TensorizeKey] = intrinsic
	if err := s.commit(prim, replace(s.f, blk, &c)); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv), Str(intrinsic)}})
	return nil
}

// mismatchNodes returns at with the loop or block a match failed at.
func mismatchNodes(at []ast.Node, loop *ast.For, err error) []ast.Node {
	at = append(at, loop)
	if mm, ok := errors.AsType[*intrin.MismatchError](err); ok {
		switch mm.At.(type) {
		case *ast.For, *ast.ScheduleBlock:
			if mm.At != ast.Node(loop) {
				at = append(at, mm.At)
			}
		}
	}
	return at
}

// mismatchReason is why a match failed.
func mismatchReason(err error) string {
	if mm, ok := errors.AsType[*intrin.MismatchError](err); ok {
		return mm.Error()
	}
	return err.Error()
}

func init() {
	register("tensorize", instKind{
		args: 2,
		replay: func(s *Schedule, args []any) error {
			name, err := argString(args[1])
			if err != nil {
				return err
			}
			if b, ok := args[0].(Block); ok {
				return s.TensorizeBlock(b, name)
			}
			l, err := argLoop(args[0])
			if err != nil {
				return err
			}
			return s.Tensorize(l, name)
		},
		goCall: func(args []string) string { return fmt.Sprintf("sch.Tensorize(%s, %s)", args[0], args[1]) },
		goTyped: func(args []string, kinds []byte) string {
			if kinds[0] == 'b' {
				return fmt.Sprintf("sch.TensorizeBlock(%s, %s)", args[0], args[1])
			}
			return fmt.Sprintf("sch.Tensorize(%s, %s)", args[0], args[1])
		},
		outputs: "none",
	})
}
