package llvm

import (
	"flag"
	"github.com/loom-go/loom/internal/golden"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/ast"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the want.ll sections of testdata/codegen/llvm (review the diff)")

// goldenTarget is a fixed target, so that the goldens do not depend on
// the machine: x86-64 with AVX2, 256-bit vectors.
var goldenTarget = Target{Triple: "x86_64-unknown-linux-gnu", CPU: "haswell"}

// TestGolden lowers each function of testdata/codegen/llvm and compares
// the IR with want.ll. LLVM's opt checks that the IR is well formed when it
// is installed.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("../../testdata/codegen/llvm/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var input []byte
			for _, f := range ar.Files {
				if f.Name == "input.loom" {
					input = f.Data
				}
			}
			f, err := ast.Parse(string(input))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Lower(f, Options{Target: goldenTarget})
			if err != nil {
				t.Fatal(err)
			}
			got := m.String()
			if opt, err := exec.LookPath("opt-14"); err == nil {
				cmd := exec.Command(opt, "-verify", "-disable-output", "-")
				cmd.Stdin = strings.NewReader(got)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("opt -verify: %v\n%s", err, out)
				}
			}
			golden.SetSection(ar, "want.ll", got)
			if *update {
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			orig, _ := txtar.ParseFile(file)
			if want, _ := golden.Section(orig, "want.ll"); want != got {
				t.Errorf("IR differs from want.ll (go test ./codegen/llvm -run Golden -update rewrites it):\n%s", got)
			}
		})
	}
}
