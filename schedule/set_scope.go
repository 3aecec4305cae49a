package schedule

import (
	"fmt"

	"github.com/loom-go/loom/ast"
)

// SetScope moves the temporary buffer named buf, which block b writes, to
// another storage scope ("global", "shared" or "local"). Parameters stay in
// global memory.
func (s *Schedule) SetScope(b Block, buf, scope string) error {
	const prim = "set_scope"
	blk, _, err := s.block(prim, b)
	if err != nil {
		return err
	}
	here := nodes(blk)
	sc, ok := scopes[scope]
	if !ok {
		return badArg(prim, s.f, here, "unknown scope %q (want global, shared or local)", scope)
	}
	target := findBuffer(blk, buf)
	if target == nil {
		return badArg(prim, s.f, here, "block %s does not access a buffer named %q", blk.Name, buf)
	}
	if isParam(s.f, target) {
		return illegal(prim, s.f, here, "%s is a parameter of the function; parameters live in global memory", target.Name)
	}
	nb := *target
	nb.Scope = sc
	g := ast.RebindBuffer(s.f, target, &nb)
	if err := s.commit(prim, g); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv), Str(buf), Str(scope)}})
	return nil
}

func init() {
	register("set_scope", instKind{
		args: 3,
		replay: func(s *Schedule, args []any) error {
			b, buf, scope, err := replayBlockBufferScope(args)
			if err != nil {
				return err
			}
			return s.SetScope(b, buf, scope)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.SetScope(%s, %s, %s)", args[0], args[1], args[2]) },
		outputs: "none",
	})
}
