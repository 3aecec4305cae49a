package schedule_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/schedgen"
	"github.com/loom-go/loom/internal/workload"
	"github.com/loom-go/loom/intrin"
	"github.com/loom-go/loom/schedule"
)

// blockizeSame runs f and g in the interpreter on the same random data (the
// outputs too, so that an element a schedule forgets shows) at each binding
// of the sizes, with a few seeds, and fails unless every buffer is the same
// bit for bit: blockize reorders nothing.
func blockizeSame(t *testing.T, f, g *ast.Func, sizes []map[string]int64) {
	t.Helper()
	if len(sizes) == 0 {
		sizes = []map[string]int64{{}}
	}
	for _, sz := range sizes {
		for seed := uint64(1); seed <= 2; seed++ {
			c := schedgen.Case{Name: f.Name, Func: f, Sizes: []map[string]int64{sz}}
			want := c.Args(sz, seed)
			got := check.Clone(want)
			if err := ast.Interpret(f, sz, want); err != nil {
				t.Fatalf("sizes %v: the input faults: %s", sz, ast.Explain(f, err))
			}
			if err := ast.Interpret(g, sz, got); err != nil {
				t.Fatalf("sizes %v: the blockized function faults: %s", sz, ast.Explain(g, err))
			}
			for name, w := range want {
				if check.MaxRelErr(got[name], w) != 0 {
					t.Fatalf("sizes %v, seed %d: buffer %s differs after blockize\n%s", sz, seed, name, ast.Print(g))
				}
			}
		}
	}
}

// flattenNest returns f with the blocks inside block outer replaced by
// their statements, one level at a time (each block's iteration variables
// by their bindings, its predicate and its init by ifs): outer is then a
// leaf block whose every access the interpreter checks against outer's
// regions. Running it proves that the regions Blockize (and the refresh
// after every primitive) computed hold what the blocks inside access.
func flattenNest(t *testing.T, f *ast.Func, outer string) *ast.Func {
	t.Helper()
	// An empty reduction's init, which no instance runs, made a block of
	// its own first: flattened, an init runs only in an instance.
	f = ast.InitEmptyReductions(f)
	for {
		o := f.Block(outer)
		if o == nil {
			t.Fatalf("no block %s", outer)
		}
		var inner *ast.ScheduleBlock
		ast.Inspect(o.Body, func(n ast.Node) bool {
			if b, ok := n.(*ast.ScheduleBlock); ok && inner == nil {
				inner = b
			}
			return inner == nil
		})
		if inner == nil {
			return f
		}
		sub := map[string]ast.Expr{}
		var first ast.Expr
		for _, it := range inner.Iters {
			sub[it.Var.Name] = it.Binding
			if it.Kind == ast.Reduce {
				at := ast.EQ(it.Binding, it.Dom.Min)
				if first == nil {
					first = at
				} else {
					first = ast.And(first, at)
				}
			}
		}
		var stmts []ast.Stmt
		if inner.Init != nil {
			init := ast.Substitute(inner.Init, sub)
			if first != nil {
				init = ast.NewIf(first, init, nil)
			}
			stmts = append(stmts, init)
		}
		stmts = append(stmts, ast.Substitute(inner.Body, sub))
		var flat ast.Stmt = &ast.Seq{Stmts: stmts}
		if inner.Predicate != nil {
			flat = ast.NewIf(inner.Predicate, flat, nil)
		}
		keep := func(e ast.Expr) ast.Expr { return e }
		var stmt func(s ast.Stmt) ast.Stmt
		stmt = func(s ast.Stmt) ast.Stmt {
			if s == ast.Stmt(inner) {
				return flat
			}
			return ast.MapChildren(s, stmt, keep)
		}
		f = ast.MapChildren(f, stmt, keep)
		if err := ast.Verify(f); err != nil {
			t.Fatalf("the flattened function is ill-formed: %v\n%s", err, ast.Print(f))
		}
	}
}

// nests returns the names of the blocks of f around nests (but the root).
func nests(f *ast.Func) []string {
	var out []string
	for _, b := range f.Blocks() {
		if ast.Stmt(b) == f.Body {
			continue
		}
		holds := false
		ast.Inspect(b.Body, func(n ast.Node) bool {
			_, ok := n.(*ast.ScheduleBlock)
			holds = holds || ok
			return !holds
		})
		if holds {
			out = append(out, b.Name)
		}
	}
	return out
}

// checkBlockized checks schedule s of f, whose blockizes made (among
// others) block outer: the results are the same at every binding of
// sizes, the regions of every block around a nest hold the accesses of
// the blocks inside it, and the trace replays from JSON and from its text
// and prints as Go with the Blockize call.
func checkBlockized(t *testing.T, f *ast.Func, s *schedule.Schedule, outer string, sizes []map[string]int64) {
	t.Helper()
	g := s.Func()
	if !slices.Contains(nests(g), outer) {
		t.Fatalf("block %s is not a block around a nest:\n%s", outer, ast.Print(g))
	}
	blockizeSame(t, f, g, sizes)
	for _, n := range nests(g) {
		blockizeSame(t, f, flattenNest(t, g, n), sizes)
	}
	checkTraceRoundTrips(t, f, s)
	if !strings.Contains(s.Trace().Go(), "sch.Blockize(") {
		t.Errorf("the trace's Go lacks Blockize:\n%s", s.Trace().Go())
	}
}

// checkTraceRoundTrips replays s's trace from JSON and from its text on f,
// and fails unless both give s's function and its Go is valid Go.
func checkTraceRoundTrips(t *testing.T, f *ast.Func, s *schedule.Schedule) {
	t.Helper()
	src := "package p\n\nimport \"github.com/loom-go/loom/schedule\"\n\n" + s.Trace().Go()
	if _, err := format.Source([]byte(src)); err != nil {
		t.Fatalf("Trace.Go is not valid Go: %v\n%s", err, src)
	}
	data, err := json.Marshal(s.Trace())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := schedule.ParseTrace(data)
	if err != nil {
		t.Fatalf("the trace's JSON does not read back: %v", err)
	}
	fromText, err := schedule.ParseTraceText(s.Trace().String())
	if err != nil {
		t.Fatalf("the trace's text does not read back: %v\n%s", err, s.Trace())
	}
	for what, tr := range map[string]*schedule.Trace{"JSON": tr, "text": fromText} {
		// The steps were validated when they were applied.
		r, err := schedule.Replay(f, tr, nil, schedule.WithValidation(false))
		if err != nil {
			t.Fatalf("replay from %s: %v", what, err)
		}
		if ast.Hash(r.Func()) != ast.Hash(s.Func()) {
			t.Fatalf("replay from %s gives another function:\n%s\nwant\n%s", what, ast.Print(r.Func()), ast.Print(s.Func()))
		}
	}
}

