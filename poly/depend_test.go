package poly

import (
	"flag"
	"fmt"
	"github.com/loom-go/loom/internal/golden"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
)

var update = flag.Bool("update", false, "rewrite the deps sections of testdata/poly/deps (review the diff: they are expectations)")

// long runs the randomized tests at full size (go test ./poly -long).
var long = flag.Bool("long", false, "run the randomized tests at full size")

// TestDependenceGolden checks the dependences of ten classic loop nests
// against the expectations written in testdata/poly/deps, and every
// dependence relation against brute-force enumeration of instance pairs.
func TestDependenceGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "poly", "deps", "*.txtar"))
	if len(files) < 10 {
		t.Fatalf("want at least ten classic loop nests, found %d", len(files))
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			src, _ := golden.Section(ar, "func.loom")
			f, err := ast.Parse(src)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Extract(f)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, d := range p.Deps() {
				lines = append(lines, d.String())
			}
			got := strings.Join(lines, "\n")
			if got != "" {
				got += "\n"
			}
			want, _ := golden.Section(ar, "deps")
			if got != want {
				if *update {
					for i := range ar.Files {
						if ar.Files[i].Name == "deps" {
							ar.Files[i].Data = []byte(got)
						}
					}
					os.WriteFile(path, txtar.Format(ar), 0o644)
				} else {
					t.Errorf("dependences differ from the expectation (-want +got):\n%s", cmp.Diff(want, got))
				}
			}
			checkParallel(t, p, ar)
			checkPermutable(t, p, ar)
			for _, sizes := range [][]int64{{4}, {6}} {
				crossCheck(t, p, sizes)
			}
		})
	}
}

// loopsByName returns the loops of f by variable name.
func loopsByName(f *ast.Func) map[string]*ast.For {
	m := map[string]*ast.For{}
	ast.Inspect(f.Body, func(n ast.Node) bool {
		if l, ok := n.(*ast.For); ok {
			m[l.Var.Name] = l
		}
		return true
	})
	return m
}

func checkParallel(t *testing.T, p *Program, ar *txtar.Archive) {
	t.Helper()
	want, ok := golden.Section(ar, "parallel")
	if !ok {
		return
	}
	var par []string
	var names []string
	loops := loopsByName(p.Func)
	for name := range loops {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if len(p.CarriedBy(loops[name])) == 0 {
			par = append(par, name)
		}
	}
	wantList := strings.Fields(want)
	slices.Sort(wantList)
	if !slices.Equal(par, wantList) {
		t.Errorf("parallel loops: got %v, want %v", par, wantList)
	}
}

func checkPermutable(t *testing.T, p *Program, ar *txtar.Archive) {
	t.Helper()
	want, ok := golden.Section(ar, "permutable")
	if !ok {
		return
	}
	loops := loopsByName(p.Func)
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		names, verdict, _ := strings.Cut(line, ":")
		var band []*ast.For
		for _, n := range strings.Fields(names) {
			band = append(band, loops[n])
		}
		got := len(p.Permutable(band)) == 0
		if got != (strings.TrimSpace(verdict) == "yes") {
			t.Errorf("band %s permutable: got %v, want %s", names, got, verdict)
		}
	}
}

// event is one instance executed by the simulation, with the buffer
// elements it reads and writes.
type event struct {
	block         string
	tuple         []int64
	reads, writes map[string]bool // "A[1 2]"
}

// simulate runs the loop structure of f at the given sizes and records the
// leaf block instances in execution order.
func simulate(f *ast.Func, sizes []int64) []event {
	env := map[string]int64{}
	for i, s := range f.Sizes {
		env[s.Name] = sizes[i]
	}
	var events []event
	var loopVals []int64
	var walk func(s ast.Stmt)
	walk = func(s ast.Stmt) {
		switch s := s.(type) {
		case *ast.For:
			lo, n := evalInt(s.Min, env), evalInt(s.Extent, env)
			for v := lo; v < lo+n; v++ {
				env[s.Var.Name] = v
				loopVals = append(loopVals, v)
				walk(s.Body)
				loopVals = loopVals[:len(loopVals)-1]
			}
		case *ast.Seq:
			for _, st := range s.Stmts {
				walk(st)
			}
		case *ast.IfThenElse:
			if evalInt(s.Cond, env) != 0 {
				walk(s.Then)
			} else if s.Else != nil {
				walk(s.Else)
			}
		case *ast.ScheduleBlock:
			if s.Predicate != nil && evalInt(s.Predicate, env) == 0 {
				return
			}
			vals := make([]int64, len(s.Iters))
			for i, it := range s.Iters {
				vals[i] = evalInt(it.Binding, env)
			}
			for i, it := range s.Iters {
				env[it.Var.Name] = vals[i]
			}
			if !s.HoldsBlock() {
				e := event{block: s.Name, tuple: append(slices.Clone(loopVals), vals...), reads: map[string]bool{}, writes: map[string]bool{}}
				for _, rs := range []struct {
					regions []ast.Region
					into    map[string]bool
				}{{s.Reads, e.reads}, {s.Writes, e.writes}} {
					for _, r := range rs.regions {
						boxPoints(r, env, rs.into)
					}
				}
				events = append(events, e)
				return
			}
			if s.Init != nil {
				walk(s.Init)
			}
			walk(s.Body)
		}
	}
	walk(f.Body)
	return events
}

