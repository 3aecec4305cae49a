package fusion_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/loom-go/loom/fusion"
	"github.com/loom-go/loom/internal/golden"
)

// FuzzGraph feeds arbitrary bytes to the JSON reader and compiles what it
// accepts: no input may panic.
//
//	go test ./fusion -run '^$' -fuzz FuzzGraph -fuzztime 1m
func FuzzGraph(f *testing.F) {
	files, _ := filepath.Glob("../testdata/fusion/*.txtar")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if src, ok := golden.Section(txtar.Parse(data), "graph.json"); ok {
			f.Add([]byte(src))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := fusion.ParseJSON(data)
		if err != nil {
			return
		}
		var buf writerCounter
		if err := fusion.WriteJSON(&buf, g); err != nil {
			t.Fatalf("write: %v", err)
		}
		p, err := fusion.Compile(g, fusion.Options{})
		if err != nil {
			return
		}
		sizes := map[string]int64{}
		for _, s := range g.Symbols() {
			sizes[s] = 2
		}
		if mem, err := p.Memory(sizes); err == nil {
			if err := mem.Check(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

type writerCounter int

func (w *writerCounter) Write(p []byte) (int, error) { *w += writerCounter(len(p)); return len(p), nil }
