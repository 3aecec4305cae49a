package suite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/suite"
)

var dir = filepath.Join("..", "..", "testdata", "suite")

// TestCasesCompile: every case is a graph fusion accepts, and the files
// under testdata/suite are the generator's (go run ./internal/suite/gen
// rewrites them).
func TestCasesCompile(t *testing.T) {
	cases := suite.Cases()
	if len(cases) < 60 {
		t.Fatalf("%d cases", len(cases))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != len(cases) {
		t.Errorf("%d files under %s for %d cases: regenerate them", len(files), dir, len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			g, err := fusion.ParseJSON(c.Graph)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fusion.Compile(g, fusion.Options{}); err != nil {
				t.Fatal(err)
			}
			if data, err := os.ReadFile(filepath.Join(dir, c.Name+".json")); err != nil || string(data) != string(c.Graph) {
				t.Errorf("%s.json is missing or stale: regenerate the suite", c.Name)
			}
			data, err := os.ReadFile(filepath.Join(dir, c.Name+".onednn"))
			if c.OneDNN != "" && (err != nil || string(data) != c.OneDNN+"\n") || c.OneDNN == "" && err == nil {
				t.Errorf("%s.onednn is missing or stale: regenerate the suite", c.Name)
			}
		})
	}
}
