// Package readme checks the project's README: every Go snippet in it
// compiles, as a program of its own with the imports it names, and each
// that needs no file the reader brings (a model, a tuning database) runs
// to its end, so that the README cannot drift from the API.
package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// packages are the import paths of the names a README snippet may use.
var packages = map[string]string{
	"ast":      "github.com/loom-go/loom/ast",
	"schedule": "github.com/loom-go/loom/schedule",
	"native":   "github.com/loom-go/loom/codegen/llvm/native",
	"llvm":     "github.com/loom-go/loom/codegen/llvm",
	"autotune": "github.com/loom-go/loom/autotune",
	"fusion":   "github.com/loom-go/loom/fusion",
	"module":   "github.com/loom-go/loom/module",
	"onnx":     "github.com/loom-go/loom/onnx",
	"lazy":     "github.com/loom-go/loom/lazy",
	"context":  "context",
	"time":     "time",
	"fmt":      "fmt",
	"log":      "log",
	"os":       "os",
}

// snippets returns the README's Go code blocks.
func snippets(t *testing.T) []string {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(data), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestSnippetsCompile builds each snippet as the body of a main function,
// importing the packages it names, with go vet's checks (an unused
// variable fails the build; vet catches the rest), and runs those that
// read no file of the reader's: they must end without an error.
func TestSnippetsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: it builds a program per README snippet")
	}
	go_, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	all := snippets(t)
	if len(all) == 0 {
		t.Fatal("the README has no Go snippets")
	}
	// The programs live in the module, so that its packages resolve.
	dir, err := os.MkdirTemp(".", "snippet")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	uses := regexp.MustCompile(`\b([a-z]+)\.[A-Z]`)
	for i, body := range all {
		imports := map[string]bool{}
		for _, m := range uses.FindAllStringSubmatch(body, -1) {
			if p, ok := packages[m[1]]; ok {
				imports[p] = true
			}
		}
		var list []string
		for p := range imports {
			list = append(list, `	"`+p+`"`)
		}
		sort.Strings(list)
		src := "package main\n\nimport (\n" + strings.Join(list, "\n") + "\n)\n\nfunc main() {\n" + body + "}\n"
		pkg := filepath.Join(dir, "s"+string(rune('a'+i)))
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(go_, "vet", "./"+pkg).CombinedOutput()
		if err != nil {
			t.Errorf("the README's Go snippet %d does not compile: %v\n%s\n%s", i+1, err, out, src)
			continue
		}
		if strings.Contains(body, ".onnx") || strings.Contains(body, ".jsonl") {
			continue // it reads the reader's model or database
		}
		run := exec.Command(go_, "run", "./"+pkg)
		run.Env = append(os.Environ(), "LOOM_CACHE_DIR="+t.TempDir())
		if out, err := run.CombinedOutput(); err != nil || strings.Contains(string(out), "error") {
			t.Errorf("the README's Go snippet %d does not run: %v\n%s\n%s", i+1, err, out, src)
		}
	}
}
