package fusion_test

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the want, passes and error sections under testdata/fusion")

// TestGolden compiles every graph under testdata/fusion. Each file has a
// graph.json section and either an error section (the graph is refused
// with that message) or:
//   - want: the plan (kernels, buffers, printed functions);
//   - passes (optional): the graph after every pass;
//   - sizes (optional): lines of S=v assignments for the symbols, at
//     which the fused plan's outputs must equal those of one kernel per
//     operator, on random inputs.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("../testdata/fusion/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			src, ok := golden.Section(ar, "graph.json")
			if !ok {
				t.Fatal("no graph.json section")
			}
			dirty := false
			check := func(name, got string) {
				want, ok := golden.Section(ar, name)
				if *update {
					golden.SetSection(ar, name, got)
					dirty = true
					return
				}
				if !ok {
					t.Errorf("no %s section; run go test -update", name)
					return
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s mismatch (-want +got):\n%s", name, d)
				}
			}
			defer func() {
				if dirty {
					if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}()
			g, err := fusion.ParseJSON([]byte(src))
			if _, wantErr := golden.Section(ar, "error"); wantErr {
				if err == nil {
					_, err = fusion.Compile(g, fusion.Options{})
				}
				if err == nil {
					t.Fatal("the graph was accepted; want an error")
				}
				check("error", err.Error()+"\n")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var dump strings.Builder
			_, wantPasses := golden.Section(ar, "passes")
			opts := fusion.Options{}
			if wantPasses {
				opts = fusion.Options{Dump: []string{"all"}, DumpTo: &dump}
			}
			p, err := fusion.Compile(g, opts)
			if err != nil {
				t.Fatal(err)
			}
			check("want", p.String())
			if wantPasses {
				check("passes", dump.String())
			}
			if sizes, ok := golden.Section(ar, "sizes"); ok {
				ref, err := fusion.Compile(g, fusion.Options{NoFuse: true})
				if err != nil {
					t.Fatal(err)
				}
				for _, line := range strings.Split(strings.TrimSpace(sizes), "\n") {
					compare(t, g, p, ref, parseSizes(t, line))
				}
			}
		})
	}
}

func parseSizes(t *testing.T, line string) map[string]int64 {
	b, err := golden.Sizes(line)
	if err != nil {
		t.Fatal(err)
	}
	return b[0]
}

// compare runs the fused plan and the one-kernel-per-operator plan on
// the same random inputs and requires the same outputs.
func compare(t *testing.T, g *fusion.Graph, fused, ref *fusion.Plan, sizes map[string]int64) {
	t.Helper()
	got, want := interpretBoth(t, g, fused, ref, sizes)
	for name, w := range want {
		if e := check.MaxRelErr(got[name], w); e > 1e-5 {
			t.Errorf("sizes %v: output %s differs from the unfused plan (max rel err %g)", sizes, name, e)
		}
	}
	if mem, err := fused.Memory(sizes); err != nil {
		t.Errorf("sizes %v: memory plan: %v", sizes, err)
	} else if err := mem.Check(); err != nil {
		t.Errorf("sizes %v: memory plan: %v", sizes, err)
	}
}

// interpretBoth runs plans fused and ref, both of g's inputs, on the same
// random inputs and returns their outputs.
func interpretBoth(t *testing.T, g *fusion.Graph, fused, ref *fusion.Plan, sizes map[string]int64) (got, want map[string]any) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(len(sizes)), 7))
	in := map[string]any{}
	for _, x := range g.Inputs {
		d, err := fusion.NewData(x, sizes)
		if err != nil {
			t.Fatal(err)
		}
		fill(r, d)
		in[x.Name] = d
	}
	got, err := fused.Interpret(sizes, in)
	if err != nil {
		t.Fatalf("sizes %v: fused: %v", sizes, err)
	}
	want, err = ref.Interpret(sizes, in)
	if err != nil {
		t.Fatalf("sizes %v: the reference: %v", sizes, err)
	}
	return got, want
}

func fill(r *rand.Rand, d any) {
	switch d := d.(type) {
	case []float32:
		for i := range d {
			d[i] = float32(r.NormFloat64())
		}
	case []float64:
		for i := range d {
			d[i] = r.NormFloat64()
		}
	case []int32:
		for i := range d {
			d[i] = int32(r.IntN(19) - 9)
		}
	case []int64:
		for i := range d {
			d[i] = int64(r.IntN(19) - 9)
		}
	case []bool:
		for i := range d {
			d[i] = r.IntN(2) == 1
		}
	case []uint16:
		for i := range d {
			d[i] = ast.Float16Bits(r.NormFloat64())
		}
	}
}

// TestJSONExamples compiles the example graphs (testdata/fusion/*.json)
// and checks each fused plan against one kernel per operator.
func TestJSONExamples(t *testing.T) {
	files, _ := filepath.Glob("../testdata/fusion/*.json")
	if len(files) == 0 {
		t.Fatal("no example graphs")
	}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		g, err := fusion.ReadJSON(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		p, err := fusion.Compile(g, fusion.Options{})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		ref, err := fusion.Compile(g, fusion.Options{NoFuse: true})
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, v := range []int64{1, 5} {
			sizes := map[string]int64{}
			for _, s := range g.Symbols() {
				sizes[s] = v
			}
			compare(t, g, p, ref, sizes)
		}
	}
}
