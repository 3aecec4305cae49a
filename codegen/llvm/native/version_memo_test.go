package native

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKnownLLVMVersion: the version of a pair of programs is asked once
// and then read from the cache directory; a program changed since (its
// size) is asked again, and an error is never remembered.
func TestKnownLLVMVersion(t *testing.T) {
	t.Setenv("LOOM_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	fake := func(tool, version string) string {
		t.Helper()
		path := filepath.Join(dir, tool)
		script := "#!/bin/sh\necho " + tool + " >> " + calls + "\necho '  LLVM version " + version + "'\n"
		if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	asked := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "\n")
	}
	opt, llc := fake("opt", "16.0.6"), fake("llc", "16.0.6")
	for i := 0; i < 3; i++ {
		if v, err := knownLLVMVersion(opt, llc); err != nil || v != 16 {
			t.Fatalf("call %d: %d, %v; want 16", i, v, err)
		}
	}
	if n := asked(); n != 2 {
		t.Errorf("three lookups ran opt and llc %d times together, want 2 (once each)", n)
	}
	fake("llc", "17.0.6 (another build)")
	if _, err := knownLLVMVersion(opt, llc); err == nil || !strings.Contains(err.Error(), "is LLVM 16 but") {
		t.Errorf("llc replaced by LLVM 17: %v, want the mismatch", err)
	}
	if _, err := knownLLVMVersion(opt, llc); err == nil {
		t.Error("the mismatch was remembered as a version")
	}
	if n := asked(); n != 6 {
		t.Errorf("after llc changed, opt and llc ran %d times in all, want 6 (both asked again on each failing lookup)", n)
	}
}
