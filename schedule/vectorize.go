package schedule

import "fmt"

// Vectorize makes loop l run as SIMD lanes. The loop must have a constant
// extent and no iteration may depend on another.
func (s *Schedule) Vectorize(l Loop) error { return s.setKind("vectorize", l, vectorizedKind, nil) }

func init() {
	register("vectorize", instKind{
		args: 1,
		replay: func(s *Schedule, args []any) error {
			l, err := argLoop(args[0])
			if err != nil {
				return err
			}
			return s.Vectorize(l)
		},
		goCall:  func(args []string) string { return fmt.Sprintf("sch.Vectorize(%s)", args[0]) },
		outputs: "none",
	})
}