func boxPoints(r ast.Region, env map[string]int64, into map[string]bool) {
	idx := make([]int64, len(r.Ranges))
	var rec func(d int)
	rec = func(d int) {
		if d == len(idx) {
			into[fmt.Sprintf("%s%v", r.Buffer.Name, idx)] = true
			return
		}
		lo, n := evalInt(r.Ranges[d].Min, env), evalInt(r.Ranges[d].Extent, env)
		for v := lo; v < lo+n; v++ {
			idx[d] = v
			rec(d + 1)
		}
	}
	rec(0)
}

// evalInt evaluates an integer or bool index expression.
func evalInt(e ast.Expr, env map[string]int64) int64 {
	b2i := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	switch e := e.(type) {
	case *ast.Const:
		return e.Int
	case *ast.Var:
		return env[e.Name]
	case *ast.Cast:
		return evalInt(e.X, env)
	case *ast.Not:
		return 1 - evalInt(e.X, env)
	case *ast.Select:
		if evalInt(e.Cond, env) != 0 {
			return evalInt(e.T, env)
		}
		return evalInt(e.F, env)
	case *ast.Binary:
		a, b := evalInt(e.A, env), evalInt(e.B, env)
		switch e.Op {
		case ast.OpAdd:
			return a + b
		case ast.OpSub:
			return a - b
		case ast.OpMul:
			return a * b
		case ast.OpFloorDiv:
			return IntOf(a).FloorDiv(IntOf(b)).small
		case ast.OpFloorMod:
			return IntOf(a).Mod(IntOf(b)).small
		case ast.OpDiv:
			return a / b
		case ast.OpMod:
			return a % b
		case ast.OpMin:
			return min(a, b)
		case ast.OpMax:
			return max(a, b)
		case ast.OpEQ:
			return b2i(a == b)
		case ast.OpNE:
			return b2i(a != b)
		case ast.OpLT:
			return b2i(a < b)
		case ast.OpLE:
			return b2i(a <= b)
		case ast.OpGT:
			return b2i(a > b)
		case ast.OpGE:
			return b2i(a >= b)
		case ast.OpAnd:
			return b2i(a != 0 && b != 0)
		case ast.OpOr:
			return b2i(a != 0 || b != 0)
		}
	}
	panic(fmt.Sprintf("evalInt: %s", e))
}

// crossCheck compares the union of p's dependence relations, per kind,
// buffer and block pair, with the pairs found by simulation: each simulated
// pair must be in a relation, and (for an exact model) each pair of
// simulated instances in a relation must be a simulated pair.
func crossCheck(t *testing.T, p *Program, sizes []int64) {
	t.Helper()
	params := sizes[:len(p.Params)]
	events := simulate(p.Func, params)
	type key struct{ kind, buf, src, dst string }
	truth := map[key]map[string]bool{}
	for i, a := range events {
		for _, b := range events[i+1:] {
			for el := range a.writes {
				buf := el[:strings.Index(el, "[")]
				if b.reads[el] {
					k := key{"RAW", buf, a.block, b.block}
					if truth[k] == nil {
						truth[k] = map[string]bool{}
					}
					truth[k][fmt.Sprint(a.tuple, b.tuple)] = true
				}
				if b.writes[el] {
					k := key{"WAW", buf, a.block, b.block}
					if truth[k] == nil {
						truth[k] = map[string]bool{}
					}
					truth[k][fmt.Sprint(a.tuple, b.tuple)] = true
				}
			}
			for el := range a.reads {
				buf := el[:strings.Index(el, "[")]
				if b.writes[el] {
					k := key{"WAR", buf, a.block, b.block}
					if truth[k] == nil {
						truth[k] = map[string]bool{}
					}
					truth[k][fmt.Sprint(a.tuple, b.tuple)] = true
				}
			}
		}
	}
	rels := map[key][]Set{}
	for _, d := range p.Deps() {
		k := key{d.Kind.String(), d.Buffer.Name, d.Source.Block.Name, d.Sink.Block.Name}
		rels[k] = append(rels[k], d.Rel.Wrap())
	}
	inRel := func(k key, a, b event) bool {
		pt := append(slices.Clone(a.tuple), b.tuple...)
		for _, s := range rels[k] {
			if s.Contains(params, pt) {
				return true
			}
		}
		return false
	}
	for k, pairs := range truth {
		if len(rels[k]) == 0 {
			t.Errorf("sizes %v: no %s dependence %s -> %s on %s, but %d pairs exist", params, k.kind, k.src, k.dst, k.buf, len(pairs))
		}
	}
	for i, a := range events {
		for _, b := range events[i+1:] {
			for k := range rels {
				if k.src != a.block || k.dst != b.block {
					continue
				}
				pair := fmt.Sprint(a.tuple, b.tuple)
				got, want := inRel(k, a, b), truth[k][pair]
				if got != want {
					t.Fatalf("sizes %v: %s %s -> %s on %s for %s: relation says %v, simulation %v", params, k.kind, k.src, k.dst, k.buf, pair, got, want)
				}
			}
			// Pairs in the reverse order are never dependences of a -> b.
		}
	}
}
