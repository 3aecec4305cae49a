package schedule_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-go/loom/internal/schedgen"
)

// The property test of the schedule primitives: sequences of primitives
// from the adversarial generator of internal/schedgen, applied with the
// translation validator on to every function of the corpus
// (testdata/schedgen and the standard workloads). After every accepted step
// the interpreter's results must be unchanged; every refusal must be a
// typed *schedule.Error that changed nothing; nothing may panic; the
// validator must agree with every primitive; each sequence's trace must
// replay; and a sample of the schedules, compiled with codegen/llvm, must
// agree with the interpreter. A failing sequence is shrunk to a minimal one
// and printed as Go and as a trace.
//
//	go test ./schedule -run Adversarial                           # quick: about 300 accepted steps
//	go test ./schedule -run Adversarial -long -timeout 3h         # 100,000 accepted steps, counts printed
//	go test ./schedule -run Adversarial/corpus/skewed -steps 2000 # one function
//	go test ./schedule -run Adversarial -seed 7 -v                # one sequence per function

var (
	long = flag.Bool("long", false, "run TestAdversarialSchedules at full size (100,000 accepted steps) and print its counts")
	// steps overrides the size of TestAdversarialSchedules.
	steps = flag.Int("steps", 0, "accepted steps of TestAdversarialSchedules across the corpus (default 300, 150 with -short, 100000 with -long)")
	seed  = flag.Uint64("seed", 0, "run only the sequences with this seed")
	mode  = flag.String("mode", "adversarial", "the generator's mode: adversarial or uniform")
	// nativeEvery is how often a schedule is compiled and compared, on top
	// of the last one of each sequence.
	nativeEvery = flag.Int("native-every", 0, "compile and compare every Nth accepted schedule too (default: 25 with -long, else only the last of each sequence)")
	shrink      = flag.Bool("shrink", true, "shrink failing sequences before reporting them")
	reportFile  = flag.String("report", "", "write the counts and every failure's full report to this file")
	replayCase  = flag.String("case", "", "the function TestAdversarialReplay replays -ops on")
	replayOps   = flag.String("ops", "", "ops for TestAdversarialReplay, as a failure report lists them, separated by semicolons")
)

// adversarialCorpus returns the functions the property test schedules.
func adversarialCorpus(t testing.TB) []schedgen.Case {
	cs, err := schedgen.Load("../testdata/schedgen")
	if err != nil {
		t.Fatal(err)
	}
	return append(cs, schedgen.Workloads()...)
}

// knownBug is a failure already reported and not yet fixed: the test logs
// it instead of failing. Each entry names its case, kind and primitive
// (the primitive of the failing step of the shrunk sequence).
type knownBug struct {
	Case string
	Kind schedgen.FailKind
	Prim string
	Note string
}

// knownBugs lists the failures the test tolerates for now.
var knownBugs = []knownBug{}

// known returns the note of the known bug f is, if any.
func known(f *schedgen.Failure) (string, bool) {
	last := f.Ops[len(f.Ops)-1].Prim
	for _, k := range knownBugs {
		if (k.Case == "" || k.Case == f.Case.Name) && k.Kind == f.Kind && (k.Prim == "" || k.Prim == last) {
			return k.Note, true
		}
	}
	return "", false
}

// adversarialConfig is the runner's configuration for the flags.
func adversarialConfig(t testing.TB) schedgen.Config {
	cfg := schedgen.Config{Steps: 20, Native: nativeRun}
	switch *mode {
	case "adversarial":
	case "uniform":
		cfg.Mode = schedgen.Uniform
	default:
		t.Fatalf("-mode %q: want adversarial or uniform", *mode)
	}
	cfg.NativeEvery = *nativeEvery
	if *long && cfg.NativeEvery == 0 {
		cfg.NativeEvery = 25
	}
	return cfg
}