// mustLoops returns handles to the loops named.
func mustLoops(t *testing.T, s *schedule.Schedule, names ...string) []schedule.Loop {
	t.Helper()
	var out []schedule.Loop
	for _, n := range names {
		l, err := s.GetLoop(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func must[T any](t *testing.T) func(T, error) T {
	return func(x T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(schedule.Explain(err))
		}
		return x
	}
}

func mustSucceed(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(schedule.Explain(err))
	}
}

// blockText returns the header of block name in f's text: its line and
// the lines up to its first statement (bindings, domain, predicate,
// regions), trimmed.
func blockText(t *testing.T, f *ast.Func, name string) string {
	t.Helper()
	lines := strings.Split(ast.Print(f), "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) != "ScheduleBlock("+name+") {" {
			continue
		}
		var out []string
		for _, l := range lines[i+1:] {
			l = strings.TrimSpace(l)
			if !strings.HasPrefix(l, "axis.") && !strings.Contains(l, " = axis.bind(") && !strings.HasPrefix(l, "reads(") && !strings.HasPrefix(l, "writes(") && !strings.HasPrefix(l, "predicate(") {
				break
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}
	t.Fatalf("no block %s in\n%s", name, ast.Print(f))
	return ""
}

// TestBlockizeEveryLoop blockizes every loop of every function of the
// adversarial corpus, one at a time: an accepted blockize keeps the
// results and declares regions that hold the inner block's accesses; a
// refused one is a typed error wrapping ErrIllegal that names blockize
// and leaves the schedule as it was.
func TestBlockizeEveryLoop(t *testing.T) {
	accepted, refused := 0, 0
	for _, c := range adversarialCorpus(t) {
		s0, err := schedule.New(c.Func)
		if err != nil {
			t.Fatal(err)
		}
		var loops []string
		ast.Inspect(s0.Func().Body, func(n ast.Node) bool {
			if l, ok := n.(*ast.For); ok {
				loops = append(loops, l.Var.Name)
			}
			return true
		})
		for _, name := range loops {
			t.Run(c.Name+"/"+name, func(t *testing.T) {
				s, err := schedule.New(c.Func)
				if err != nil {
					t.Fatal(err)
				}
				l := mustLoops(t, s, name)[0]
				before, trace := s.Func(), len(s.Trace().Insts)
				b, err := s.Blockize(l)
				if err != nil {
					se, ok := errors.AsType[*schedule.Error](err)
					if !ok || se.Primitive != "blockize" || !errors.Is(err, schedule.ErrIllegal) {
						t.Fatalf("refused with %T %v, want an illegal blockize error", err, err)
					}
					if s.Func() != before || len(s.Trace().Insts) != trace {
						t.Fatal("a refused blockize changed the schedule")
					}
					refused++
					t.Log(se.Reason)
					return
				}
				accepted++
				checkBlockized(t, c.Func, s, b.Name(), c.Sizes)
			})
		}
	}
	t.Logf("%d accepted, %d refused", accepted, refused)
	if accepted < 40 {
		t.Errorf("only %d loops of the corpus blockize", accepted)
	}
}

// blockizedCorpus returns the functions of the adversarial corpus that
// keep(i) takes (i their index in the corpus), each with one loop (chosen
// by seed among those that blockize) blockized. The loop chosen for a
// function does not depend on which others keep takes.
func blockizedCorpus(t *testing.T, seed uint64, keep func(i int) bool) []schedgen.Case {
	var out []schedgen.Case
	r := rand.New(rand.NewPCG(seed, 0xb10c))
	for i, c := range adversarialCorpus(t) {
		s, err := schedule.New(c.Func)
		if err != nil {
			t.Fatal(err)
		}
		var loops []string
		ast.Inspect(s.Func().Body, func(n ast.Node) bool {
			if l, ok := n.(*ast.For); ok {
				loops = append(loops, l.Var.Name)
			}
			return true
		})
		r.Shuffle(len(loops), func(i, j int) { loops[i], loops[j] = loops[j], loops[i] })
		if !keep(i) {
			continue
		}
		for _, name := range loops {
			s, _ := schedule.New(c.Func)
			l := mustLoops(t, s, name)[0]
			if _, err := s.Blockize(l); err == nil {
				c.Name += "_blockized_" + name
				c.Func = s.Func()
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// TestBlockizeThenAdversarial runs the adversarial generator's sequences
// of primitives on blockized functions, with the validator on, the
// interpreter checking every accepted step and codegen/llvm the last of
// each sequence: every primitive must either handle the block around a
// nest or refuse it with a typed error. Each function runs at one of the
// seeds 1 to 4 (all 20 with -long).
func TestBlockizeThenAdversarial(t *testing.T) {
	const spread, full = 4, 20
	cfg := schedgen.Config{Steps: 15, Native: nativeRun}
	for sd := uint64(1); sd <= maxSeed(spread, full); sd++ {
		keep := func(i int) bool { return runsAt(i, sd, 1, spread, full) }
		for _, c := range blockizedCorpus(t, sd, keep) {
			t.Run(fmt.Sprintf("%s/%d", c.Name, sd), func(t *testing.T) {
				t.Parallel()
				_, f := schedgen.Run(c, sd, cfg)
				if f != nil {
					f = schedgen.Shrink(f, cfg)
					t.Errorf("%s", f.Report())
				}
			})
		}
	}
}

// TestBlockizeInterleaved runs the adversarial generator's primitives
// with blockizes of random loops among them (a quarter of the steps), with
// the validator on: every accepted step keeps the interpreter's results
// (within rounding once an rfactor reassociated a sum) and leaves blocks
// around nests whose regions hold what is inside them; every refusal is a
// typed error, not an internal one, that changes nothing; nothing panics;
// the trace replays; and the last schedule, compiled by codegen/llvm,
// agrees with the interpreter. Each function runs at one of the seeds 1
// to 3 (all 20 with -long).
func TestBlockizeInterleaved(t *testing.T) {
	const steps = 24
	cases := adversarialCorpus(t)
	for i, c := range cases {
		n := steps
		if w, ok := costlySteps[c.Name]; ok {
			n = int(float64(steps) * w)
		}
		for _, sd := range corpusSeeds(i, 1, 3, 20) {
			t.Run(fmt.Sprintf("%s/%d", c.Name, sd), func(t *testing.T) {
				t.Parallel()
				interleave(t, c, sd, n)
			})
		}
	}
}

// interleave runs one sequence of TestBlockizeInterleaved.
func interleave(t *testing.T, c schedgen.Case, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 0xb10c2))
	sizes := c.SizesFor(seed)
	args := c.Args(sizes, seed)
	want := check.Clone(args)
	if err := ast.Interpret(c.Func, sizes, want); err != nil {
		t.Fatal(err)
	}
	s, err := schedule.New(c.Func, schedule.WithValidation(true), schedule.WithSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	gen := schedgen.NewGen(seed, schedgen.Adversarial)
	var log []string
	reassociated, blockized := false, 0
	for try := 0; try < 4*steps && len(log) < steps; try++ {
		var before *ast.Func
		var trace int
		snap := func() { before, trace = s.Func(), len(s.Trace().Insts) }
		var desc string
		var op schedgen.Op
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("after %v: %s panicked: %v", log, desc, p)
				}
			}()
			if r.IntN(4) == 0 {
				var loops []string
				ast.Inspect(s.Func().Body, func(n ast.Node) bool {
					if l, ok := n.(*ast.For); ok {
						loops = append(loops, l.Var.Name)
					}
					return true
				})
				if len(loops) == 0 {
					return
				}
				name := loops[r.IntN(len(loops))]
				desc = "blockize(" + name + ")"
				l, _ := s.GetLoop(name)
				snap()
				_, err = s.Blockize(l)
				op.Prim = "blockize"
				return
			}
			op = gen.Next(s.Func())
			if op.Prim == "" {
				return
			}
			desc = op.String()
			var resolved schedgen.Op
			resolved, err = op.Apply(s, snap)
			desc = resolved.String()
		}()
		if desc == "" {
			break
		}
		if op.Prim != "blockize" {
			gen.Observe(op, before, s.Func(), err == nil && before != nil)
		}
		if err != nil {
			if before == nil {
				continue // a getter refused a name
			}
			if _, ok := errors.AsType[*schedule.Error](err); !ok {
				t.Fatalf("after %v: %s returned %T: %v", log, desc, err, err)
			}
			if errors.Is(err, schedule.ErrInternal) {
				t.Fatalf("after %v: %s: %v", log, desc, err)
			}
			if s.Func() != before || len(s.Trace().Insts) != trace {
				t.Fatalf("after %v: %s was refused (%v) but changed the schedule", log, desc, err)
			}
			continue
		}
		log = append(log, desc)
		if op.Prim == "rfactor" || op.Prim == "reorder" || op.Prim == "tile" {
			reassociated = true // a sum may now add in another order
		}
		if op.Prim == "blockize" {
			blockized++
		}
		got := check.Clone(args)
		if err := ast.Interpret(s.Func(), sizes, got); err != nil {
			t.Fatalf("after %v the interpreter faults: %s", log, ast.Explain(s.Func(), err))
		}
		for name, w := range want {
			if reassociated && check.MaxRelErr(got[name], w) <= 1e-4 || !reassociated && check.MaxRelErr(got[name], w) == 0 {
				continue
			}
			t.Fatalf("after %v buffer %s differs:\n%s", log, name, ast.Print(s.Func()))
		}
		for _, n := range nests(s.Func()) {
			flat := flattenNest(t, s.Func(), n)
			if err := ast.Interpret(flat, sizes, check.Clone(args)); err != nil {
				t.Fatalf("after %v the regions of block %s do not hold what is inside it: %s", log, n, ast.Explain(flat, err))
			}
		}
	}
	if blockized == 0 {
		return
	}
	t.Logf("%d blockizes in %v", blockized, log)
	checkTraceRoundTrips(t, c.Func, s)
	got := check.Clone(args)
	if err := nativeRun(s.Func(), sizes, got); err != nil {
		if errors.Is(err, schedgen.ErrNotCompiled) {
			t.Logf("not compiled: %v", err)
			return
		}
		t.Fatalf("after %v: codegen/llvm: %v\n%s", log, err, ast.Print(s.Func()))
	}
	ref := check.Clone(args)
	if err := ast.Interpret(s.Func(), sizes, ref); err != nil {
		t.Fatal(err)
	}
	for name, w := range ref {
		if e := check.MaxRelErr(got[name], w); e > check.Tolerance(c.Func.Param(name).DType) {
			t.Fatalf("after %v: the compiled function's %s differs from the interpreter's by %g\n%s", log, name, e, ast.Print(s.Func()))
		}
	}
}

// nativeAgrees compiles f with codegen/llvm, runs it on random data at each
// binding of the sizes, and fails unless it agrees with the interpreter
// (within the tolerance of each buffer's type). A missing toolchain skips.
func nativeAgrees(t *testing.T, f *ast.Func, sizes []map[string]int64) {
	t.Helper()
	if len(sizes) == 0 {
		sizes = []map[string]int64{{}}
	}
	for _, sz := range sizes {
		c := schedgen.Case{Name: f.Name, Func: f, Sizes: []map[string]int64{sz}}
		want := c.Args(sz, 7)
		got := check.Clone(want)
		if err := ast.Interpret(f, sz, want); err != nil {
			t.Fatalf("sizes %v: %s", sz, ast.Explain(f, err))
		}
		if err := nativeRun(f, sz, got); err != nil {
			if errors.Is(err, schedgen.ErrNotCompiled) {
				t.Skipf("not compiled: %v", err)
			}
			t.Fatalf("sizes %v: codegen/llvm: %v\n%s", sz, err, ast.Print(f))
		}
		for _, p := range f.Params {
			if e := check.MaxRelErr(got[p.Name], want[p.Name]); e > check.Tolerance(p.DType) {
				t.Fatalf("sizes %v: the compiled function's %s differs from the interpreter's by %g\n%s", sz, p.Name, e, ast.Print(f))
			}
		}
	}
}

// TestBlockizeMMA is TVM's tensorize flow: a gemm of float16 factors and
// float32 sums tiled to 16 x 8 x 16 and reordered, its init decomposed,
// the inner nest blockized and the new block tensorized with
// mma.sync m16n8k16. The block's variables are the tile loops, its regions
// the tiles, and the intrinsic's match finds the tiles' offsets over them.
func TestBlockizeMMA(t *testing.T) {
	f := mmaGemm(t, "float16", mmaUpdate)
	s, inner := tileForMMA(t, f, [3]int{16, 8, 16}, [3]int{0, 1, 2}, true)
	before := s.Func()
	b, err := s.Blockize(inner)
	if err != nil {
		t.Fatal(schedule.Explain(err))
	}
	if b.Name() != "C_o" {
		t.Errorf("the new block is %s, want C_o", b.Name())
	}
	want := strings.Join([]string{
		"vi_o, vj_o, vk_o = axis.bind(i_0, j_0, k_0)",
		"axis.domain(vi_o = spatial(0, 2), vj_o = spatial(0, 2), vk_o = reduce(0, 2))",
		"reads(C[vi_o * 16:+16, vj_o * 8:+8], A[vi_o * 16:+16, vk_o * 16:+16], B[0:+32, 0:+16])", // B's region is all of B in the gemm
		"writes(C[vi_o * 16:+16, vj_o * 8:+8])",
	}, "\n")
	if got := blockText(t, s.Func(), "C_o"); got != want {
		t.Errorf("block C_o:\n%s\nwant\n%s", got, want)
	}
	if got := blockText(t, s.Func(), "C"); !strings.HasPrefix(got, "vi, vj, vk = axis.bind(vi_o * 16 + i_1, vj_o * 8 + j_1, vk_o * 16 + k_1)") {
		t.Errorf("block C:\n%s", got)
	}
	// The intrinsic's match of the nest: tiles at offsets over C_o's
	// variables.
	in, _ := intrin.Lookup("mma_m16n8k16_f16_f32")
	o := s.Func().Block("C_o")
	m, err := in.Match(o.Body.(*ast.For))
	if err != nil {
		t.Fatal(err)
	}
	for op, want := range map[string]string{"A": "[vi_o * 16, vk_o * 16]", "B": "[vk_o * 16, vj_o * 8]", "C": "[vi_o * 16, vj_o * 8]"} {
		var got []string
		for _, e := range m.Offsets[op] {
			got = append(got, ast.Print(e))
		}
		if g := "[" + strings.Join(got, ", ") + "]"; g != want {
			t.Errorf("operand %s at %s, want %s", op, g, want)
		}
	}
	if err := s.TensorizeBlock(b, "mma_m16n8k16_f16_f32"); err != nil {
		t.Fatal(schedule.Explain(err))
	}
	if v := s.Func().Block("C_o").Annotations[schedule.TensorizeKey]; v != "mma_m16n8k16_f16_f32" {
		t.Errorf("C_o's %s annotation is %v", schedule.TensorizeKey, v)
	}
	if !strings.Contains(s.Trace().Go(), `sch.TensorizeBlock(b`) || !strings.Contains(s.Trace().String(), `tensorize(b`) {
		t.Errorf("the trace lacks the block's tensorize:\n%s\n%s", s.Trace(), s.Trace().Go())
	}
	checkBlockized(t, f, s, "C_o", nil)
	blockizeSame(t, before, s.Func(), nil)
	nativeAgrees(t, s.Func(), nil)
}

// TestTensorizeBlockRefuses: what TensorizeBlock refuses, each with the
// reason, leaving the schedule as it was.
func TestTensorizeBlockRefuses(t *testing.T) {
	for _, c := range []struct {
		name      string
		decompose bool
		blockize  int    // which inner loop to blockize: 0 (i_1), 1 (j_1); -1 none
		block     string // the block to tensorize
		intrinsic string
		want      string
		kind      error
	}{
		{"unknown intrinsic", true, 0, "C_o", "wmma_fancy", "no intrinsic", schedule.ErrArgument},
		{"the root", true, 0, "root", "mma_m16n8k16_f16_f32", "is the root block", schedule.ErrIllegal},
		{"a leaf", true, 0, "C", "mma_m16n8k16_f16_f32", "is not one loop nest", schedule.ErrIllegal},
		{"too few loops", true, 1, "C_o", "mma_m16n8k16_f16_f32", "it has 2 loops in a perfect nest, the intrinsic 3", schedule.ErrIllegal},
		{"init kept", false, 0, "C_o", "mma_m16n8k16_f16_f32", "has an init", schedule.ErrIllegal},
		{"another type", true, 0, "C_o", "mma_m16n8k16_bf16_f32", "is not the intrinsic's", schedule.ErrIllegal},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := mmaGemm(t, "float16", mmaUpdate)
			s, _ := tileForMMA(t, f, [3]int{16, 8, 16}, [3]int{0, 1, 2}, c.decompose)
			inner := mustLoops(t, s, "i_1", "j_1")
			if _, err := s.Blockize(inner[c.blockize]); err != nil {
				t.Fatal(schedule.Explain(err))
			}
			b := must[schedule.Block](t)(s.GetBlock(c.block))
			before, trace := s.Func(), len(s.Trace().Insts)
			err := s.TensorizeBlock(b, c.intrinsic)
			se, ok := errors.AsType[*schedule.Error](err)
			if !ok || se.Primitive != "tensorize" || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a tensorize error saying %q", err, c.want)
			}
			if s.Func() != before || len(s.Trace().Insts) != trace {
				t.Error("a refused tensorize changed the schedule")
			}
		})
	}
}

