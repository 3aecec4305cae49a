package native

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/codegen/llvm"
)

// The index finds a function's shared object without lowering it. The
// shared objects are keyed by their LLVM IR, which takes lowering to know:
// a tenth of a second to seconds a kernel, which a model's hundred
// kernels pay at every start of a program. The index maps what decides
// that IR (the function's structural hash, the lowering options, the
// program that lowers it: its executable's path, size and time, so a
// rebuilt loom never trusts entries of another) and what decides the
// object (host, toolchain, runtime, recipe) to the object and its entry
// point. An entry is written aside and renamed, after the object exists;
// one that does not load is ignored and written again.

// indexEntry is one file of the index.
type indexEntry struct {
	Object string `json:"object"`
	Symbol string `json:"symbol"` // the packed entry point
}

// ProgramKey identifies the running executable, its path, size and
// modification time, so that a rebuilt program has another ("" when it
// cannot be known: then nothing is indexed).
var ProgramKey = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s\x00%d\x00%d", exe, fi.Size(), fi.ModTime().UnixNano())
})

// indexFile returns the index file of f lowered with opts.
func (c *Cache) indexFile(f *ast.Func, opts llvm.Options) (string, bool) {
	prog := ProgramKey()
	if prog == "" {
		return "", false
	}
	rtPath, _, err := loadRuntime(c.Dir)
	if err != nil {
		return "", false
	}
	// The target as Lower takes it: none means this machine's, whose CPU
	// then keys the entry (a cache directory shared with another machine
	// must not load this one's code there).
	t := opts.Target
	if t == (llvm.Target{}) {
		t = llvm.Host()
	}
	h := sha256.New()
	fmt.Fprintf(h, "%x\x00%+v\x00%s\x00%s\x00%s\x00%d\x00%s\x00%v\x00%s", ast.Hash(f), opts, prog,
		hostKey(t.CPU), c.Toolchain.fingerprint(), runtimeVersion, buildRecipe, inProcess != nil, rtPath)
	key := hex.EncodeToString(h.Sum(nil))
	return filepath.Join(c.Dir, "index", key[:2], key+".json"), true
}

// fromIndex loads f's kernel through the index; nil when it has none
// that loads.
func (c *Cache) fromIndex(f *ast.Func, opts llvm.Options) *Kernel {
	file, ok := c.indexFile(f, opts)
	if !ok {
		return nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var e indexEntry
	if json.Unmarshal(data, &e) != nil || e.Object == "" || e.Symbol == "" {
		return nil
	}
	k := &Kernel{Path: e.Object, Stats: Stats{Cached: true, Indexed: true}, fn: f, opts: opts, symbol: e.Symbol}
	start := time.Now()
	if k.load() != nil {
		return nil
	}
	k.Stats.Load = time.Since(start)
	return k
}

// index records k, built from f and opts (best effort: a missing entry
// only costs the next program a lowering).
func (c *Cache) index(f *ast.Func, opts llvm.Options, k *Kernel) {
	file, ok := c.indexFile(f, opts)
	if !ok {
		return
	}
	data, err := json.Marshal(indexEntry{Object: k.Path, Symbol: k.symbol})
	if err != nil || os.MkdirAll(filepath.Dir(file), 0o755) != nil {
		return
	}
	writeAtomic(file, data)
}
