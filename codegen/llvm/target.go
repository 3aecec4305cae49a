package llvm

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Target is the machine a kernel is built for: an LLVM target triple, a CPU
// name as llc's -mcpu takes it, and extra features as its -mattr takes them
// ("+avx2,+fma,-avx512f").
//
// CPU "native" means the machine the build runs on: LLVM picks its CPU name
// and features. The zero Target is the host.
type Target struct {
	Triple   string
	CPU      string
	Features string
}

// Host returns the target of the machine the program runs on.
func Host() Target {
	return Target{Triple: hostTriple(), CPU: "native"}
}

func hostTriple() string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	switch runtime.GOOS {
	case "darwin":
		return arch + "-apple-macosx"
	case "linux":
		return arch + "-unknown-linux-gnu"
	}
	return arch + "-unknown-" + runtime.GOOS
}

// orHost returns t, or the host when t is the zero Target.
func (t Target) orHost() Target {
	if t == (Target{}) {
		return Host()
	}
	if t.Triple == "" {
		t.Triple = hostTriple()
	}
	return t
}

// Arch returns the architecture part of the triple ("x86_64").
func (t Target) Arch() string {
	arch, _, _ := strings.Cut(t.orHost().Triple, "-")
	return arch
}

// IsHost reports whether code for t runs on this machine.
func (t Target) IsHost() bool {
	t = t.orHost()
	return t.Triple == hostTriple() && (t.CPU == "native" || t.CPU == "")
}

// VectorBits returns the width in bits of the SIMD registers that
// vectorized loops use on t: 512 with AVX-512, 256 with AVX or AVX2, 128
// with SSE or NEON.
func (t Target) VectorBits() int {
	switch t.Arch() {
	case "x86_64", "i386", "i686":
		switch {
		case t.Has("avx512f"):
			return 512
		case t.Has("avx") || t.Has("avx2"):
			return 256
		}
		return 128
	}
	return 128
}

// Has reports whether t has CPU feature f (as /proc/cpuinfo and llc's
// -mattr name them: "avx2", "avx512f"). It is read from the features
// that t names, from the CPU name when it is a known one, and for
// "native" from the host's CPU flags.
func (t Target) Has(f string) bool {
	t = t.orHost()
	if on, set := featureSet(t.Features)[f]; set {
		return on
	}
	if t.CPU == "native" {
		return hostFeatures()[f]
	}
	return slices.Contains(cpuFeatures[t.CPU], f)
}

// featureSet parses an -mattr list into feature -> enabled.
func featureSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case strings.HasPrefix(f, "+"):
			set[f[1:]] = true
		case strings.HasPrefix(f, "-"):
			set[f[1:]] = false
		case f != "":
			set[f] = true
		}
	}
	return set
}

// cpuFeatures lists the vector features of the x86-64 CPU names whose
// vector width is worth knowing without asking LLVM.
var cpuFeatures = map[string][]string{
	"x86-64-v2":      {},
	"x86-64-v3":      {"avx", "avx2", "fma"},
	"x86-64-v4":      {"avx", "avx2", "fma", "avx512f", "avx512dq", "avx512vl"},
	"haswell":        {"avx", "avx2", "fma"},
	"broadwell":      {"avx", "avx2", "fma"},
	"skylake":        {"avx", "avx2", "fma"},
	"alderlake":      {"avx", "avx2", "fma"},
	"znver1":         {"avx", "avx2", "fma"},
	"znver2":         {"avx", "avx2", "fma"},
	"znver3":         {"avx", "avx2", "fma"},
	"znver4":         {"avx", "avx2", "fma", "avx512f", "avx512dq", "avx512vl"},
	"skylake-avx512": {"avx", "avx2", "fma", "avx512f", "avx512dq", "avx512vl"},
	"cascadelake":    {"avx", "avx2", "fma", "avx512f", "avx512dq", "avx512vl"},
	"icelake-server": {"avx", "avx2", "fma", "avx512f", "avx512dq", "avx512vl"},
	"sapphirerapids": {"avx", "avx2", "fma", "avx512f", "avx512dq", "avx512vl"},
}

// hostFeatures reads the CPU flags of this machine (Linux only; elsewhere
// none, which means the baseline width), once.
var hostFeatures = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return set
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.TrimSpace(key)
		if key != "flags" && key != "Features" {
			continue
		}
		for _, f := range strings.Fields(val) {
			set[f] = true
		}
		break
	}
	if set["asimd"] {
		set["neon"] = true
	}
	return set
})
