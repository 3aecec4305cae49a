package autotune

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Caches are the sizes in bytes of a CPU core's data caches, as Default
// sizes its tiles by them: L1D and L2 are one core's, L3 the whole
// last-level cache the core shares. A size of 0 is unknown: the tiles
// then assume DefaultCaches's.
type Caches struct {
	L1D, L2, L3 int64
}

// DefaultCaches are the sizes assumed where the machine does not say
// (and for a Target built without them): a 32 KiB L1D, a 1 MiB L2 and a
// 32 MiB L3, a recent x86-64 server core's.
var DefaultCaches = Caches{L1D: 32 << 10, L2: 1 << 20, L3: 32 << 20}

// orDefault returns c with each unknown size replaced by DefaultCaches's.
func (c Caches) orDefault() Caches {
	if c.L1D <= 0 {
		c.L1D = DefaultCaches.L1D
	}
	if c.L2 <= 0 {
		c.L2 = DefaultCaches.L2
	}
	if c.L3 <= 0 {
		c.L3 = DefaultCaches.L3
	}
	return c
}

var (
	hostCachesOnce sync.Once
	hostCachesSeen Caches
)

// HostCaches returns this machine's cache sizes, read once from Linux's
// sysfs (/sys/devices/system/cpu/cpu0/cache), each one the machine does
// not report left 0.
func HostCaches() Caches {
	hostCachesOnce.Do(func() {
		hostCachesSeen = readCaches("/sys/devices/system/cpu/cpu0/cache")
	})
	return hostCachesSeen
}

// readCaches reads the caches of one CPU from dir, a sysfs cache
// directory: one indexN directory per cache, each with its level, type
// (Data, Instruction or Unified) and size ("48K", "2048K", "1M").
func readCaches(dir string) Caches {
	var c Caches
	entries, _ := filepath.Glob(filepath.Join(dir, "index*"))
	for _, e := range entries {
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(e, name))
			return strings.TrimSpace(string(b))
		}
		if read("type") == "Instruction" {
			continue
		}
		size := parseCacheSize(read("size"))
		switch read("level") {
		case "1":
			c.L1D = size
		case "2":
			c.L2 = size
		case "3":
			c.L3 = size
		}
	}
	return c
}

// parseCacheSize parses a sysfs cache size: a count of bytes with an
// optional K, M or G suffix (binary). It returns 0 for anything else.
func parseCacheSize(s string) int64 {
	scale := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		scale, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		scale, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		scale, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > 1<<40/scale {
		return 0
	}
	return n * scale
}

// reduceSteps is how many steps of a reduction Default lets a register
// tile accumulate before its accumulators go back to memory (the
// innermost reduce factor; GotoBLAS's KC): as many as keep the slice of
// the right-hand operand the tile reads on its way, a row of two vectors
// a step, within the L1D (so that the next register tile of the same
// columns finds it there), a power of two between 16 and 1024.
func (t Target) reduceSteps() int64 {
	row := 2 * int64(max(t.VectorLanes, 1)) * 4
	return powerOfTwoIn(t.Caches.orDefault().L1D/row, 16, 1024)
}

// cacheTileTiles is how many register tiles Default puts in a cache tile
// (the levels of the spatial loops between the outermost and the
// register tile): as many as keep the operand panel they read through
// reduceSteps steps within half the L2, a power of two between 4 and 64.
func (t Target) cacheTileTiles() int64 {
	row := 2 * int64(max(t.VectorLanes, 1)) * 4
	return powerOfTwoIn(t.Caches.orDefault().L2/2/(t.reduceSteps()*row), 4, 64)
}

// powerOfTwoIn returns the largest power of two at most n, clamped to
// [lo, hi] (powers of two).
func powerOfTwoIn(n, lo, hi int64) int64 {
	p := lo
	for p*2 <= n && p*2 <= hi {
		p *= 2
	}
	return p
}
