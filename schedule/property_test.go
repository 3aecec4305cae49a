package schedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

// corpus is the property test's set of functions, at sizes the interpreter
// runs quickly.
func corpus() []workload.Case {
	return []workload.Case{
		workload.Matmul(12, 10, 8),
		workload.MatmulBiasReLU(8, 12, 10),
		workload.Conv2D(1, 2, 5, 5, 3),
		workload.Softmax(4, 24),
		workload.RMSNorm(3, 32),
		workload.LayerNorm(3, 32),
		workload.Chain(1, 2, 1024),
	}
}

// step applies one random primitive with random arguments to s and
// returns a description of it. It calls snap just before the primitive
// under test (after the getters and samplers it uses, which are steps of
// their own).
func step(r *rand.Rand, s *Schedule, snap func()) (string, error) {
	f := s.Func()
	blocks := f.Blocks()
	var loops []*ast.For
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.For); ok {
			loops = append(loops, l)
		}
		return true
	})
	if len(loops) == 0 {
		return "none", nil
	}
	loop := func() Loop {
		l, _ := s.GetLoop(loops[r.IntN(len(loops))].Var.Name)
		return l
	}
	block := func() Block {
		b, _ := s.GetBlock(blocks[r.IntN(len(blocks))].Name)
		return b
	}
	buffer := func(b Block) string {
		blk, _, ok := findBlock(s.Func(), b.Name())
		if !ok || len(blk.Reads)+len(blk.Writes) == 0 {
			return "X"
		}
		rs := append(append([]ast.Region(nil), blk.Reads...), blk.Writes...)
		return rs[r.IntN(len(rs))].Buffer.Name
	}
	factors := []int{-1, 1, 2, 3, 4, 5, 8, 16}
	scopes := []string{"global", "shared", "local"}
	axes := []string{"blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y"}
	switch r.IntN(18) {
	case 0, 1:
		l := loop()
		fs := []int{factors[r.IntN(len(factors))], factors[r.IntN(len(factors))]}
		if r.IntN(3) == 0 {
			fs = append(fs, factors[r.IntN(len(factors))])
		}
		snap()
		_, err := s.Split(l, fs...)
		return fmt.Sprintf("split(%s, %v)", l.Name(), fs), err
	case 2:
		a, b := loop(), loop()
		snap()
		_, err := s.Fuse(a, b)
		return fmt.Sprintf("fuse(%s, %s)", a.Name(), b.Name()), err
	case 3:
		a, b := loop(), loop()
		snap()
		return fmt.Sprintf("reorder(%s, %s)", a.Name(), b.Name()), s.Reorder(a, b)
	case 4:
		l := loop()
		snap()
		return fmt.Sprintf("parallel(%s)", l.Name()), s.Parallel(l)
	case 5:
		l := loop()
		snap()
		return fmt.Sprintf("vectorize(%s)", l.Name()), s.Vectorize(l)
	case 6:
		l := loop()
		snap()
		return fmt.Sprintf("unroll(%s)", l.Name()), s.Unroll(l)
	case 7:
		l, ax := loop(), axes[r.IntN(len(axes))]
		snap()
		return fmt.Sprintf("bind(%s, %s)", l.Name(), ax), s.Bind(l, ax)
	case 8:
		b, l := block(), loop()
		snap()
		return fmt.Sprintf("compute_at(%s, %s)", b.Name(), l.Name()), s.ComputeAt(b, l)
	case 9:
		b, l := block(), loop()
		snap()
		return fmt.Sprintf("reverse_compute_at(%s, %s)", b.Name(), l.Name()), s.ReverseComputeAt(b, l)
	case 10:
		b := block()
		snap()
		return fmt.Sprintf("compute_inline(%s)", b.Name()), s.ComputeInline(b)
	case 11:
		b := block()
		snap()
		return fmt.Sprintf("reverse_compute_inline(%s)", b.Name()), s.ReverseComputeInline(b)
	case 12:
		l := loop()
		snap()
		_, err := s.RFactor(l)
		return fmt.Sprintf("rfactor(%s)", l.Name()), err
	case 13:
		b, l := block(), loop()
		snap()
		_, err := s.DecomposeReduction(b, l)
		return fmt.Sprintf("decompose_reduction(%s, %s)", b.Name(), l.Name()), err
	case 14:
		b := block()
		buf, sc := buffer(b), scopes[r.IntN(len(scopes))]
		var err error
		if r.IntN(2) == 0 {
			snap()
			_, err = s.CacheRead(b, buf, sc)
			return fmt.Sprintf("cache_read(%s, %s, %s)", b.Name(), buf, sc), err
		}
		snap()
		_, err = s.CacheWrite(b, buf, sc)
		return fmt.Sprintf("cache_write(%s, %s, %s)", b.Name(), buf, sc), err
	case 15:
		a, b := loop(), loop()
		snap()
		_, err := s.Align(a, b)
		return fmt.Sprintf("align(%s, %s)", a.Name(), b.Name()), err
	case 16:
		l := loop()
		snap()
		vs, err := s.SamplePerfectTile(l, 2, 8)
		if err != nil {
			return fmt.Sprintf("sample_perfect_tile(%s)", l.Name()), err
		}
		snap()
		_, err = s.SplitBy(l, vs)
		return fmt.Sprintf("split_by(%s, %v)", l.Name(), []int64{vs[0].Int(), vs[1].Int()}), err
	default:
		b := block()
		snap()
		l, err := s.SampleComputeLocation(b)
		if err != nil {
			return fmt.Sprintf("sample_compute_location(%s)", b.Name()), err
		}
		snap()
		return fmt.Sprintf("compute_at(%s, sampled %s)", b.Name(), l.Name()), s.ComputeAt(b, l)
	}
}