// elementwise is Y[i, j] = X[i, j] * 3 + 1 over M x N (symbolic when m or
// n is 0).
func elementwise(t *testing.T, m, n int) *ast.Func {
	t.Helper()
	dim := func(d int, name string) string {
		if d == 0 {
			return name
		}
		return fmt.Sprint(d)
	}
	var sizes []string
	for _, x := range []struct {
		d    int
		name string
	}{{m, "M"}, {n, "N"}} {
		if x.d == 0 {
			sizes = append(sizes, x.name+": int32")
		}
	}
	sig := ""
	if len(sizes) > 0 {
		sig = "[" + strings.Join(sizes, ", ") + "]"
	}
	M, N := dim(m, "M"), dim(n, "N")
	return parse(t, fmt.Sprintf(`func ew%s(X: float32[%s, %s], Y: float32[%s, %s]) {
  ScheduleBlock(root) {
    serial for (i, 0, %s) {
      serial for (j, 0, %s) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, %s), vj = spatial(0, %s))
          reads(X[vi, vj])
          writes(Y[vi, vj])
          Y[vi, vj] = X[vi, vj] * 3.0f + 1.0f
        }
      }
    }
  }
}`, sig, M, N, M, N, M, N, M, N))
}

// TestBlockizeElementwise: an element-wise tile after split and reorder;
// its regions are the tile, at shapes the tile divides and at shapes it
// does not (a tail the split's predicate guards).
func TestBlockizeElementwise(t *testing.T) {
	for _, shape := range [][2]int{{12, 20}, {13, 21}, {3, 7}} {
		t.Run(fmt.Sprint(shape), func(t *testing.T) {
			f := elementwise(t, shape[0], shape[1])
			s := must[*schedule.Schedule](t)(schedule.New(f))
			ls := mustLoops(t, s, "i", "j")
			i := must[[]schedule.Loop](t)(s.Split(ls[0], -1, 4))
			j := must[[]schedule.Loop](t)(s.Split(ls[1], -1, 5))
			mustSucceed(t, s.Reorder(i[0], j[0], i[1], j[1]))
			b := must[schedule.Block](t)(s.Blockize(i[1]))
			if shape == [2]int{12, 20} {
				want := strings.Join([]string{
					"vi_o, vj_o = axis.bind(i_0, j_0)",
					"axis.domain(vi_o = spatial(0, 3), vj_o = spatial(0, 4))",
					"reads(X[vi_o * 4:+4, vj_o * 5:+5])",
					"writes(Y[vi_o * 4:+4, vj_o * 5:+5])",
				}, "\n")
				if got := blockText(t, s.Func(), b.Name()); got != want {
					t.Errorf("block %s:\n%s\nwant\n%s", b.Name(), got, want)
				}
			}
			checkBlockized(t, f, s, b.Name(), nil)
			nativeAgrees(t, s.Func(), nil)
			// The new block's loops parallelize and vectorize like any.
			mustSucceed(t, s.Parallel(i[0]))
			mustSucceed(t, s.Vectorize(j[1]))
			blockizeSame(t, f, s.Func(), nil)
			nativeAgrees(t, s.Func(), nil)
		})
	}
}

