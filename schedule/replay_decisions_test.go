package schedule

import (
	"encoding/json"
	"errors"
	"go/format"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

// sampler makes the sampling calls of sampleAll: draws, or the With forms
// with given decisions.
type sampler interface {
	tile(s *Schedule, l Loop, n, maxInnermost int) ([]Value, error)
	categorical(s *Schedule, cands []int64, probs []float64) (Value, error)
	location(s *Schedule, b Block) (Loop, error)
}

// sampleAll applies one of each sampling instruction, and the primitives
// that use their values, to a schedule of chain: a perfect tile splitting
// a loop, a categorical choice annotating one, a compute location for A;
// then the post-processing mark and a step after it.
func sampleAll(t *testing.T, s *Schedule, by sampler) {
	t.Helper()
	c, _ := s.GetBlock("C")
	ls, _ := s.GetLoops(c)
	vs, err := by.tile(s, ls[2], 3, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SplitBy(ls[2], vs); err != nil {
		t.Fatal(err)
	}
	v, err := by.categorical(s, []int64{0, 16, 64}, []float64{1, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AnnotateLoopBy(ls[0], "unroll_max", v); err != nil {
		t.Fatal(err)
	}
	a, _ := s.GetBlock("A")
	at, err := by.location(s, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ComputeAt(a, at); err != nil {
		t.Fatal(err)
	}
	s.EnterPostproc()
	l, _ := s.GetLoop(ls[1].Name())
	if err := s.AnnotateLoop(l, "pragma", "x"); err != nil {
		t.Fatal(err)
	}
}

// draws samples.
type draws struct{}

func (draws) tile(s *Schedule, l Loop, n, m int) ([]Value, error) {
	return s.SamplePerfectTile(l, n, m)
}
func (draws) categorical(s *Schedule, c []int64, p []float64) (Value, error) {
	return s.SampleCategorical(c, p)
}
func (draws) location(s *Schedule, b Block) (Loop, error) { return s.SampleComputeLocation(b) }

// decided takes the decisions of a trace's sampling instructions, in
// order.
type decided struct{ ds *[][]int64 }

func (d decided) next() []int64 { x := (*d.ds)[0]; *d.ds = (*d.ds)[1:]; return x }
func (d decided) tile(s *Schedule, l Loop, n, m int) ([]Value, error) {
	return s.SamplePerfectTileWith(l, n, m, d.next())
}
func (d decided) categorical(s *Schedule, c []int64, p []float64) (Value, error) {
	return s.SampleCategoricalWith(c, p, d.next()[0])
}
func (d decided) location(s *Schedule, b Block) (Loop, error) {
	return s.SampleComputeLocationWith(b, d.next()[0])
}

// TestSampleWith: the With forms of the sampling primitives, given the
// decisions a schedule drew (under another seed, so that drawing again
// would differ), make the same function and record the same trace, which
// replays; and they refuse a decision replay refuses, leaving the
// schedule as it was.
func TestSampleWith(t *testing.T) {
	f := workload.Chain(2, 3, 64).Func
	for seed := uint64(1); seed <= 4; seed++ {
		s, err := New(f, WithSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		sampleAll(t, s, draws{})
		var ds [][]int64
		for _, in := range s.Trace().Insts {
			if in.Decision != nil {
				ds = append(ds, in.Decision)
			}
		}
		if len(ds) != 3 {
			t.Fatalf("seed %d: %d decisions in\n%s", seed, len(ds), s.Trace())
		}
		w, err := New(f, WithSeed(seed+100))
		if err != nil {
			t.Fatal(err)
		}
		sampleAll(t, w, decided{&ds})
		want, _ := json.Marshal(s.Trace())
		got, _ := json.Marshal(w.Trace())
		if string(got) != string(want) {
			t.Fatalf("seed %d: the With forms record\n%s\nthe draws\n%s", seed, w.Trace(), s.Trace())
		}
		if ast.Hash(w.Func()) != ast.Hash(s.Func()) {
			t.Fatalf("seed %d: the With forms make another function", seed)
		}
		checkReplay(t, f, w)
	}

	s, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.GetBlock("C")
	ls, _ := s.GetLoops(c)
	a, _ := s.GetBlock("A")
	before := len(s.Trace().Insts)
	for _, bad := range []struct {
		name string
		run  func() error
		msg  string
	}{
		{"no decision", func() error { _, err := s.SamplePerfectTileWith(ls[2], 2, 0, nil); return err }, "no decision"},
		{"wrong product", func() error { _, err := s.SamplePerfectTileWith(ls[2], 2, 0, []int64{4, 8}); return err }, "product"},
		{"too many factors", func() error { _, err := s.SamplePerfectTileWith(ls[2], 2, 0, []int64{4, 4, 4}); return err }, "3 factors, want 2"},
		{"innermost too large", func() error { _, err := s.SamplePerfectTileWith(ls[2], 2, 8, []int64{4, 16}); return err }, "exceeds 8"},
		{"categorical index", func() error { _, err := s.SampleCategoricalWith([]int64{1, 2}, []float64{1, 1}, 2); return err }, "not an index"},
		{"negative index", func() error { _, err := s.SampleCategoricalWith([]int64{1, 2}, []float64{1, 1}, -1); return err }, "not an index"},
		{"location below the root", func() error { _, err := s.SampleComputeLocationWith(a, -2); return err }, "not -1 or an index"},
		{"location past the last", func() error { _, err := s.SampleComputeLocationWith(a, 99); return err }, "not -1 or an index"},
	} {
		err := bad.run()
		if !errors.Is(err, ErrArgument) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: %v, want an error wrapping ErrArgument saying %q", bad.name, err, bad.msg)
		}
	}
	if n := len(s.Trace().Insts); n != before {
		t.Errorf("refused decisions left %d instructions in the trace", n-before)
	}
}

// TestTraceGoDecisions: Trace.Go prints a sampling instruction with its
// decision as the With form, one without as a draw, and the
// post-processing mark as EnterPostproc; the text is Go.
func TestTraceGoDecisions(t *testing.T) {
	f := workload.Chain(2, 3, 64).Func
	s, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	sampleAll(t, s, draws{})
	tr := s.Trace()
	src := tr.Go()
	var tile, cat, loc string
	for _, in := range tr.Insts {
		switch in.Kind {
		case "sample_perfect_tile":
			parts := make([]string, len(in.Decision))
			for i, d := range in.Decision {
				parts[i] = strconv.FormatInt(d, 10)
			}
			tile = strings.Join(parts, ", ")
		case "sample_categorical":
			cat = strconv.FormatInt(in.Decision[0], 10)
		case "sample_compute_location":
			loc = strconv.FormatInt(in.Decision[0], 10)
		}
	}
	for _, want := range []string{
		"sch.SamplePerfectTileWith(l", ", 3, 8, []int64{" + tile + "})",
		"sch.SampleCategoricalWith([]int64{0, 16, 64}, []float64{1.0, 2.0, 1.0}, " + cat + ")",
		"sch.SampleComputeLocationWith(b", ", " + loc + ")",
		"\tsch.EnterPostproc()\n",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("Trace.Go lacks %q:\n%s", want, src)
		}
	}
	if _, err := format.Source([]byte("package p\n\nimport \"github.com/loom-go/loom/schedule\"\n\n" + src)); err != nil {
		t.Fatalf("Trace.Go is not Go: %v\n%s", err, src)
	}
	// Without decisions (a trace written by hand), the draws.
	for i := range tr.Insts {
		tr.Insts[i].Decision = nil
	}
	src = tr.Go()
	if strings.Contains(src, "With(") || !strings.Contains(src, "sch.SamplePerfectTile(l") || !strings.Contains(src, "sch.SampleComputeLocation(b") {
		t.Errorf("Trace.Go of a trace without decisions:\n%s", src)
	}
}

// TestWithoutPostproc: the post-processing mark survives the text and
// JSON forms and replay; WithoutPostproc drops it and what follows.
func TestWithoutPostproc(t *testing.T) {
	f := workload.Chain(2, 3, 64).Func
	s, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	sampleAll(t, s, draws{})
	tr := s.Trace()
	if !tr.HasPostproc() || !strings.Contains(tr.String(), "\nenter_postproc()\n") {
		t.Fatalf("no mark in\n%s", tr)
	}
	text, err := ParseTraceText(tr.String())
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != tr.String() {
		t.Fatalf("the text form reads back as\n%s", text)
	}
	checkReplay(t, f, s)
	pre := tr.WithoutPostproc()
	if pre.HasPostproc() || len(pre.Insts) != len(tr.Insts)-3 {
		t.Fatalf("WithoutPostproc kept %d of %d instructions:\n%s", len(pre.Insts), len(tr.Insts), pre)
	}
	p, err := Replay(f, pre, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Trace().String(), tr.String()[:len(pre.String())]; got != want {
		t.Fatalf("the trace before the mark replays as\n%s\nwant\n%s", got, want)
	}
	none := (&Trace{Insts: pre.Insts}).WithoutPostproc()
	if len(none.Insts) != len(pre.Insts) || &none.Insts[0] == &pre.Insts[0] {
		t.Errorf("WithoutPostproc of a trace without the mark is not a copy of all of it")
	}
}
