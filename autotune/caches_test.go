package autotune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-go/loom/internal/workload"
)

// TestReadCaches: the sysfs cache directories of a CPU give its data
// caches' sizes; instruction caches and unreadable entries are ignored.
func TestReadCaches(t *testing.T) {
	dir := t.TempDir()
	for i, c := range [][3]string{
		{"1", "Data", "48K"},
		{"1", "Instruction", "32K"},
		{"2", "Unified", "2048K"},
		{"3", "Unified", "105M"},
		{"4", "Unified", "junk"},
	} {
		d := filepath.Join(dir, "index"+string(rune('0'+i)))
		os.MkdirAll(d, 0o755)
		for name, v := range map[string]string{"level": c[0], "type": c[1], "size": c[2]} {
			os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644)
		}
	}
	want := Caches{L1D: 48 << 10, L2: 2 << 20, L3: 105 << 20}
	if got := readCaches(dir); got != want {
		t.Errorf("readCaches = %+v, want %+v", got, want)
	}
	if got := readCaches(filepath.Join(dir, "absent")); got != (Caches{}) {
		t.Errorf("no directory: %+v, want all unknown", got)
	}
	for s, want := range map[string]int64{"32K": 32 << 10, "1M": 1 << 20, "2G": 2 << 30, "512": 512, "": 0, "K": 0, "-4K": 0, "12Q": 0, "99999999999999G": 0} {
		if got := parseCacheSize(s); got != want {
			t.Errorf("parseCacheSize(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestTilesFollowCaches: the reduction steps and the cache tile Default
// takes follow the target's caches (the values of a Zen 4 core, a
// Sapphire Rapids core, an AVX2 core; unknown sizes as DefaultCaches),
// and a gemm's default schedule changes with them.
func TestTilesFollowCaches(t *testing.T) {
	for _, c := range []struct {
		name         string
		t            Target
		steps, tiles int64
	}{
		{"zen4", Target{VectorLanes: 16, Caches: Caches{L1D: 32 << 10, L2: 1 << 20}}, 256, 16},
		{"sapphire rapids", Target{VectorLanes: 16, Caches: Caches{L1D: 48 << 10, L2: 2 << 20}}, 256, 32},
		{"avx2", Target{VectorLanes: 8, Caches: Caches{L1D: 32 << 10, L2: 512 << 10}}, 512, 8},
		{"unknown", Target{VectorLanes: 16}, 256, 16},
		{"tiny", Target{VectorLanes: 16, Caches: Caches{L1D: 1 << 10, L2: 4 << 10}}, 16, 4},
	} {
		if got := c.t.reduceSteps(); got != c.steps {
			t.Errorf("%s: reduceSteps = %d, want %d", c.name, got, c.steps)
		}
		if got := c.t.cacheTileTiles(); got != c.tiles {
			t.Errorf("%s: cacheTileTiles = %d, want %d", c.name, got, c.tiles)
		}
	}
	gemm := workload.Matmul(1024, 1024, 1024).Func
	small, err := Default(gemm, Target{VectorLanes: 16, Threads: 1, Caches: Caches{L1D: 4 << 10, L2: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	large, err := Default(gemm, Target{VectorLanes: 16, Threads: 1, Caches: Caches{L1D: 32 << 10, L2: 2 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := small.Trace().String(), large.Trace().String(); a == b || !strings.Contains(a, "decision=") {
		t.Errorf("the default of gemm does not change with the caches:\n%s", a)
	}
}