// TestBlockizeWholeNest: blockize of the outermost loop makes a block with
// no iteration variable (every binding is inner) whose regions are the
// whole buffers; the reduction keeps its init.
func TestBlockizeWholeNest(t *testing.T) {
	c := workload.Matmul(6, 5, 4)
	s := must[*schedule.Schedule](t)(schedule.New(c.Func))
	i := mustLoops(t, s, "i")[0]
	b := must[schedule.Block](t)(s.Blockize(i))
	want := strings.Join([]string{
		"reads(C[0:+6, 0:+5], A[0:+6, 0:+4], B[0:+4, 0:+5])",
		"writes(C[0:+6, 0:+5])",
	}, "\n")
	if got := blockText(t, s.Func(), b.Name()); got != want {
		t.Errorf("block %s:\n%s\nwant\n%s\n%s", b.Name(), got, want, s.Func())
	}
	if s.Func().Block("C").Init == nil {
		t.Error("block C lost its init")
	}
	checkBlockized(t, c.Func, s, b.Name(), nil)
	nativeAgrees(t, s.Func(), nil)
}

// TestBlockizeInit: a reduction that keeps its init, blockized with its
// reduce loops inside the nest, and with them split across it: each
// instance of the inner block, the init's included, is the one it was.
func TestBlockizeInit(t *testing.T) {
	c := workload.Matmul(6, 5, 8)
	t.Run("reduce inside", func(t *testing.T) {
		s := must[*schedule.Schedule](t)(schedule.New(c.Func))
		b := must[schedule.Block](t)(s.Blockize(mustLoops(t, s, "j")[0]))
		if got := blockText(t, s.Func(), b.Name()); !strings.HasPrefix(got, "vi_o = axis.bind(i)\naxis.domain(vi_o = spatial(0, 6))\nreads(C[vi_o, 0:+5], A[vi_o, 0:+8], B[0:+8, 0:+5])") {
			t.Errorf("block %s:\n%s", b.Name(), got)
		}
		checkBlockized(t, c.Func, s, b.Name(), nil)
		nativeAgrees(t, s.Func(), nil)
	})
	t.Run("reduce split across", func(t *testing.T) {
		s := must[*schedule.Schedule](t)(schedule.New(c.Func))
		k := must[[]schedule.Loop](t)(s.Split(mustLoops(t, s, "k")[0], -1, 2))
		b := must[schedule.Block](t)(s.Blockize(k[1]))
		if got := blockText(t, s.Func(), b.Name()); !strings.HasPrefix(got, "vi_o, vj_o, vk_o = axis.bind(i, j, k_0)\naxis.domain(vi_o = spatial(0, 6), vj_o = spatial(0, 5), vk_o = reduce(0, 4))") {
			t.Errorf("block %s:\n%s", b.Name(), got)
		}
		if s.Func().Block("C").Init == nil {
			t.Error("block C lost its init")
		}
		checkBlockized(t, c.Func, s, b.Name(), nil)
		nativeAgrees(t, s.Func(), nil)
	})
}

