package fusion

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocListsEveryOperator: the  documentation's table names
// every operator the graphs take.
func TestDocListsEveryOperator(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "The operators, their inputs and their attributes:")
	if start < 0 {
		t.Fatal("doc.go has no operator table")
	}
	table := text[start:]
	for op := range ops {
		if !regexp.MustCompile(`(?m)^//\t(.*\s)?` + op + `(\s|$)`).MatchString(table) {
			t.Errorf("doc.go's operator table does not list %s", op)
		}
	}
}
