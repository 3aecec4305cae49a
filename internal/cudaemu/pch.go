package cudaemu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// programFlags are g++'s flags for a program of RunEach; the precompiled
// header is built with the same ones, or g++ would not use it.
var programFlags = []string{"-std=c++20", "-O1", "-pthread", "-w"}

// Parsing loom_emu.h and the standard headers it includes is about 1.2 s
// of each program's compile (the kernels themselves often take less), so
// RunEach includes it precompiled: built once per machine, header, g++ and
// flags, in loom's cache directory ($LOOM_CACHE_DIR, or loom/ under the
// user's cache directory), and shared by every process after it. g++
// checks a precompiled header against the compile that includes it and
// falls back to the header's text when they differ, so a stale one costs
// time, never correctness; one it cannot read (cut short by a crash) is
// an error, after which RunEach compiles with the header's text and
// removes it.
var (
	pchMu    sync.Mutex
	pchTried bool
	pchDir   string // holds loom_emu.h and loom_emu.h.gch; "" when unavailable
)

// headerDir returns a directory holding loom_emu.h with its precompiled
// form beside it, building it on first use; "" when it cannot (then the
// caller writes the header beside its program, as without one).
func headerDir(ctx context.Context) string {
	pchMu.Lock()
	defer pchMu.Unlock()
	if !pchTried {
		// Built for every later caller, whatever becomes of this one's
		// context.
		build, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		pchDir, pchTried = buildHeader(build), true
		cancel()
	}
	return pchDir
}

// forgetHeader removes the precompiled header in dir, which g++ could
// not use, so that no process uses it again (the next one builds it
// anew); this process goes on without one.
func forgetHeader(dir string) {
	pchMu.Lock()
	defer pchMu.Unlock()
	if pchDir == dir {
		pchDir = ""
	}
	os.RemoveAll(dir)
}

func buildHeader(ctx context.Context) string {
	version, err := exec.CommandContext(ctx, "g++", "--version").Output()
	if err != nil {
		return ""
	}
	base := os.Getenv("LOOM_CACHE_DIR")
	if base == "" {
		user, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(user, "loom")
	}
	key := sha256.New()
	for _, part := range append([][]byte{header, version}, []byte(strings.Join(programFlags, " "))) {
		key.Write(part)
		key.Write([]byte{0})
	}
	dir := filepath.Join(base, "cudaemu-"+hex.EncodeToString(key.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "loom_emu.h.gch")); err == nil {
		return dir
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return ""
	}
	// Built aside and renamed into place: another process building the
	// same one at the same time finds it whole or not at all.
	tmp, err := os.MkdirTemp(base, "cudaemu-building-")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "loom_emu.h"), header, 0o644); err != nil {
		return ""
	}
	args := append(append([]string{}, programFlags...), "-x", "c++-header", "-o", filepath.Join(tmp, "loom_emu.h.gch"), filepath.Join(tmp, "loom_emu.h"))
	if err := exec.CommandContext(ctx, "g++", args...).Run(); err != nil {
		return ""
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "loom_emu.h.gch")); statErr != nil {
			return ""
		}
	}
	return dir
}