// TestBlockizeTail: a split whose factor does not divide the extent
// guards the tail with a predicate. Over the nest's loop and an outer one
// it stays on the inner block, the outer loop replaced by the new block's
// variable; over outer loops alone it guards the new block.
func TestBlockizeTail(t *testing.T) {
	f := elementwise(t, 10, 20)
	t.Run("inner", func(t *testing.T) {
		s := must[*schedule.Schedule](t)(schedule.New(f))
		j := must[[]schedule.Loop](t)(s.Split(mustLoops(t, s, "j")[0], -1, 8))
		b := must[schedule.Block](t)(s.Blockize(j[1]))
		if got := blockText(t, s.Func(), b.Name()); !strings.HasPrefix(got, "vi_o, vj_o = axis.bind(i, j_0)\naxis.domain(vi_o = spatial(0, 10), vj_o = spatial(0, 3))\nreads(X[vi_o, vj_o * 8:+8])") {
			t.Errorf("block %s:\n%s", b.Name(), got)
		}
		if got := blockText(t, s.Func(), "Y"); !strings.Contains(got, "predicate(vj_o * 8 + j_1 < 20)") {
			t.Errorf("block Y:\n%s", got)
		}
		checkBlockized(t, f, s, b.Name(), nil)
		nativeAgrees(t, s.Func(), nil)
	})
	t.Run("outer", func(t *testing.T) {
		s := must[*schedule.Schedule](t)(schedule.New(f))
		must[[]schedule.Loop](t)(s.Split(mustLoops(t, s, "i")[0], -1, 4))
		b := must[schedule.Block](t)(s.Blockize(mustLoops(t, s, "j")[0]))
		if got := blockText(t, s.Func(), b.Name()); !strings.Contains(got, "predicate(i_0 * 4 + i_1 < 10)") {
			t.Errorf("block %s:\n%s", b.Name(), got)
		}
		if p := s.Func().Block("Y").Predicate; p != nil {
			t.Errorf("block Y kept the predicate %s", ast.Print(p))
		}
		checkBlockized(t, f, s, b.Name(), nil)
		nativeAgrees(t, s.Func(), nil)
	})
}

// TestBlockizeSymbolic: tiles of symbolic extents, at sizes that are and
// are not multiples of the tile.
func TestBlockizeSymbolic(t *testing.T) {
	f := elementwise(t, 0, 3)
	sizes := []map[string]int64{{"M": 1}, {"M": 15}, {"M": 16}, {"M": 17}, {"M": 40}}
	s := must[*schedule.Schedule](t)(schedule.New(f))
	i := must[[]schedule.Loop](t)(s.Split(mustLoops(t, s, "i")[0], -1, 16))
	b := must[schedule.Block](t)(s.Blockize(i[1]))
	if got := blockText(t, s.Func(), b.Name()); got != "vi_o = axis.bind(i_0)\naxis.domain(vi_o = spatial(0, floordiv(M + 15, 16)))\nreads(X[vi_o * 16:+16, 0:+3])\nwrites(Y[vi_o * 16:+16, 0:+3])" {
		t.Errorf("block %s:\n%s", b.Name(), got)
	}
	checkBlockized(t, f, s, b.Name(), sizes)
	nativeAgrees(t, s.Func(), sizes)

	// The whole symbolic nest: all inner.
	s2 := must[*schedule.Schedule](t)(schedule.New(f))
	b2 := must[schedule.Block](t)(s2.Blockize(mustLoops(t, s2, "i")[0]))
	if got := blockText(t, s2.Func(), b2.Name()); got != "reads(X[0:+M, 0:+3])\nwrites(Y[0:+M, 0:+3])" {
		t.Errorf("block %s:\n%s", b2.Name(), got)
	}
	checkBlockized(t, f, s2, b2.Name(), sizes)
}

const triangular = `func tri[N: int32](L: float32[N, N], x: float32[N], y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (j, 0, i + 1) {
        ScheduleBlock(y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, N), vj = reduce(0, N))
          reads(y[vi], L[vi, vj], x[vj])
          writes(y[vi])
          init {
            y[vi] = 0.0f
          }
          y[vi] = y[vi] + L[vi, vj] * x[vj]
        }
      }
    }
  }
}`

// TestBlockizeTriangular: a loop whose extent is over an outer loop is
// rewritten over the new block's variable bound to that loop; regions over
// a triangle are its bounding box, row by row or whole. The skewed nest
// (an inner loop starting at 3 - i, rows that overlap) divides only whole.
func TestBlockizeTriangular(t *testing.T) {
	f := parse(t, triangular)
	sizes := []map[string]int64{{"N": 1}, {"N": 5}, {"N": 8}}
	s := must[*schedule.Schedule](t)(schedule.New(f))
	b := must[schedule.Block](t)(s.Blockize(mustLoops(t, s, "j")[0]))
	if got := blockText(t, s.Func(), b.Name()); got != "vi_o = axis.bind(i)\naxis.domain(vi_o = spatial(0, N))\nreads(y[vi_o], L[vi_o, 0:+(vi_o + 1)], x[0:+(vi_o + 1)])\nwrites(y[vi_o])" {
		t.Errorf("block %s:\n%s", b.Name(), got)
	}
	if !strings.Contains(ast.Print(s.Func()), "serial for (j, 0, vi_o + 1)") {
		t.Errorf("loop j is not over vi_o:\n%s", s.Func())
	}
	checkBlockized(t, f, s, b.Name(), sizes)
	nativeAgrees(t, s.Func(), sizes)

	s2 := must[*schedule.Schedule](t)(schedule.New(f))
	b2 := must[schedule.Block](t)(s2.Blockize(mustLoops(t, s2, "i")[0]))
	if got := blockText(t, s2.Func(), b2.Name()); got != "reads(y[0:+N], L[0:+N, 0:+N], x[0:+N])\nwrites(y[0:+N])" {
		t.Errorf("block %s:\n%s", b2.Name(), got)
	}
	checkBlockized(t, f, s2, b2.Name(), sizes)

	skewed := adversarialCase(t, "skewed")
	s3 := must[*schedule.Schedule](t)(schedule.New(skewed.Func))
	_, err := s3.Blockize(mustLoops(t, s3, "j")[0])
	if err == nil || !strings.Contains(err.Error(), "the outer part is not a multiple of 7") {
		t.Errorf("blockize of the skewed inner loop: %v", err)
	}
	b3 := must[schedule.Block](t)(s3.Blockize(mustLoops(t, s3, "i")[0]))
	if got := blockText(t, s3.Func(), b3.Name()); got != "reads(A[3:+13])\nwrites(A[3:+13])" {
		t.Errorf("block %s:\n%s", b3.Name(), got)
	}
	checkBlockized(t, skewed.Func, s3, b3.Name(), skewed.Sizes)
}

// adversarialCase returns the case of the adversarial corpus named name.
func adversarialCase(t *testing.T, name string) schedgen.Case {
	t.Helper()
	for _, c := range adversarialCorpus(t) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no case %s", name)
	return schedgen.Case{}
}

