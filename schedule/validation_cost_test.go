package schedule_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/internal/schedgen"
	"github.com/loom-go/loom/schedule"
)

// TestValidationCostInSchedule measures what validation costs a schedule:
// the adversarial generator's steps on the corpus run on three schedules
// in lockstep, without the validator, with the default policy (the
// primitives whose proofs use poly) and with every step validated, and the
// table gives, per primitive, the median time of a step in each and the
// median overhead of validation (go test ./schedule -run
// ValidationCostInSchedule -v). The validator shares the models the
// primitives build (the function before the step, and the one after for
// the next step), which is why the overhead is less than validate.Check
// alone costs (TestAdversarialValidatorCost). It asserts nothing but that
// the three schedules agree.
func TestValidationCostInSchedule(t *testing.T) {
	seeds, per := 2, 12
	if testing.Short() {
		seeds, per = 1, 8
	}
	if *long {
		seeds = 10
	}
	type times struct{ none, cheap, all []time.Duration }
	byPrim := map[string]*times{}
	for _, c := range adversarialCorpus(t) {
		for sd := uint64(1); sd <= uint64(seeds); sd++ {
			var ss [3]*schedule.Schedule
			for i, opt := range []schedule.Option{schedule.WithValidation(false), nil, schedule.WithValidation(true)} {
				opts := []schedule.Option{schedule.WithSeed(sd)}
				if opt != nil {
					opts = append(opts, opt)
				}
				was := schedule.SetValidation(false) // the default policy for ss[1]
				s, err := schedule.New(c.Func, opts...)
				schedule.SetValidation(was)
				if err != nil {
					t.Fatal(err)
				}
				ss[i] = s
			}
			g := schedgen.NewGen(sd, schedgen.Adversarial)
			accepted := 0
			for try := 0; try < 5*per && accepted < per; try++ {
				op := g.Next(ss[0].Func())
				if op.Prim == "" {
					break
				}
				var d [3]time.Duration
				var errs [3]error
				var resolved schedgen.Op
				before := ss[0].Func()
				for i, s := range ss {
					var t0 time.Time
					r, err := op.Apply(s, func() { t0 = time.Now() })
					d[i], errs[i] = time.Since(t0), err
					if i == 0 {
						resolved = r
					}
				}
				if (errs[0] == nil) != (errs[1] == nil) || (errs[0] == nil) != (errs[2] == nil) {
					t.Fatalf("%s seed %d: %s: without validation %v, by default %v, always %v", c.Name, sd, resolved, errs[0], errs[1], errs[2])
				}
				if errs[0] != nil {
					g.Observe(resolved, before, before, false)
					continue
				}
				accepted++
				g.Observe(resolved, before, ss[0].Func(), true)
				x := byPrim[op.Prim]
				if x == nil {
					x = &times{}
					byPrim[op.Prim] = x
				}
				x.none = append(x.none, d[0])
				x.cheap = append(x.cheap, d[1])
				x.all = append(x.all, d[2])
			}
		}
	}
	prims := make([]string, 0, len(byPrim))
	for p := range byPrim {
		prims = append(prims, p)
	}
	slices.Sort(prims)
	med := func(xs []time.Duration) time.Duration {
		ys := slices.Clone(xs)
		slices.Sort(ys)
		return ys[len(ys)/2]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %6s %12s %12s %12s %14s\n", "primitive", "steps", "unvalidated", "by default", "always", "always/unval.")
	for _, p := range prims {
		x := byPrim[p]
		n, c, a := med(x.none), med(x.cheap), med(x.all)
		fmt.Fprintf(&b, "%-24s %6d %12v %12v %12v %14.2f\n", p, len(x.none), n.Round(time.Microsecond), c.Round(time.Microsecond), a.Round(time.Microsecond), float64(a)/float64(max(n, time.Microsecond)))
	}
	t.Logf("median time of a step (validated where the column says; the models shared):\n%s", b.String())
}
