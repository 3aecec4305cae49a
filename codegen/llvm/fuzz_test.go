package llvm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loom-go/loom/ast"
	"golang.org/x/tools/txtar"
)

// FuzzLower lowers every function the parser accepts and the verifier
// passes: lowering returns a module or an error, never panics.
//
//	go test ./codegen/llvm -run '^$' -fuzz FuzzLower -fuzztime 1m
func FuzzLower(f *testing.F) {
	for _, glob := range []string{"../../testdata/ast/print/*.txtar", "../../testdata/codegen/llvm/*.txtar", "../../testdata/schedule/*.txtar"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				continue
			}
			for _, fl := range ar.Files {
				if filepath.Ext(fl.Name) == ".loom" {
					f.Add(string(fl.Data))
				}
			}
		}
	}
	if data, err := os.ReadFile("../../testdata/codegen/llvm/tail.txtar"); err == nil {
		f.Add(string(data))
	}
	f.Fuzz(func(t *testing.T, src string) {
		fn, err := ast.Parse(src)
		if err != nil || ast.Verify(fn) != nil {
			return
		}
		for _, opts := range []Options{{Target: goldenTarget}, {Target: goldenTarget, VectorBits: 512, FastMath: true}} {
			m, err := Lower(fn, opts)
			if err == nil && m.String() == "" {
				t.Fatal("empty module")
			}
		}
	})
}