// TestBlockizeRefuses: what Blockize refuses, each a typed error naming
// blockize, the reason and the loop, leaving the schedule as it was.
func TestBlockizeRefuses(t *testing.T) {
	twoBlocks := `func two(X: float32[8], Y: float32[8], Z: float32[8]) {
  ScheduleBlock(root) {
    serial for (i, 0, 8) {
      ScheduleBlock(Y) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 8))
        reads(X[vi])
        writes(Y[vi])
        Y[vi] = X[vi] + 1.0f
      }
      ScheduleBlock(Z) {
        vi = axis.bind(i)
        axis.domain(vi = spatial(0, 8))
        reads(Y[vi])
        writes(Z[vi])
        Z[vi] = Y[vi] * 2.0f
      }
    }
  }
}`
	guarded := `func guarded[N: int32](X: float32[N], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      if (i < 4) {
        ScheduleBlock(Y) {
          vi = axis.bind(i)
          axis.domain(vi = spatial(0, N))
          reads(X[vi])
          writes(Y[vi])
          Y[vi] = X[vi] + 1.0f
        }
      }
    }
  }
}`
	// Binding and bounds the new block could not express.
	symbolicTile := `func symtile[N: int32](X: float32[N, N], Y: float32[N, N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (j, 0, N) {
        ScheduleBlock(Y) {
          vi = axis.bind(i * N + j)
          axis.domain(vi = spatial(0, N * N))
          reads(X[floordiv(vi, N), floormod(vi, N)])
          writes(Y[floordiv(vi, N), floormod(vi, N)])
          Y[floordiv(vi, N), floormod(vi, N)] = X[floordiv(vi, N), floormod(vi, N)] * 2.0f
        }
      }
    }
  }
}`
	hiddenBound := `func hidden[N: int32](X: float32[N], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, N) {
      serial for (j, 0, i + 1) {
        ScheduleBlock(Y) {
          vj = axis.bind(j)
          axis.domain(vj = spatial(0, N))
          reads(Y[vj], X[vj])
          writes(Y[vj])
          Y[vj] = Y[vj] + X[vj]
        }
      }
    }
  }
}`
	hiddenPredicate := `func hiddenp[N: int32](X: float32[N], Y: float32[N]) {
  ScheduleBlock(root) {
    serial for (i, 0, 2) {
      serial for (j, 0, N) {
        ScheduleBlock(Y) {
          vj = axis.bind(j)
          axis.domain(vj = spatial(0, N))
          predicate(i + j < N)
          reads(Y[vj], X[vj])
          writes(Y[vj])
          Y[vj] = Y[vj] + X[vj]
        }
      }
    }
  }
}`
	for _, c := range []struct {
		name, src string
		prep      func(t *testing.T, s *schedule.Schedule) schedule.Loop
		want      string
	}{
		{"two blocks", twoBlocks, loopNamed("i"), "loop i holds 2 blocks (Y, Z); blockize needs exactly one"},
		{"an if", guarded, loopNamed("i"), "the nest under loop i holds an if, which is not a loop"},
		{"not affine", "", func(t *testing.T, s *schedule.Schedule) schedule.Loop {
			ls := mustLoops(t, s, "i", "j")
			fused := must[schedule.Loop](t)(s.Fuse(ls...))
			return must[[]schedule.Loop](t)(s.Split(fused, -1, 3))[1]
		}, "is not a sum of the nest's loops times constants"},
		{"not a multiple", "", func(t *testing.T, s *schedule.Schedule) schedule.Loop {
			j := must[[]schedule.Loop](t)(s.Split(mustLoops(t, s, "j")[0], -1, 3))
			return must[[]schedule.Loop](t)(s.Split(j[1], 2, -1))[1]
		}, "the binding of vj in block Y (j_0 * 3 + j_1_0 * 2 + j_1_1) is j_0 * 3 + j_1_0 * 2 outside loop j_1_1 plus j_1_1 inside, which ranges over 2 values: the outer part is not a multiple of 2"},
		{"symbolic tile", symbolicTile, loopNamed("j"), "has no constant range"},
		{"hidden bound", hiddenBound, loopNamed("j"), "loop j of the nest runs i + 1 times, over i outside loop j, which no iteration variable of the new block stands for"},
		{"hidden predicate", hiddenPredicate, loopNamed("j"), "the predicate of block Y (i + j < N) combines the nest's loops with i outside loop j"},
		{"skewed", adversarialSource(t, "skewed"), loopNamed("j"), "the binding of vi in block S (i * 4 + j) is i * 4 outside loop j plus j inside, which ranges over 7 values: the outer part is not a multiple of 7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f *ast.Func
			if c.src == "" {
				f = elementwise(t, 6, 8)
			} else {
				f = parse(t, c.src)
			}
			s := must[*schedule.Schedule](t)(schedule.New(f))
			l := c.prep(t, s)
			before, trace := s.Func(), len(s.Trace().Insts)
			_, err := s.Blockize(l)
			se, ok := errors.AsType[*schedule.Error](err)
			if !ok || se.Primitive != "blockize" || !errors.Is(err, schedule.ErrIllegal) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an illegal blockize error saying %q", err, c.want)
			}
			if len(se.At) == 0 || !strings.Contains(schedule.Explain(err), "\n>") {
				t.Errorf("the error marks nothing:\n%s", schedule.Explain(err))
			}
			if s.Func() != before || len(s.Trace().Insts) != trace {
				t.Error("a refused blockize changed the schedule")
			}
		})
	}
}

func loopNamed(name string) func(t *testing.T, s *schedule.Schedule) schedule.Loop {
	return func(t *testing.T, s *schedule.Schedule) schedule.Loop { return mustLoops(t, s, name)[0] }
}

// adversarialSource returns the text of the corpus case named name.
func adversarialSource(t *testing.T, name string) string {
	return ast.Print(adversarialCase(t, name).Func)
}

// TestBlockizeNonAffineWhole: a binding that is not affine in the nest's
// loops (a split of a fused loop) but uses no other loop stays as it is;
// the regions bound its divisions and remainders.
func TestBlockizeNonAffineWhole(t *testing.T) {
	f := elementwise(t, 6, 8)
	s := must[*schedule.Schedule](t)(schedule.New(f))
	fused := must[schedule.Loop](t)(s.Fuse(mustLoops(t, s, "i", "j")...))
	outer := must[[]schedule.Loop](t)(s.Split(fused, -1, 5))[0]
	b := must[schedule.Block](t)(s.Blockize(outer))
	if got := blockText(t, s.Func(), b.Name()); got != "reads(X[0:+6, 0:+8])\nwrites(Y[0:+6, 0:+8])" {
		t.Errorf("block %s:\n%s\n%s", b.Name(), got, s.Func())
	}
	checkBlockized(t, f, s, b.Name(), nil)
	nativeAgrees(t, s.Func(), nil)
}

// blockizedMMA returns the schedule of TestBlockizeMMA after blockize (no
// tensorize), with its gemm.
func blockizedMMA(t *testing.T) (*ast.Func, *schedule.Schedule, schedule.Block) {
	t.Helper()
	f := mmaGemm(t, "float16", mmaUpdate)
	s, inner := tileForMMA(t, f, [3]int{16, 8, 16}, [3]int{0, 1, 2}, true)
	return f, s, must[schedule.Block](t)(s.Blockize(inner))
}

