package native

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// Cache builds kernels and keeps them: loaded kernels in memory, keyed by
// the function's structural hash and the lowering options, and shared
// objects on disk under Dir, keyed by a hash of the LLVM IR, the target and
// the toolchain. A kernel is never built twice, by this process or another:
// files appear under their final name only once complete (written aside and
// renamed), so processes sharing Dir never see half a file.
type Cache struct {
	Dir       string
	Toolchain *Toolchain

	mu  sync.Mutex
	mem map[string]*Kernel
}

var (
	defaultOnce  sync.Once
	defaultCache *Cache
	defaultErr   error
)

// DefaultCacheDir is the directory of DefaultCache: $LOOM_CACHE_DIR, or
// loom in the user's cache directory. Programs that keep files beside
// the kernels (the tuning database) without building any use it.
func DefaultCacheDir() string {
	if dir := os.Getenv("LOOM_CACHE_DIR"); dir != "" {
		return dir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "loom")
}

// DefaultCache returns the process's cache, in $LOOM_CACHE_DIR or else
// loom/ under the user's cache directory.
func DefaultCache() (*Cache, error) {
	defaultOnce.Do(func() {
		defaultCache, defaultErr = NewCache(DefaultCacheDir())
	})
	return defaultCache, defaultErr
}

// NewCache returns a cache in dir, creating it.
func NewCache(dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("codegen/llvm/native: cache directory: %w", err)
	}
	tc, err := FindToolchain()
	if err != nil {
		return nil, err
	}
	return &Cache{Dir: dir, Toolchain: tc, mem: map[string]*Kernel{}}, nil
}

// inProcess, when set (by building with -tags loomcapi), compiles IR to an
// object file with LLVM's C API in this process instead of opt and llc.
var inProcess func(m *llvm.Module, path string) error

// buildRecipe names how a shared object is made from IR; change it when
// the flags of opt, llc or the linker change, so that stale objects are not
// reused.
const buildRecipe = "opt -O3 | llc -O3 pic | ld -shared -Bsymbolic (2)"

// Compile lowers f with opts and builds and loads it, through the default
// cache.
func Compile(f *ast.Func, opts llvm.Options) (*Kernel, error) {
	c, err := DefaultCache()
	if err != nil {
		return nil, err
	}
	return c.Compile(f, opts)
}

// Compile returns the kernel of f lowered with opts, from memory, from disk,
// or built now.
func (c *Cache) Compile(f *ast.Func, opts llvm.Options) (*Kernel, error) {
	key := fmt.Sprintf("%x|%+v", ast.Hash(f), opts)
	c.mu.Lock()
	k := c.mem[key]
	c.mu.Unlock()
	if k != nil {
		return k.newHandle(), nil
	}
	if k = c.fromIndex(f, opts); k == nil {
		start := time.Now()
		m, err := llvm.Lower(f, opts)
		if err != nil {
			return nil, err
		}
		lower := time.Since(start)
		if k, err = c.Build(m); err != nil {
			return nil, err
		}
		k.Stats.Lower = lower
		c.index(f, opts, k)
	}
	// The cache's memory keeps a handle of its own (not counted), which
	// no caller closes: the object leaves when the last of the callers'
	// handles closes. A kernel another Compile put there meanwhile wins.
	c.mu.Lock()
	if kept := c.mem[key]; kept != nil {
		c.mu.Unlock()
		k.Close()
		return kept.newHandle(), nil
	}
	k.obj.cache, k.obj.key = c, key
	c.mem[key] = &Kernel{Module: k.Module, Path: k.Path, Stats: k.Stats, fn: k.fn, opts: k.opts, symbol: k.symbol, entry: k.entry, obj: k.obj}
	c.mu.Unlock()
	return k, nil
}

// BuildFile builds (or finds on disk) the shared object of a lowered
// module without loading it, and returns its path: a tuner builds
// candidates this way and runs them in another process, where Build
// finds the same file.
func (c *Cache) BuildFile(m *llvm.Module) (string, Stats, error) {
	rtPath, _, err := loadRuntime(c.Dir)
	if err != nil {
		return "", Stats{}, err
	}
	ir := m.String()
	t := m.Options.Target
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%q\x00%s\x00%s\x00%d\x00", ir, buildArgs(m), hostKey(t.CPU), c.Toolchain.fingerprint(), runtimeVersion)
	fmt.Fprintf(h, "%s\x00%s\x00%v", rtPath, buildRecipe, inProcess != nil)
	key := hex.EncodeToString(h.Sum(nil))
	dir := filepath.Join(c.Dir, "kernels", key[:2])
	path := filepath.Join(dir, key+".so")
	var stats Stats
	if _, err := os.Stat(path); err == nil {
		stats.Cached = true
		return path, stats, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", stats, err
	}
	if err := c.buildFile(m, ir, rtPath, path, &stats); err != nil {
		return "", stats, err
	}
	return path, stats, nil
}

