package ast_test

import (
	"flag"
	"github.com/loom-go/loom/internal/golden"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/internal/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ast")

// built maps a golden file to the builder that produces its function; the
// other golden files are written by hand.
var built = map[string]func() *ast.Func{
	"matmul":           func() *ast.Func { return workload.Matmul(1024, 1024, 1024).Func },
	"matmul_bias_relu": func() *ast.Func { return workload.MatmulBiasReLU(1024, 1024, 1024).Func },
	"conv2d":           func() *ast.Func { return workload.Conv2D(1, 64, 56, 56, 64).Func },
	"softmax":          func() *ast.Func { return workload.Softmax(8192, 1024).Func },
	"rmsnorm":          func() *ast.Func { return workload.RMSNorm(16384, 768).Func },
	"layernorm":        func() *ast.Func { return workload.LayerNorm(16384, 768).Func },
	"chain":            func() *ast.Func { return workload.Chain(1, 1, 1024).Func },
	"rowsum":           rowSum,
	"stencil":          stencil,
}

// rowSum is a plain reduction with an init block over a symbolic row count.
func rowSum() *ast.Func {
	b := ast.NewBuilder("rowsum")
	n := b.Size("N")
	X := b.Placeholder("X", ast.Float32, n, ast.I32(128))
	k := b.ReduceAxis("k", ast.I32(128))
	Y := b.Sum("Y", []ast.Expr{n}, []*ast.Var{k}, func(i []ast.Expr) ast.Expr { return X.At(i[0], k) })
	f, err := b.Build(Y)
	if err != nil {
		panic(err)
	}
	return f
}

// stencil reads X at three offsets, so its read region is a range.
func stencil() *ast.Func {
	b := ast.NewBuilder("stencil")
	X := b.Placeholder("X", ast.Float64, ast.I32(66))
	Y := b.Compute("Y", ast.Shape(64), func(i []ast.Expr) ast.Expr {
		l := X.At(i[0])
		c := X.At(ast.Add(i[0], ast.I32(1)))
		r := X.At(ast.Add(i[0], ast.I32(2)))
		return ast.Div(ast.Add(ast.Add(l, c), r), ast.F64(3))
	})
	f, err := b.Build(Y)
	if err != nil {
		panic(err)
	}
	return f
}

func goldenFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "ast", dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files in testdata/ast/%s: %v", dir, err)
	}
	return files
}

// TestGoldenPrint checks every function under testdata/ast/print: the text
// parses, prints back identically, hashes to the pinned digest, and, where a
// builder produces it, equals the builder's function.
func TestGoldenPrint(t *testing.T) {
	for _, path := range goldenFiles(t, "print") {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			changed := false
			text, ok := golden.Section(ar, "func.loom")
			if build := built[name]; build != nil {
				got := ast.Print(build())
				if *update && got != text {
					golden.SetSection(ar, "func.loom", got)
					text, changed = got, true
				} else if got != text {
					t.Errorf("builder output differs from the golden text (-want +got):\n%s", cmp.Diff(text, got))
				}
			} else if !ok {
				t.Fatalf("%s has no func.loom section", path)
			}
			f, err := ast.Parse(text)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := ast.Print(f); got != text {
				t.Errorf("print(parse(text)) != text (-want +got):\n%s", cmp.Diff(text, got))
			}
			if build := built[name]; build != nil {
				b := build()
				if !ast.Equal(f, b) || ast.Hash(f) != ast.Hash(b) {
					t.Errorf("parsed function is not structurally equal to the built one")
				}
			}
			hash := ast.Hash(f).String() + "\n"
			if want, _ := golden.Section(ar, "hash"); want != hash {
				if *update {
					golden.SetSection(ar, "hash", hash)
					changed = true
				} else {
					t.Errorf("structural hash changed: got %s want %s", hash, want)
				}
			}
			if changed {
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestGoldenErrors checks that each malformed input under
// testdata/ast/errors is refused with exactly the error its file states.
func TestGoldenErrors(t *testing.T) {
	for _, path := range goldenFiles(t, "errors") {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			input, ok := golden.Section(ar, "input.loom")
			if !ok {
				t.Fatalf("%s has no input.loom section", path)
			}
			_, perr := ast.Parse(input)
			if perr == nil {
				t.Fatalf("parse succeeded; want an error")
			}
			got := perr.Error() + "\n"
			if want, _ := golden.Section(ar, "error"); want != got {
				if *update {
					golden.SetSection(ar, "error", got)
					if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				t.Errorf("error mismatch:\n got: %s want: %s", got, want)
			}
		})
	}
}