// runSequence applies n random steps to a schedule of c and checks the
// properties after each one.
func runSequence(t *testing.T, c workload.Case, seed uint64, n int) {
	r := rand.New(rand.NewPCG(seed, 99))
	s, err := New(c.Func, WithSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	args := c.Args(seed)
	want := workload.Clone(args)
	if err := ast.Interpret(s.Func(), c.Sizes, want); err != nil {
		t.Fatal(err)
	}
	var log []string
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("%s, seed %d, after:\n  %s\n%s", c.Name, seed, strings.Join(log, "\n  "), fmt.Sprintf(format, a...))
	}
	for i := 0; i < n; i++ {
		before, beforeTrace := s.Func(), len(s.Trace().Insts)
		var desc string
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					fail("step %d panicked: %v", i, p)
				}
			}()
			desc, err = step(r, s, func() { before, beforeTrace = s.Func(), len(s.Trace().Insts) })
		}()
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				fail("%s returned an untyped error: %v", desc, err)
			}
			if s.Func() != before || len(s.Trace().Insts) != beforeTrace {
				fail("%s failed (%v) but changed the schedule", desc, err)
			}
			continue
		}
		log = append(log, desc)
		got := workload.Clone(c.Args(seed))
		if err := ast.Interpret(s.Func(), c.Sizes, got); err != nil {
			fail("%s: the scheduled function faults: %s", desc, ast.Explain(s.Func(), err))
		}
		for name, w := range want {
			if !close(got[name], w) {
				fail("%s changed the result in buffer %s:\n%s", desc, name, ast.Print(s.Func()))
			}
		}
	}
	// The whole trace replays from JSON to the same function.
	data, err := json.Marshal(s.Trace())
	if err != nil {
		fail("marshal: %v", err)
	}
	tr, err := ParseTrace(data)
	if err != nil {
		fail("parse trace: %v", err)
	}
	again, err := Replay(c.Func, tr, nil, WithSeed(seed))
	if err != nil {
		fail("replay: %v", err)
	}
	if ast.Hash(again.Func()) != ast.Hash(s.Func()) {
		fail("replay gives another function")
	}
}

// TestRandomSchedules applies long random sequences of primitives to every
// function of the corpus: accepted steps keep the interpreter's results,
// refused ones change nothing, none panics, and the trace replays.
func TestRandomSchedules(t *testing.T) {
	seqs, steps := 6, 25
	if testing.Short() {
		seqs, steps = 2, 15
	}
	for _, c := range corpus() {
		t.Run(c.Name, func(t *testing.T) {
			for k := 0; k < seqs; k++ {
				runSequence(t, c, uint64(k+1), steps)
			}
		})
	}
}

// FuzzSchedule runs a random sequence chosen by the fuzzer.
//
//	go test ./schedule -run '^$' -fuzz FuzzSchedule -fuzztime 1m
func FuzzSchedule(f *testing.F) {
	f.Add(uint64(1), uint8(0), uint8(10))
	f.Add(uint64(7), uint8(3), uint8(20))
	f.Add(uint64(42), uint8(6), uint8(30))
	// Smaller than the corpus of TestRandomSchedules (the chain is 64 wide,
	// not 1024), so that each input runs in well under a second.
	cs := corpus()
	cs[len(cs)-1] = workload.Chain(1, 2, 64)
	f.Fuzz(func(t *testing.T, seed uint64, fn, n uint8) {
		runSequence(t, cs[int(fn)%len(cs)], seed, int(n%20))
	})
}
