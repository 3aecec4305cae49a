package ast_test

import (
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/ast"
)

// addGoldenSeeds adds the text of every golden file (functions and broken
// inputs alike) to the fuzzer's seed corpus. More seeds live in
// testdata/fuzz/FuzzParse.
func addGoldenSeeds(f *testing.F) {
	for _, dir := range []string{"print", "errors"} {
		files, _ := filepath.Glob(filepath.Join("..", "testdata", "ast", dir, "*.txtar"))
		for _, path := range files {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				f.Fatal(err)
			}
			for _, file := range ar.Files {
				if file.Name == "func.loom" || file.Name == "input.loom" {
					f.Add(string(file.Data))
				}
			}
		}
	}
}

// FuzzParse feeds arbitrary text to the parser. It must never panic, and a
// function it accepts must be well formed and print to text that parses back
// to a structurally equal function that prints the same.
//
//	go test ./ast -run '^$' -fuzz FuzzParse -fuzztime 1m
func FuzzParse(f *testing.F) {
	addGoldenSeeds(f)
	f.Fuzz(func(t *testing.T, src string) {
		fn, err := ast.Parse(src)
		if err != nil {
			if fn != nil {
				t.Fatalf("Parse returned a function and an error")
			}
			return
		}
		if err := ast.Verify(fn); err != nil {
			t.Fatalf("Parse accepted an ill-formed function: %v", err)
		}
		text := ast.Print(fn)
		again, err := ast.Parse(text)
		if err != nil {
			t.Fatalf("printed function does not parse: %v\n%s", err, text)
		}
		if got := ast.Print(again); got != text {
			t.Fatalf("print(parse(print(f))) != print(f):\n%s\n----\n%s", text, got)
		}
		if !ast.Equal(fn, again) || ast.Hash(fn) != ast.Hash(again) {
			t.Fatalf("round trip changed the structure:\n%s", text)
		}
		// Whatever parses has a canonical form that verifies, is its own,
		// and renames back.
		c, back := ast.Canonical(fn)
		if err := ast.Verify(c); err != nil {
			t.Fatalf("canonical form does not verify: %v\n%s", err, ast.Print(c))
		}
		if cc, _ := ast.Canonical(c); !ast.Equal(cc, c) {
			t.Fatalf("canonical form is not its own:\n%s", ast.Print(c))
		}
		if g, err := ast.Rename(c, back); err != nil || !ast.Equal(g, fn) {
			t.Fatalf("canonical form does not rename back (%v):\n%s", err, text)
		}
	})
}

// FuzzParseExpr does the same for expressions over a fixed scope.
//
//	go test ./ast -run '^$' -fuzz FuzzParseExpr -fuzztime 1m
func FuzzParseExpr(f *testing.F) {
	i, x := ast.NewVar("i", ast.Int32), ast.NewVar("x", ast.Float32)
	A := ast.NewBuffer("A", ast.Float32, ast.I32(16))
	for _, s := range []string{
		"i * 64 + floordiv(i, 3) - 1", "select(i < 3 && !(x > 1.0f), x, -x)", "exp(x) / (1.0f + A[i % 16])",
		"float32(int64(i) * 2L)", "-2147483648", "1e-45f", "nanbf", "((((i))))", "i < i < i", "A[",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := ast.ParseExpr(src, i, x, A)
		if err != nil {
			return
		}
		text := ast.Print(e)
		again, err := ast.ParseExpr(text, i, x, A)
		if err != nil {
			t.Fatalf("printed expression %q does not parse: %v", text, err)
		}
		if !ast.Equal(e, again) {
			t.Fatalf("round trip changed %q into %q", text, ast.Print(again))
		}
		// The simplifier accepts whatever the parser accepts.
		s := ast.Simplify(e)
		if s.Type() != e.Type() {
			t.Fatalf("Simplify(%s) changed the type from %s to %s", text, e.Type(), s.Type())
		}
	})
}
