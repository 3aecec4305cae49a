package onnx

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocListsEveryOperator: the package documentation names every
// operator the importer converts.
func TestDocListsEveryOperator(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	table := text[strings.Index(text, "The operators:"):]
	for op := range converters {
		if !regexp.MustCompile(`\b` + op + `\b`).MatchString(table) {
			t.Errorf("doc.go does not list %s", op)
		}
	}
}
