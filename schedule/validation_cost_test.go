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
// the adversarial generator's steps on the corpus run on two schedules in
// lockstep, one without the validator and one with every step validated,
// and the table gives, per primitive, the median time of a step in each,
// the median ratio, and the worst step's time validated and its ratio (go
// test ./schedule -run ValidationCostInSchedule -long -v: each function at
// seeds 1 to 10). The validator shares the models the primitives build
// (the function before the step, and the one after for the next step),
// which is why the overhead is less than validate.Check alone costs
// (TestAdversarialValidatorCost). It is a measurement and runs with -long
// only: its one assertion, that the two schedules agree, is checked on
// every step by TestAdversarialSchedules too.
func TestValidationCostInSchedule(t *testing.T) {
	if !*long {
		t.Skip("a measurement: run with -long")
	}
	per := 12
	if testing.Short() {
		per = 8
	}
	type times struct{ none, all []time.Duration }
	byPrim := map[string]*times{}
	for i, c := range adversarialCorpus(t) {
		for _, sd := range corpusSeeds(i, 1, 2, 10) {
			var ss [2]*schedule.Schedule
			for i, validated := range []bool{false, true} {
				s, err := schedule.New(c.Func, schedule.WithSeed(sd), schedule.WithValidation(validated))
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
				var d [2]time.Duration
				var errs [2]error
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
				if (errs[0] == nil) != (errs[1] == nil) {
					t.Fatalf("%s seed %d: %s: without validation %v, validated %v", c.Name, sd, resolved, errs[0], errs[1])
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
				x.all = append(x.all, d[1])
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
	ratio := func(a, b time.Duration) float64 { return float64(a) / float64(max(b, time.Microsecond)) }
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %6s %12s %12s %8s %12s %8s\n", "primitive", "steps", "unvalidated", "validated", "ratio", "worst", "ratio")
	for _, p := range prims {
		x := byPrim[p]
		n, a := med(x.none), med(x.all)
		rs := make([]float64, len(x.all))
		worst := 0
		for i := range x.all {
			rs[i] = ratio(x.all[i], x.none[i])
			if x.all[i] > x.all[worst] {
				worst = i
			}
		}
		slices.Sort(rs)
		fmt.Fprintf(&b, "%-24s %6d %12v %12v %8.2f %12v %8.2f\n", p, len(x.none), n.Round(time.Microsecond), a.Round(time.Microsecond), rs[len(rs)/2],
			x.all[worst].Round(time.Microsecond), ratio(x.all[worst], x.none[worst]))
	}
	t.Logf("time of a step, median and worst (validated: every step, the models shared; ratio: validated over unvalidated, the median of the ratios and the worst step's):\n%s", b.String())
}
