package schedule

import "fmt"

// Unroll asks the code generators to unroll loop l completely. The loop
// must have a constant extent. Unrolling keeps the order of iterations, so
// it is always legal.
func (s *Schedule) Unroll(l Loop) error { return s.setKind("unroll", l, unrolledKind, nil) }

func init() {
	register("unroll", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			l, err := argLoop(args[0])
			if err != nil {
				return err
			}
			return s.Unroll(l)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.Unroll(%s)", args[0]) },
		outputs: "none",
	})
}