// TestBlockizeThenOtherPrimitives: the primitives after a blockize. The
// ones that move blocks or make blocks next to one work at the root's
// level: they refuse the block around the nest and the blocks and loops
// inside it, with a reason. Caching a buffer of the inner block and moving
// the copy under the tile loops (TVM's staging of a tile in shared
// memory) works, the block around the nest then reading the cache.
func TestBlockizeThenOtherPrimitives(t *testing.T) {
	refusals := []struct {
		name string
		do   func(t *testing.T, s *schedule.Schedule) func() error
		want string
	}{
		{"compute_at of the block around a nest", func(t *testing.T, s *schedule.Schedule) func() error {
			b, l := must[schedule.Block](t)(s.GetBlock("C_o")), mustLoops(t, s, "j_0")[0]
			return func() error { return s.ComputeAt(b, l) }
		}, "block C_o holds other blocks (it is a block around a nest, as Blockize makes); compute_at works on the blocks inside it"},
		{"reverse_compute_at of a block inside", func(t *testing.T, s *schedule.Schedule) func() error {
			b, l := must[schedule.Block](t)(s.GetBlock("C")), mustLoops(t, s, "j_0")[0]
			return func() error { return s.ReverseComputeAt(b, l) }
		}, "block C is inside block C_o, a block around a nest (as Blockize makes); reverse_compute_at works outside such blocks only"},
		{"compute_at into the nest", func(t *testing.T, s *schedule.Schedule) func() error {
			b, l := must[schedule.Block](t)(s.GetBlock("C_init")), mustLoops(t, s, "i_1")[0]
			return func() error { return s.ComputeAt(b, l) }
		}, "loop i_1 is inside block C_o"},
		{"decompose_reduction inside", func(t *testing.T, s *schedule.Schedule) func() error {
			b, l := must[schedule.Block](t)(s.GetBlock("C")), mustLoops(t, s, "k_1")[0]
			return func() error { _, err := s.DecomposeReduction(b, l); return err }
		}, "block C is inside block C_o"},
		{"rfactor inside", func(t *testing.T, s *schedule.Schedule) func() error {
			l := mustLoops(t, s, "k_1")[0]
			return func() error { _, err := s.RFactor(l); return err }
		}, "loop k_1 is inside block C_o"},
		{"cache_read of the block around a nest", func(t *testing.T, s *schedule.Schedule) func() error {
			b := must[schedule.Block](t)(s.GetBlock("C_o"))
			return func() error { _, err := s.CacheRead(b, "A", "shared"); return err }
		}, "block C_o holds other blocks"},
		{"compute_inline of a block around a nest", func(t *testing.T, s *schedule.Schedule) func() error {
			b := must[schedule.Block](t)(s.GetBlock("C_o"))
			return func() error { return s.ComputeInline(b) }
		}, "block C_o holds other blocks"},
		{"reorder across the block", func(t *testing.T, s *schedule.Schedule) func() error {
			ls := mustLoops(t, s, "i_1", "k_0")
			return func() error { return s.Reorder(ls...) }
		}, "block C_o stands between the loops to reorder"},
		{"fuse across the block", func(t *testing.T, s *schedule.Schedule) func() error {
			ls := mustLoops(t, s, "k_0", "i_1")
			return func() error { _, err := s.Fuse(ls...); return err }
		}, "loop i_1 is not the only statement in loop k_0"},
		{"parallel reduction of the block", func(t *testing.T, s *schedule.Schedule) func() error {
			l := mustLoops(t, s, "k_0")[0]
			return func() error { return s.Parallel(l) }
		}, "parallel"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			_, s, _ := blockizedMMA(t)
			do := c.do(t, s)
			before, trace := s.Func(), len(s.Trace().Insts)
			err := do()
			if _, ok := errors.AsType[*schedule.Error](err); !ok || !errors.Is(err, schedule.ErrIllegal) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an illegal-schedule error saying %q", err, c.want)
			}
			if s.Func() != before || len(s.Trace().Insts) != trace {
				t.Error("a refused primitive changed the schedule")
			}
		})
	}
	t.Run("shared tiles", func(t *testing.T) {
		f, s, b := blockizedMMA(t)
		c := must[schedule.Block](t)(s.GetBlock("C"))
		ko := mustLoops(t, s, "k_0")[0]
		for _, buf := range []string{"A", "B"} {
			copy := must[schedule.Block](t)(s.CacheRead(c, buf, "shared"))
			mustSucceed(t, s.ComputeAt(copy, ko))
		}
		o := blockText(t, s.Func(), b.Name())
		if !strings.Contains(o, "A_shared[vi_o * 16:+16, vk_o * 16:+16]") || !strings.Contains(o, "B_shared[") || strings.Contains(o, "A[") {
			t.Errorf("block %s does not read the caches:\n%s", b.Name(), o)
		}
		mustSucceed(t, s.TensorizeBlock(b, "mma_m16n8k16_f16_f32"))
		checkBlockized(t, f, s, b.Name(), nil)
		nativeAgrees(t, s.Func(), nil)
	})
	t.Run("loops inside", func(t *testing.T) {
		f, s, b := blockizedMMA(t)
		mustSucceed(t, s.Reorder(mustLoops(t, s, "j_1", "i_1")...))
		must[[]schedule.Loop](t)(s.Split(mustLoops(t, s, "k_1")[0], 4, 4))
		mustSucceed(t, s.Unroll(mustLoops(t, s, "k_1_1")[0]))
		mustSucceed(t, s.Parallel(mustLoops(t, s, "i_0")[0]))
		checkBlockized(t, f, s, b.Name(), nil)
		nativeAgrees(t, s.Func(), nil)
	})
}

// TestBlockizeNested: a blockize inside a block around a nest makes a
// block inside it, over its variables; a blockize around it is refused
// (two blocks under the loop).
func TestBlockizeNested(t *testing.T) {
	f := elementwise(t, 16, 12)
	s := must[*schedule.Schedule](t)(schedule.New(f))
	i := must[[]schedule.Loop](t)(s.Split(mustLoops(t, s, "i")[0], -1, 8))
	j := must[[]schedule.Loop](t)(s.Split(mustLoops(t, s, "j")[0], -1, 6))
	mustSucceed(t, s.Reorder(i[0], j[0], i[1], j[1]))
	outer := must[schedule.Block](t)(s.Blockize(i[1]))
	i2 := must[[]schedule.Loop](t)(s.Split(i[1], -1, 2))
	inner := must[schedule.Block](t)(s.Blockize(i2[1]))
	if got := blockText(t, s.Func(), inner.Name()); got != "vi_o_1, vj_o_1 = axis.bind(vi_o * 4 + i_1_0, vj_o)\naxis.domain(vi_o_1 = spatial(0, 8), vj_o_1 = spatial(0, 2))\nreads(X[vi_o_1 * 2:+2, vj_o_1 * 6:+6])\nwrites(Y[vi_o_1 * 2:+2, vj_o_1 * 6:+6])" {
		t.Errorf("block %s:\n%s\n%s", inner.Name(), got, s.Func())
	}
	if got := blockText(t, s.Func(), outer.Name()); !strings.Contains(got, "reads(X[vi_o * 8:+8, vj_o * 6:+6])") {
		t.Errorf("block %s:\n%s", outer.Name(), got)
	}
	checkBlockized(t, f, s, inner.Name(), nil)
	nativeAgrees(t, s.Func(), nil)
	before := s.Func()
	if _, err := s.Blockize(j[0]); err == nil || !strings.Contains(err.Error(), "holds 3 blocks (Y_o, Y_o_1, Y)") || s.Func() != before {
		t.Errorf("blockize around the blocks: %v", err)
	}
}

// TestBlockizeInlinedProducer: a producer inlined into the block inside a
// nest changes what the nest reads, and a write cache what it writes: the
// block around it declares the new buffers after each step.
func TestBlockizeInlinedProducer(t *testing.T) {
	f := parse(t, `func inl(X: float32[8, 8], Y: float32[8, 8]) {
  ScheduleBlock(root) {
    alloc P: float32[8, 8]
    serial for (a, 0, 8) {
      serial for (b, 0, 8) {
        ScheduleBlock(P) {
          vi, vj = axis.bind(a, b)
          axis.domain(vi = spatial(0, 8), vj = spatial(0, 8))
          reads(X[vi, vj])
          writes(P[vi, vj])
          P[vi, vj] = X[vi, vj] * 2.0f
        }
      }
    }
    serial for (i, 0, 8) {
      serial for (j, 0, 8) {
        ScheduleBlock(Y) {
          vi, vj = axis.bind(i, j)
          axis.domain(vi = spatial(0, 8), vj = spatial(0, 8))
          reads(P[vi, vj])
          writes(Y[vi, vj])
          Y[vi, vj] = P[vi, vj] + 1.0f
        }
      }
    }
  }
}`)
	s := must[*schedule.Schedule](t)(schedule.New(f))
	i := must[[]schedule.Loop](t)(s.Split(mustLoops(t, s, "i")[0], -1, 4))
	b := must[schedule.Block](t)(s.Blockize(i[1]))
	mustSucceed(t, s.ComputeInline(must[schedule.Block](t)(s.GetBlock("P"))))
	if got := blockText(t, s.Func(), b.Name()); got != "vi_o = axis.bind(i_0)\naxis.domain(vi_o = spatial(0, 2))\nreads(X[vi_o * 4:+4, 0:+8])\nwrites(Y[vi_o * 4:+4, 0:+8])" {
		t.Errorf("block %s after compute_inline:\n%s", b.Name(), got)
	}
	wb := must[schedule.Block](t)(s.CacheWrite(must[schedule.Block](t)(s.GetBlock("Y")), "Y", "local"))
	mustSucceed(t, s.ReverseComputeAt(wb, i[0]))
	if got := blockText(t, s.Func(), b.Name()); !strings.Contains(got, "writes(Y_local[vi_o * 4:+4, 0:+8])") {
		t.Errorf("block %s after cache_write:\n%s", b.Name(), got)
	}
	checkBlockized(t, f, s, b.Name(), nil)
	nativeAgrees(t, s.Func(), nil)
}

