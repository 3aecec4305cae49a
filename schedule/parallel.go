package schedule

import "fmt"

// Parallel makes loop l run its iterations on the CPU's threads. It is
// refused if an iteration depends on another (a reduction loop must be
// rfactor-ed first).
func (s *Schedule) Parallel(l Loop) error { return s.setKind("parallel", l, parallelKind, nil) }

func init() {
	register("parallel", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			l, err := argLoop(args[0])
			if err != nil {
				return err
			}
			return s.Parallel(l)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.Parallel(%s)", args[0]) },
		outputs: "none",
	})
}
