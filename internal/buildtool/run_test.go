package buildtool

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunCompilerError: a C file that does not compile gives one line
// naming the compiler, its first error (file, line and message) and the
// log, which holds the whole output and the command line.
func TestRunCompilerError(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no cc")
	}
	dir := t.TempDir()
	src := "#include <stdint.h>\nint int64_t(void);\nint f(void) { return g(1) + ; }\nint h(void) { return undefined_name; }\n"
	if err := os.WriteFile(filepath.Join(dir, "bad.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Run(dir, "cc", "-std=c11", "-c", "bad.c", "-o", "bad.o")
	var be *Error
	if !errors.As(err, &be) {
		t.Fatalf("%v, want an *Error", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "cc failed (exit status 1): bad.c:2:") || !strings.Contains(msg, "error") {
		t.Errorf("message %q: want one line with cc's first error, at bad.c:2", msg)
	}
	if be.Log != filepath.Join(dir, "loom-cc.log") || !strings.HasSuffix(msg, "(the whole output: "+be.Log+")") {
		t.Errorf("log %q in %q", be.Log, msg)
	}
	log, err := os.ReadFile(be.Log)
	if err != nil || !strings.Contains(string(log), "cc -std=c11 -c bad.c") || !strings.Contains(string(log), "undefined_name") {
		t.Errorf("the log %v:\n%s", err, log)
	}
	if err := Run(dir, "cc", "-std=c11", "-c", "-x", "c", "/dev/null", "-o", "ok.o"); err != nil {
		t.Errorf("a good build: %v", err)
	}
}

// TestFirstError: the first line that says error, cut; else the first
// line.
func TestFirstError(t *testing.T) {
	for out, want := range map[string]string{
		"In file included from x.c:2:\nx.h:3:1: error: bad\nx.h:4:1: error: worse\n": "x.h:3:1: error: bad",
		"\n  warning: w\n": "warning: w",
		"x.o: in function `f':\nx.c:(.text+0x5): undefined reference to `g'\n": "x.c:(.text+0x5): undefined reference to `g'",
		"": "",
		"x.c:1: error: " + strings.Repeat("n", 1000): "x.c:1: error: " + strings.Repeat("n", maxFirst-len("x.c:1: error: ")) + "...",
	} {
		if got := firstError([]byte(out)); got != want {
			t.Errorf("firstError(%.40q) = %.80q, want %.80q", out, got, want)
		}
	}
}
