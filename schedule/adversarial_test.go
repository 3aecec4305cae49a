package schedule_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/internal/schedgen"
	"github.com/loom-go/loom/schedule"
	"github.com/loom-go/loom/validate"
)

// nativeRun is the property test's schedgen.Config.Native: it compiles f
// with codegen/llvm (through the default kernel cache) and runs it on args.
// A missing toolchain or a feature the code generator does not support
// is no failure (schedgen.ErrNotCompiled).
func nativeRun(f *ast.Func, sizes map[string]int64, args map[string]any) error {
	if _, err := native.FindToolchain(); err != nil {
		return fmt.Errorf("%w: %v", schedgen.ErrNotCompiled, err)
	}
	k, err := native.Compile(f, llvm.Options{})
	if err != nil {
		// The code generator's own proof that parallel and vectorized
		// loops carry no dependence is a second opinion, not a result:
		// where it disagrees with the schedule it is counted and listed.
		if e, ok := errors.AsType[*llvm.Error](err); ok && (strings.Contains(e.Reason, "carries a dependence") || strings.Contains(e.Reason, "cannot prove")) {
			return fmt.Errorf("%w: codegen/llvm's loop-kind proof refuses: %s", schedgen.ErrNotCompiled, e.Reason)
		}
		if errors.Is(err, llvm.ErrUnsupported) || errors.Is(err, native.ErrToolMissing) {
			return fmt.Errorf("%w: %v", schedgen.ErrNotCompiled, err)
		}
		return fmt.Errorf("compile: %w", err)
	}
	return k.Run(sizes, args)
}

// TestAdversarialValidatorCost measures what the translation validator
// costs: for every step the adversarial generator gets accepted on the
// corpus (with the validator off), the time of the primitive itself and
// the time of validate.Check(before, after), reported per primitive as a
// table of medians and worst cases (go test ./schedule -run
// ValidatorCost -v; each function at one of the seeds 1 and 2, 8 steps,
// or at 1 to 20 with -long, 12 steps). A step Check rejects is a failure:
// the primitive and the validator disagree, and one of them has a bug.
func TestAdversarialValidatorCost(t *testing.T) {
	per := 8 // accepted steps per function and seed; the later, deeper ones cost the most
	if *long {
		per = 12
	}
	type sample struct{ prim, check time.Duration }
	samples := map[string][]sample{}
	outcome := map[string]map[string]int{}
	var rejected []string
	for i, c := range adversarialCorpus(t) {
		for _, sd := range corpusSeeds(i, 1, 2, 20) {
			s, err := schedule.New(c.Func, schedule.WithValidation(false), schedule.WithSeed(sd))
			if err != nil {
				t.Fatal(err)
			}
			g := schedgen.NewGen(sd, schedgen.Adversarial)
			accepted := 0
			for try := 0; try < 5*per && accepted < per; try++ {
				op := g.Next(s.Func())
				if op.Prim == "" {
					break
				}
				var before *ast.Func
				var t0 time.Time
				resolved, err := op.Apply(s, func() { before, t0 = s.Func(), time.Now() })
				dPrim := time.Since(t0)
				if err != nil {
					g.Observe(resolved, s.Func(), s.Func(), false)
					continue
				}
				accepted++
				g.Observe(resolved, before, s.Func(), true)
				t1 := time.Now()
				verr := validate.Check(before, s.Func())
				dCheck := time.Since(t1)
				samples[op.Prim] = append(samples[op.Prim], sample{dPrim, dCheck})
				if outcome[op.Prim] == nil {
					outcome[op.Prim] = map[string]int{}
				}
				switch {
				case verr == nil:
					outcome[op.Prim]["ok"]++
				case errors.Is(verr, validate.ErrUnsupported):
					outcome[op.Prim]["unsupported"]++
				default:
					outcome[op.Prim]["rejected"]++
					rejected = append(rejected, fmt.Sprintf("%s seed %d: %s: %v", c.Name, sd, resolved, verr))
				}
			}
		}
	}
	prims := make([]string, 0, len(samples))
	for p := range samples {
		prims = append(prims, p)
	}
	slices.Sort(prims)
	var b strings.Builder
	fmt.Fprintf(&b, "validator cost per primitive (accepted steps on the corpus, validator off; times of the primitive and of validate.Check):\n")
	fmt.Fprintf(&b, "%-24s %6s %12s %12s %12s %12s %9s %6s %11s %8s\n", "primitive", "steps", "prim median", "prim worst", "check median", "check worst", "ratio med", "ok", "unsupported", "rejected")
	for _, p := range prims {
		ss := samples[p]
		prim := make([]time.Duration, len(ss))
		check := make([]time.Duration, len(ss))
		ratio := make([]float64, len(ss))
		for i, x := range ss {
			prim[i], check[i] = x.prim, x.check
			ratio[i] = float64(x.check) / float64(max(x.prim, time.Nanosecond))
		}
		slices.Sort(prim)
		slices.Sort(check)
		slices.Sort(ratio)
		o := outcome[p]
		fmt.Fprintf(&b, "%-24s %6d %12v %12v %12v %12v %9.2f %6d %11d %8d\n", p, len(ss),
			prim[len(prim)/2].Round(time.Microsecond), prim[len(prim)-1].Round(time.Microsecond),
			check[len(check)/2].Round(time.Microsecond), check[len(check)-1].Round(time.Microsecond),
			ratio[len(ratio)/2], o["ok"], o["unsupported"], o["rejected"])
	}
	if *long {
		fmt.Print(b.String())
	} else {
		t.Log(b.String())
	}
	if len(rejected) > 0 {
		t.Errorf("validate.Check rejects %d steps the primitives accepted (a bug of one or the other; TestAdversarialSchedules -long reports them shrunk):\n  %s", len(rejected), strings.Join(rejected, "\n  "))
	}
}