// Build builds (or finds on disk) the shared object of a lowered module
// and loads it.
func (c *Cache) Build(m *llvm.Module) (*Kernel, error) {
	path, stats, err := c.BuildFile(m)
	if err != nil {
		return nil, err
	}
	k := &Kernel{Module: m, Path: path, Stats: stats, fn: m.Func, opts: m.Options, symbol: m.PackedSymbol()}
	start := time.Now()
	if err := k.load(); err != nil {
		return nil, err
	}
	k.Stats.Load = time.Since(start)
	return k, nil
}

// buildFile compiles and links ir into path.
func (c *Cache) buildFile(m *llvm.Module, ir, rt, path string, st *Stats) error {
	timeout := c.Toolchain.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	obj, err := tempName(strings.TrimSuffix(path, ".so") + ".o")
	if err != nil {
		return err
	}
	defer os.Remove(obj)
	start := time.Now()
	if inProcess != nil && !m.DisableLSR { // llc's options hold for a whole process there
		if err := inProcess(m, obj); err != nil {
			return err
		}
	} else if err := c.Toolchain.build(ctx, c.Dir, ir, buildArgs(m), obj); err != nil {
		return err
	}
	st.Compile = time.Since(start)
	tmp, err := tempName(path)
	if err != nil {
		return err
	}
	start = time.Now()
	if err := c.Toolchain.link(ctx, obj, rt, tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	st.Link = time.Since(start)
	return os.Rename(tmp, path)
}

// tempName returns a fresh name beside path for a file to be renamed to
// path when complete.
func tempName(path string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s.tmp-%d-%x", path, os.Getpid(), b), nil
}

// writeAtomic writes data to path through a temporary file and a rename.
func writeAtomic(path string, data []byte) error {
	tmp, err := tempName(path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// hostKey identifies this machine's CPU when the target CPU is "native".
func hostKey(cpu string) string {
	if cpu != "native" {
		return ""
	}
	model, flags := hostCPU()
	sum := sha256.Sum256([]byte(runtime.GOARCH + "|" + model + "|" + flags))
	return hex.EncodeToString(sum[:8])
}

// HostCPU returns this machine's CPU model as /proc/cpuinfo names it,
// with its family and model numbers where it gives them ("AMD EPYC,
// family 26 model 2"): virtual machines often name only the brand, and
// two generations behind one name differ in speed. "" where it cannot be
// read.
func HostCPU() string {
	info := cpuinfo()
	model := info["model name"]
	if model == "" {
		model = info["CPU part"]
	}
	if model != "" && info["cpu family"] != "" && info["model"] != "" {
		model += ", family " + info["cpu family"] + " model " + info["model"]
	}
	return model
}

// HostCPUFlags returns this machine's CPU feature flags as
// /proc/cpuinfo lists them ("flags", or "Features" on ARM), "" where it
// cannot be read.
func HostCPUFlags() string {
	_, flags := hostCPU()
	return flags
}

// hostCPU returns the model name and the feature flags of the first CPU
// in /proc/cpuinfo.
func hostCPU() (model, flags string) {
	info := cpuinfo()
	model, flags = info["model name"], info["flags"]
	if model == "" {
		model = info["CPU part"]
	}
	if flags == "" {
		flags = info["Features"]
	}
	return model, flags
}

// cpuinfo returns the fields of the first CPU in /proc/cpuinfo (each
// field's first value), empty where it cannot be read.
func cpuinfo() map[string]string {
	out := map[string]string{}
	data, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if k = strings.TrimSpace(k); ok && k != "" {
			if _, seen := out[k]; !seen {
				out[k] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// WriteObject compiles m into an object file at path, for linking ahead of
// time into a C or C++ program with m.Header() and loom's runtime
// (RuntimeSource).
func WriteObject(m *llvm.Module, path string) error {
	return writeObject(m, m.String(), path)
}

// WriteObjectAs is WriteObject with m's entry points named symbol and
// symbol_packed in the object (m.Symbol and m.PackedSymbol() in m), so
// that a kernel already lowered for running in process is linked into a
// library under the name the library gives it without lowering it again.
// symbol must pass llvm.CheckSymbol.
func WriteObjectAs(m *llvm.Module, symbol, path string) error {
	if err := llvm.CheckSymbol(symbol); err != nil {
		return err
	}
	ir := m.String()
	if symbol != m.Symbol {
		entry, packed := "@"+m.Symbol+"(", "@"+m.PackedSymbol()+"("
		if strings.Count(ir, "define i32 "+entry) != 1 || strings.Count(ir, "define i32 "+packed) != 1 {
			return fmt.Errorf("codegen/llvm/native: kernel %s: its entry points are not where WriteObjectAs renames them", m.Symbol)
		}
		// In one pass: symbol may be the old packed name.
		ir = strings.NewReplacer(entry, "@"+symbol+"(", packed, "@"+symbol+"_packed(").Replace(ir)
	}
	return writeObject(m, ir, path)
}

func writeObject(m *llvm.Module, ir, path string) error {
	tc, err := FindToolchain()
	if err != nil {
		return err
	}
	timeout := tc.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return tc.compile(ctx, ir, buildArgs(m), path)
}
