package fusion_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/fusion"
)

// TestWeightsFileRoundTrip writes a graph with its large constants in a
// weights file and reads it back.
func TestWeightsFileRoundTrip(t *testing.T) {
	src := `{"name": "g",
	  "inputs": [{"name": "X", "dtype": "float32", "shape": ["S", 20]}],
	  "constants": [{"name": "W", "dtype": "float32", "shape": [20, 2], "data": [` + strings.Repeat("0.25, -1.5, ", 19) + `3, 4]},
	                {"name": "b", "dtype": "float32", "shape": [2], "data": [1, 2]},
	                {"name": "k", "dtype": "int64", "shape": [17], "data": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,19]}],
	  "nodes": [{"op": "matmul", "inputs": ["X", "W"], "output": "Y"}, {"op": "add", "inputs": ["Y", "b"], "output": "Z"},
	            {"op": "gather", "inputs": ["X", "k"], "output": "G", "attrs": {"axis": 1}}],
	  "outputs": ["Z", "G"]}`
	g, err := fusion.ParseJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "g.json")
	if err := fusion.WriteJSONFile(path, g, "g.safetensors"); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(path)
	if !bytes.Contains(text, []byte(`"weights": "g.safetensors"`)) || bytes.Contains(text, []byte("-1.5")) || !bytes.Contains(text, []byte(`"data": [`)) {
		t.Errorf("the JSON should name the weights file, leave W out and keep b inline:\n%s", text)
	}
	back, err := fusion.ReadJSONFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := fusion.WriteJSON(&a, g); err != nil {
		t.Fatal(err)
	}
	if err := fusion.WriteJSON(&b, back); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("read back differs:\n%s\nwant:\n%s", b.String(), a.String())
	}
	// The JSON alone cannot find its weights.
	if _, err := fusion.ParseJSON(text); err == nil || !strings.Contains(err.Error(), "ReadJSONFile") {
		t.Errorf("ParseJSON of a graph with a weights file: %v", err)
	}
	// A weights file that does not match the declaration.
	bad := bytes.Replace(text, []byte(`"shape": [
        20,
        2
      ]`), []byte(`"shape": [40, 1]`), 1)
	if bytes.Equal(bad, text) {
		t.Fatalf("test setup: W's shape not found in\n%s", text)
	}
	os.WriteFile(path, bad, 0o644)
	if _, err := fusion.ReadJSONFile(path); err == nil || !strings.Contains(err.Error(), "declared float32 [40 1], but g.safetensors holds it as float32 [20 2]") {
		t.Errorf("mismatched declaration: %v", err)
	}
	for _, c := range []struct{ weights, want string }{
		{"../g.safetensors", "not a file name relative"},
		{"/etc/passwd", "not a file name relative"},
		{"missing.safetensors", "no such file"},
		{"g.json", "header"},
	} {
		os.WriteFile(path, bytes.Replace(text, []byte(`"g.safetensors"`), []byte(`"`+c.weights+`"`), 1), 0o644)
		if _, err := fusion.ReadJSONFile(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("weights %q: %v, want %q", c.weights, err, c.want)
		}
	}
}