// costlySteps scales down the share of the run of the functions whose
// steps cost the most (validation and interpretation of their deep nests):
// about (cost of a cheap step / cost of theirs)^0.75, measured over 100
// steps of each (AMD EPYC, 2026-11-24; a cheap step costs about 50 ms).
// Each of them still gets a thousand steps or more in the long run, and
// the run's time is spread over the corpus instead of being spent on five
// functions.
var costlySteps = map[string]float64{
	"chain":                  0.6,
	"colsum_max_0":           0.6,
	"matmul_sym":             0.55,
	"skewed_reduce":          0.5,
	"skewed":                 0.5,
	"maxpool_0":              0.45,
	"conv2d":                 0.35,
	"triangular_matvec":      0.35,
	"conv1d_dilated_0":       0.35,
	"softmax_layernorm_0":    0.3,
	"depthwise_silu_0":       0.25,
	"skewed_sym":             0.25,
	"conv_grouped_strided_0": 0.2,
}

// TestAdversarialSchedules runs sequences of generated primitives on every
// function of the corpus, in parallel, until the accepted steps reach the
// total (-steps), and reports every failure shrunk: the first two of each
// kind and primitive per function (later ones are only counted).
func TestAdversarialSchedules(t *testing.T) {
	total := 300
	switch {
	case *steps > 0:
		total = *steps
	case *long:
		total = 100000
	case testing.Short():
		total = 150
	}
	cfg := adversarialConfig(t)
	cases := adversarialCorpus(t)
	weight := func(c schedgen.Case) float64 {
		w := 1.0
		if c.Source == "workload" {
			w = 0.5
		}
		if f, ok := costlySteps[c.Name]; ok {
			w *= f
		}
		return w
	}
	sum := 0.0
	for _, c := range cases {
		sum += weight(c)
	}
	stats := schedgen.NewStats()
	var mu sync.Mutex
	var found []string // one line per reported failure
	var reports *os.File
	if *reportFile != "" {
		var err error
		if reports, err = os.Create(*reportFile); err != nil {
			t.Fatal(err)
		}
		defer reports.Close()
	}
	start := time.Now()
	t.Run("corpus", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				began := time.Now()
				per := max(int(float64(total)*weight(c)/sum+0.5), 1)
				cfg := cfg
				if _, costly := costlySteps[c.Name]; costly && *steps == 0 && !*long {
					// Its share of the quick run is a few steps, but a
					// sequence runs 20 whatever the share, each step
					// dearer than the last as the nest deepens: sequences
					// of 10 (20 with -long or -steps).
					cfg.Steps = 10
				}
				local := schedgen.NewStats()
				shrunk := map[string]int{}    // by kind and primitive
				reported := map[string]bool{} // by shrunk sequence
				for s := uint64(1); local.Accepted < per; s++ {
					sd := s
					if *seed != 0 {
						sd = *seed
					}
					st, f := schedgen.Run(c, sd, cfg)
					local.Add(st)
					mu.Lock()
					stats.Add(st)
					if n := stats.Accepted; *long && n/5000 != (n-st.Accepted)/5000 {
						// Progress, and every 20000 steps the counts so far
						// (a run stopped early still tells them).
						fmt.Printf("progress: %d accepted steps in %v\n", n, time.Since(start).Round(time.Second))
						if n/20000 != (n-st.Accepted)/20000 {
							fmt.Print(stats)
						}
					}
					mu.Unlock()
					if f != nil {
						sig := fmt.Sprintf("%s at %s", f.Kind, f.Ops[len(f.Ops)-1].Prim)
						shrunk[sig]++
						if note, ok := known(f); ok && !*long {
							// Known: not worth the time of shrinking
							// in the quick run.
							t.Logf("known bug (%s), seed %d: %s", note, sd, opList(f.Ops))
							mu.Lock()
							found = append(found, fmt.Sprintf("%s: %s: %s (seed %d, not shrunk) [known: %s]", c.Name, f.Kind, opList(f.Ops), sd, note))
							mu.Unlock()
						} else if shrunk[sig] <= 2 {
							if *shrink {
								f = schedgen.Shrink(f, cfg)
							}
							if key := fmt.Sprint(f.Kind, f.Ops); !reported[key] {
								reported[key] = true
								note, isKnown := known(f)
								line := fmt.Sprintf("%s: %s: %s (seed %d)", c.Name, f.Kind, opList(f.Ops), sd)
								if f.Verdict != "" {
									line += " [with the validator off: " + f.Verdict + "]"
								}
								if isKnown {
									line += " [known: " + note + "]"
									t.Logf("known bug (%s):\n%s", note, f.Report())
								} else {
									t.Errorf("seed %d:\n%s", sd, f.Report())
								}
								mu.Lock()
								found = append(found, line)
								if reports != nil {
									fmt.Fprintf(reports, "=== %s\n%s\n", line, f.Report())
								}
								mu.Unlock()
							}
						}
					}
					if *seed != 0 || local.Tried > 100*per {
						break
					}
				}
				t.Logf("%d accepted of %d tried in %d sequences", local.Accepted, local.Tried, local.Sequences)
				if *long {
					// Which functions cost the run its time.
					fmt.Printf("done: %s, %d accepted of %d tried in %d sequences in %v (%v after the start)\n", c.Name, local.Accepted, local.Tried, local.Sequences, time.Since(began).Round(time.Second), time.Since(start).Round(time.Second))
				}
			})
		}
	})
	slices.Sort(found)
	summary := fmt.Sprintf("TestAdversarialSchedules (%s mode, %d functions, %v):\n%s", *mode, len(cases), time.Since(start).Round(time.Second), stats)
	if len(found) > 0 {
		summary += "failures reported (shrunk):\n  " + strings.Join(found, "\n  ") + "\n"
	}
	if *long {
		fmt.Print(summary)
	} else {
		t.Log(summary)
	}
	if reports != nil {
		fmt.Fprintf(reports, "\n%s", summary)
	}
	if stats.Accepted == 0 {
		t.Error("no step was accepted: the test checks nothing")
	}
}

