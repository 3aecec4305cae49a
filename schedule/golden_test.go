package schedule

import (
	"encoding/json"
	"flag"
	"github.com/loom-go/loom/internal/golden"
	"go/format"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/check"
	"github.com/loom-go/loom/internal/workload"
)

var update = flag.Bool("update", false, "rewrite the want.loom and error sections under testdata/schedule")

// TestGolden replays the trace of every file under testdata/schedule on
// its input function and compares the result with want.loom, or the error
// with the error section. Every accepted schedule is also checked for
// replay from JSON, valid Go output and the interpreter's results.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "schedule", "*.txtar"))
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			src, _ := golden.Section(ar, "input.loom")
			f, err := ast.Parse(src)
			if err != nil {
				t.Fatalf("input: %v", err)
			}
			text, _ := golden.Section(ar, "trace")
			tr, err := ParseTraceText(text)
			if err != nil {
				t.Fatal(err)
			}
			sizes := parseSizes(t, ar)
			s, err := Replay(f, tr, nil)
			wantErr, hasErr := golden.Section(ar, "error")
			want, _ := golden.Section(ar, "want.loom")
			var got, key string
			if err != nil {
				got, key = Explain(err), "error"
			} else {
				got, key = ast.Print(s.Func()), "want.loom"
			}
			expected := want
			if key == "error" {
				expected = wantErr
			}
			if got != expected {
				if *update {
					golden.SetSection(ar, key, got)
					other := "error"
					if key == "error" {
						other = "want.loom"
					}
					for i := range ar.Files {
						if ar.Files[i].Name == other {
							ar.Files = append(ar.Files[:i], ar.Files[i+1:]...)
							break
						}
					}
					if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
						t.Fatal(err)
					}
				} else {
					t.Errorf("%s differs (-want +got):\n%s", key, cmp.Diff(expected, got))
				}
			}
			if err != nil {
				if !hasErr && !*update {
					t.Errorf("unexpected error:\n%s", got)
				}
				return
			}
			checkReplay(t, f, s)
			checkSameResults(t, f, s.Func(), sizes)
		})
	}
}

func parseSizes(t *testing.T, ar *txtar.Archive) map[string]int64 {
	text, _ := golden.Section(ar, "sizes")
	sizes := map[string]int64{}
	for _, kv := range strings.Fields(text) {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("sizes: %v", err)
		}
		sizes[k] = n
	}
	return sizes
}

// checkReplay checks that s's trace survives JSON, replays on a fresh
// schedule of f to the same function, and prints as valid Go.
func checkReplay(t *testing.T, f *ast.Func, s *Schedule) {
	t.Helper()
	data, err := json.Marshal(s.Trace())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ParseTrace(data)
	if err != nil {
		t.Fatalf("trace JSON does not read back: %v\n%s", err, data)
	}
	again, err := Replay(f, tr, nil)
	if err != nil {
		t.Fatalf("replay from JSON: %v", err)
	}
	if ast.Hash(again.Func()) != ast.Hash(s.Func()) {
		t.Fatalf("replay gives another function:\n%s\nwant\n%s", ast.Print(again.Func()), ast.Print(s.Func()))
	}
	src := "package p\n\nimport \"github.com/loom-go/loom/schedule\"\n\n" + s.Trace().Go()
	if _, err := format.Source([]byte(src)); err != nil {
		t.Fatalf("Trace.Go is not valid Go: %v\n%s", err, src)
	}
}

// checkSameResults runs f and g on the same random inputs and compares
// every buffer: bit for bit, or within 1e-5 relative when a schedule
// reorders a floating-point reduction (rfactor).
func checkSameResults(t *testing.T, f, g *ast.Func, sizes map[string]int64) {
	t.Helper()
	c := workload.Case{Name: f.Name, Func: f, Sizes: sizes}
	args := c.Args(rand.Uint64())
	want := check.Clone(args)
	if err := ast.Interpret(f, sizes, want); err != nil {
		t.Fatalf("interpreting the input: %v", err)
	}
	if err := ast.Interpret(g, sizes, args); err != nil {
		t.Fatalf("interpreting the scheduled function: %s", ast.Explain(g, err))
	}
	for name, w := range want {
		if check.MaxRelErr(args[name], w) > 1e-5 {
			t.Fatalf("buffer %s differs after scheduling", name)
		}
	}
}
