package cudaemu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrecompiledHeader: the precompiled header is built once into the
// cache directory, found there by the next build, and used by g++ with
// the flags of RunEach's programs (g++ silently parses the header's text
// instead when the flags differ: -H marks a used one with "!").
func TestPrecompiledHeader(t *testing.T) {
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("g++ not found (make tools installs it)")
	}
	t.Setenv("LOOM_CACHE_DIR", t.TempDir())
	ctx := context.Background()
	dir := buildHeader(ctx)
	if dir == "" {
		t.Fatal("no precompiled header built")
	}
	if again := buildHeader(ctx); again != dir {
		t.Errorf("the second build went to %s, not %s", again, dir)
	}
	entries, err := os.ReadDir(filepath.Dir(dir))
	if err != nil || len(entries) != 1 {
		t.Errorf("the cache directory holds %d entries, want the header's only (%v)", len(entries), err)
	}
	prog := filepath.Join(t.TempDir(), "main.cpp")
	if err := os.WriteFile(prog, []byte("#include \"loom_emu.h\"\nint main() { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, programFlags...), "-H", "-fsyntax-only", "-I", dir, prog)
	out, err := exec.Command("g++", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "! "+filepath.Join(dir, "loom_emu.h.gch")) {
		t.Errorf("g++ did not use the precompiled header:\n%s", out)
	}
}