// opList prints ops on one line.
func opList(ops []schedgen.Op) string {
	s := make([]string, len(ops))
	for i, op := range ops {
		s[i] = op.String()
	}
	return strings.Join(s, "; ")
}

// TestAdversarialReplay replays a sequence of ops of a failure report on
// a function of the corpus (at the sizes and data of -seed, default 1),
// checks every step as TestAdversarialSchedules does and reports what
// fails, shrunk:
//
//	go test ./schedule -run AdversarialReplay -case accumulate -seed 11 -ops 'split(r, [-1, 5]); fuse(r_0, r_1)'
func TestAdversarialReplay(t *testing.T) {
	if *replayOps == "" {
		t.Skip("no -ops to replay")
	}
	ops, err := schedgen.ParseOps(*replayOps)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range adversarialCorpus(t) {
		if c.Name != *replayCase {
			continue
		}
		sd := max(*seed, 1)
		cfg := adversarialConfig(t)
		f := schedgen.Replay(c, sd, ops, cfg)
		if f == nil {
			t.Logf("%s at %v: every step is accepted and correct, or refused cleanly", c.Name, c.SizesFor(sd))
			return
		}
		if *shrink {
			f = schedgen.Shrink(f, cfg)
		} else {
			schedgen.Diagnose(f, cfg)
		}
		t.Fatal(f.Report())
	}
	t.Fatalf("no function %q in the corpus", *replayCase)
}

// FuzzSchedule runs a sequence of the adversarial generator chosen by the
// fuzzer: the seed, the function and the number of steps.
//
//	go test ./schedule -run '^$' -fuzz FuzzSchedule -fuzztime 1m
func FuzzSchedule(f *testing.F) {
	f.Add(uint64(1), uint8(0), uint8(10))
	f.Add(uint64(7), uint8(3), uint8(20))
	f.Add(uint64(42), uint8(6), uint8(30))
	f.Add(uint64(5), uint8(11), uint8(12))
	cases := adversarialCorpus(f)
	cfg := adversarialConfig(f)
	cfg.Native = nil // compiling is too slow for a fuzz input
	f.Fuzz(func(t *testing.T, seed uint64, fn, n uint8) {
		c := cases[int(fn)%len(cases)]
		cfg := cfg
		cfg.Steps = int(n%30) + 1
		if _, fail := schedgen.Run(c, seed, cfg); fail != nil {
			fail = schedgen.Shrink(fail, cfg)
			if note, ok := known(fail); ok {
				t.Skipf("known bug (%s):\n%s", note, fail.Report())
			}
			t.Fatal(fail.Report())
		}
	})
}
