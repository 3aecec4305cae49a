package schedule

import (
	"fmt"
	"math"

	"github.com/loom-go/loom/ast"
)

// AnnotateLoop sets the annotation key of loop l to value, an int, int64,
// float64, string or bool. Annotations are hints for the code generators
// (an unroll limit, a pragma) and never change what the function computes.
func (s *Schedule) AnnotateLoop(l Loop, key string, value any) error {
	v, arg, err := annotationValue(value)
	if err != nil {
		return badArg("annotate", s.f, nil, "%v", err)
	}
	return s.annotateLoop(l, key, v, arg)
}

// AnnotateLoopBy sets an annotation of loop l to a sampled value; the trace
// links them.
func (s *Schedule) AnnotateLoopBy(l Loop, key string, v Value) error {
	if v.s != s {
		return badHandle("annotate", s.f, "the value is not a value of this schedule")
	}
	return s.annotateLoop(l, key, v.v, Ref(v.rv))
}

func (s *Schedule) annotateLoop(l Loop, key string, v any, arg Arg) error {
	const prim = "annotate"
	loop, _, err := s.loop(prim, l)
	if err != nil {
		return err
	}
	c := *loop
	c.Annotations = loop.Annotations.Clone()
	if c.Annotations == nil {
		c.Annotations = ast.Annotations{}
	}
	c.Annotations[key] = v
	if err := s.commit(prim, replace(s.f, loop, &c)); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(l.rv), Str(key), arg}})
	return nil
}

// AnnotateBlock sets the annotation key of block b to value (see
// AnnotateLoop).
func (s *Schedule) AnnotateBlock(b Block, key string, value any) error {
	const prim = "annotate"
	v, arg, err := annotationValue(value)
	if err != nil {
		return badArg(prim, s.f, nil, "%v", err)
	}
	blk, _, err := s.block(prim, b)
	if err != nil {
		return err
	}
	c := *blk
	c.Annotations = blk.Annotations.Clone()
	if c.Annotations == nil {
		c.Annotations = ast.Annotations{}
	}
	c.Annotations[key] = v
	if err := s.commit(prim, replace(s.f, blk, &c)); err != nil {
		return err
	}
	s.record(Inst{Kind: prim, Args: []Arg{Ref(b.rv), Str(key), arg}})
	return nil
}

// annotationValue converts a Go value to an annotation value and its trace
// argument.
func annotationValue(value any) (any, Arg, error) {
	switch v := value.(type) {
	case int:
		return int64(v), IntArg(int64(v)), nil
	case int64:
		return v, IntArg(v), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, Arg{}, fmt.Errorf("annotation value %v is not finite", v)
		}
		return v, Arg{Float: &v}, nil
	case string:
		return v, Str(v), nil
	case bool:
		return v, Arg{Bool: &v}, nil
	}
	return nil, Arg{}, fmt.Errorf("annotation value of type %T (want int, int64, float64, string or bool)", value)
}

func init() {
	register("annotate", instKind{
		args: 3,
		replay: func(s *Schedule, args []any) error {
			if len(args) != 3 {
				return fmt.Errorf("annotate takes a target, a key and a value")
			}
			key, err := argString(args[1])
			if err != nil {
				return err
			}
			switch t := args[0].(type) {
			case Loop:
				if v, ok := args[2].(Value); ok {
					return s.AnnotateLoopBy(t, key, v)
				}
				return s.AnnotateLoop(t, key, args[2])
			case Block:
				return s.AnnotateBlock(t, key, args[2])
			}
			return fmt.Errorf("annotate needs a loop or a block, got %T", args[0])
		},
		goCall: func(args []string) string {
			return fmt.Sprintf("sch.AnnotateLoop(%s, %s, %s)", args[0], args[1], args[2])
		},
		goTyped: func(args []string, kinds []byte) string {
			if kinds[0] == 'b' {
				return fmt.Sprintf("sch.AnnotateBlock(%s, %s, %s)", args[0], args[1], args[2])
			}
			if kinds[2] == 'v' {
				return fmt.Sprintf("sch.AnnotateLoopBy(%s, %s, %s)", args[0], args[1], args[2])
			}
			return fmt.Sprintf("sch.AnnotateLoop(%s, %s, %s)", args[0], args[1], args[2])
		},
		outputs: "none",
	})
}