// TestBlockizeRecomputedProducer: a pure producer recomputed in each
// iteration of a loop (as compute_at leaves one) overwrites, with the same
// values, what its consumer read in an earlier iteration. The validator
// lets a pure block that is its buffer's sole writer do that; the block
// around its nest after a blockize declares that it writes the buffer too
// and is no second writer (the interleaved test found the validator
// counting it).
func TestBlockizeRecomputedProducer(t *testing.T) {
	f := parse(t, `func recompute(X: float32[4, 8], Out: float32[4, 8]) {
  ScheduleBlock(root) {
    alloc P: float32[4, 8]
    serial for (i, 0, 4) {
      serial for (r, 0, 3) {
        serial for (ax0, 0, 8) {
          ScheduleBlock(P) {
            vi, vj = axis.bind(i, ax0)
            axis.domain(vi = spatial(0, 4), vj = spatial(0, 8))
            reads(X[vi, vj])
            writes(P[vi, vj])
            P[vi, vj] = X[vi, vj] * 2.0f
          }
        }
        serial for (j, 0, 8) {
          ScheduleBlock(Out) {
            vi, vj = axis.bind(i, j)
            axis.domain(vi = spatial(0, 4), vj = spatial(0, 8))
            predicate(r < 1)
            reads(P[vi, vj])
            writes(Out[vi, vj])
            Out[vi, vj] = P[vi, vj] + 1.0f
          }
        }
      }
    }
  }
}`)
	s := must[*schedule.Schedule](t)(schedule.New(f, schedule.WithValidation(true)))
	b := must[schedule.Block](t)(s.Blockize(mustLoops(t, s, "ax0")[0]))
	checkBlockized(t, f, s, b.Name(), nil)
}

// Tensorize a matrix multiply of float16 factors and float32 sums with a
// Tensor Core's mma.sync m16n8k16, as TVM does: tile the loops to the
// instruction's 16 x 8 x 16 shape, order the tile loops outside, separate
// the init, blockize the inner nest and tensorize the new block. The block
// computes one tile per instance, at offsets over its iteration
// variables; its regions are the tiles.
func ExampleSchedule_Blockize() {
	f, err := ast.Parse(`func gemm(A: float16[32, 32], B: float16[32, 16], C: float32[32, 16]) {
  ScheduleBlock(root) {
    serial for (i, 0, 32) {
      serial for (j, 0, 16) {
        serial for (k, 0, 32) {
          ScheduleBlock(C) {
            vi, vj, vk = axis.bind(i, j, k)
            axis.domain(vi = spatial(0, 32), vj = spatial(0, 16), vk = reduce(0, 32))
            reads(C[vi, vj], A[vi, vk], B[vk, vj])
            writes(C[vi, vj])
            init {
              C[vi, vj] = 0.0f
            }
            C[vi, vj] = C[vi, vj] + float32(A[vi, vk]) * float32(B[vk, vj])
          }
        }
      }
    }
  }
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	sch, err := schedule.New(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	check := func(err error) {
		if err != nil {
			panic(schedule.Explain(err))
		}
	}
	c, err := sch.GetBlock("C")
	check(err)
	loops, err := sch.GetLoops(c) // i, j, k
	check(err)
	var outer, inner [3]schedule.Loop
	for d, tile := range []int{16, 8, 16} {
		parts, err := sch.Split(loops[d], -1, tile)
		check(err)
		outer[d], inner[d] = parts[0], parts[1]
	}
	check(sch.Reorder(outer[0], outer[1], outer[2], inner[0], inner[1], inner[2]))
	_, err = sch.DecomposeReduction(c, outer[2]) // C_init, before the k tiles
	check(err)
	tile, err := sch.Blockize(inner[0]) // C_o: one 16 x 8 x 16 tile
	check(err)
	check(sch.TensorizeBlock(tile, "mma_m16n8k16_f16_f32"))
	fmt.Print(sch.Func())
	// Output:
	// func gemm(A: float16[32, 32], B: float16[32, 16], C: float32[32, 16]) {
	//   ScheduleBlock(root) {
	//     serial for (i_0, 0, 2) {
	//       serial for (j_0, 0, 2) {
	//         serial for (i_1_init, 0, 16) {
	//           serial for (j_1_init, 0, 8) {
	//             ScheduleBlock(C_init) {
	//               vi, vj = axis.bind(i_0 * 16 + i_1_init, j_0 * 8 + j_1_init)
	//               axis.domain(vi = spatial(0, 32), vj = spatial(0, 16))
	//               writes(C[vi, vj])
	//               C[vi, vj] = 0.0f
	//             }
	//           }
	//         }
	//         serial for (k_0, 0, 2) {
	//           ScheduleBlock(C_o) {
	//             vi_o, vj_o, vk_o = axis.bind(i_0, j_0, k_0)
	//             axis.domain(vi_o = spatial(0, 2), vj_o = spatial(0, 2), vk_o = reduce(0, 2))
	//             reads(C[vi_o * 16:+16, vj_o * 8:+8], A[vi_o * 16:+16, vk_o * 16:+16], B[vk_o * 16:+16, vj_o * 8:+8])
	//             writes(C[vi_o * 16:+16, vj_o * 8:+8])
	//             attrs(tensorize = "mma_m16n8k16_f16_f32")
	//             serial for (i_1, 0, 16) {
	//               serial for (j_1, 0, 8) {
	//                 serial for (k_1, 0, 16) {
	//                   ScheduleBlock(C) {
	//                     vi, vj, vk = axis.bind(vi_o * 16 + i_1, vj_o * 8 + j_1, vk_o * 16 + k_1)
	//                     axis.domain(vi = spatial(0, 32), vj = spatial(0, 16), vk = reduce(0, 32))
	//                     reads(C[vi, vj], A[vi, vk], B[vk, vj])
	//                     writes(C[vi, vj])
	//                     C[vi, vj] = C[vi, vj] + float32(A[vi, vk]) * float32(B[vk, vj])
	//                   }
	//                 }
	//               }
	//             }
	//           }
	//         }
	//       }
	//     }
	//   }
	// }
}

// TestBlockizeBadHandles: handles that name nothing are refused with
// ErrHandle, not a panic.
func TestBlockizeBadHandles(t *testing.T) {
	f := elementwise(t, 4, 4)
	s := must[*schedule.Schedule](t)(schedule.New(f))
	other := must[*schedule.Schedule](t)(schedule.New(f))
	if _, err := s.Blockize(schedule.Loop{}); !errors.Is(err, schedule.ErrHandle) {
		t.Errorf("blockize of the zero loop: %v", err)
	}
	if _, err := s.Blockize(mustLoops(t, other, "i")[0]); !errors.Is(err, schedule.ErrHandle) {
		t.Errorf("blockize of another schedule's loop: %v", err)
	}
	if err := s.TensorizeBlock(schedule.Block{}, "mma_m16n8k16_f16_f32"); !errors.Is(err, schedule.ErrHandle) {
		t.Errorf("tensorize of the zero block: %v", err)
	}
	i := mustLoops(t, s, "i")[0]
	must[[]schedule.Loop](t)(s.Split(i, 2, 2))
	if _, err := s.Blockize(i); !errors.Is(err, schedule.ErrHandle) {
		t.Errorf("blockize of a split loop: %v", err)
	}
}
