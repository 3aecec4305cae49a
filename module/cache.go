package module

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"unsafe"

	"github.com/loom-go/loom/ast"
	"github.com/loom-go/loom/autotune"
	"github.com/loom-go/loom/codegen/llvm/native"
	"github.com/loom-go/loom/fusion"
)

// The compile cache. A compiled module is kept in memory, and its
// kernels' schedules on disk, keyed by what decides them:
//
//   - in memory, by the graph (its text and every constant's values), the
//     target and thread count, the tuning database's state (its path and
//     size: it only grows) and the kernel cache's directory: compiling the
//     same graph again returns the same Module (safe for concurrent use)
//     at the cost of a hash;
//   - on disk (modules/ under the kernel cache's directory), by the same
//     and the structural hash of every fused kernel, so that another
//     process, or a loom whose fusion lowers the graph differently, never
//     picks up schedules of other kernels: a hit skips deciding the
//     schedules (the expensive step: the default's rules and their
//     validation), and the kernels' shared objects come from the kernel
//     cache.
//
// Files are written aside and renamed into place; a file that does not
// parse, or whose functions' hashes differ from the record, is ignored.

// cacheVersion changes when the file format or what the key covers does,
// and when the schedules loom decides change what they compute (4: the
// write-back of an rfactor and a decomposed init run for a reduction over
// an empty axis, issue 45). The build of loom is in the key too
// (loomVersion).
const cacheVersion = "loom module cache 4"

// loomVersion is the version of the loom module this program was built
// with: a released one, the commit Go stamped into a build of loom's own
// tree, or, for a build that names neither (loom's tree built with
// -buildvcs=false or with uncommitted changes, a program whose go.mod
// replaces loom by a directory), the program file itself
// (native.ProgramKey: a rebuilt program is another), so that a cache
// written by one build of loom is not read by another whose schedules
// differ.
var loomVersion = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	const path = "github.com/loom-go/loom"
	if info.Main.Path == path {
		if v := info.Main.Version; v != "" && v != "(devel)" && !strings.HasSuffix(v, "+dirty") {
			return v
		}
		return "build " + native.ProgramKey()
	}
	for _, d := range info.Deps {
		if d.Path == path {
			if d.Replace != nil {
				if d.Replace.Version == "" { // a directory: its contents have no version
					return "build " + native.ProgramKey()
				}
				return d.Replace.Path + " " + d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
})

// memoryCache holds the graphs compiled in this process (while a handle
// on them is open), by graphKey.
var memoryCache = struct {
	sync.Mutex
	m map[string]*compiled
}{m: map[string]*compiled{}}

// graphKey is the memory cache's key for g compiled with these options.
func graphKey(g *fusion.Graph, threads int, target, layout string, plainWeights bool, cacheDir, db string, bounds *autotune.SizeBounds) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n%s\nthreads %d\ntarget %s\nlayout %q\nplain weights %v\ncache %s\ndatabase %s\n", cacheVersion, loomVersion(), g, threads, target, layout, plainWeights, cacheDir, db)
	if bounds != nil {
		// fmt prints a map's keys sorted
		fmt.Fprintf(h, "bounds %v %v\n", bounds.Min, bounds.Max)
	}
	for _, c := range g.Constants {
		fmt.Fprintf(h, "constant %s %d:", c.Name, len(c.Data))
		if len(c.Data) > 0 {
			// The elements' bits in one write (a model's weights are
			// hundreds of millions of them); the machine's byte order is
			// the cache's, which lives on this machine.
			h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&c.Data[0])), 8*len(c.Data)))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// databaseState names the database's contents: records are only ever
// appended, so its size says whether any were.
func databaseState(path string) string {
	if path == "" {
		return "none"
	}
	st, err := os.Stat(path)
	if err != nil {
		return path + " (absent)"
	}
	return fmt.Sprintf("%s %d bytes", path, st.Size())
}

// cachedModule returns a new handle on the graph compiled under key, or
// nil.
func cachedModule(key string) *Module {
	memoryCache.Lock()
	defer memoryCache.Unlock()
	c := memoryCache.m[key]
	if c == nil {
		return nil
	}
	c.refs++
	return &Module{compiled: c}
}

func keepModule(key string, m *Module) {
	memoryCache.Lock()
	defer memoryCache.Unlock()
	if _, kept := memoryCache.m[key]; kept {
		return // another Compile of the same graph finished first
	}
	m.key = key
	memoryCache.m[key] = m.compiled
}

// savedSchedules is the disk record of a module's schedules.
type savedSchedules struct {
	Version string
	Kernels []savedKernel
}

type savedKernel struct {
	Name     string
	Hash     string // the fused (unscheduled) kernel's structural hash
	Schedule string // "record", "default" or "view"
	Func     string // the scheduled function in loom's text form
	FuncHash string // its structural hash, checked after parsing
	// Buckets are its schedules for buckets of its sizes.
	Buckets []savedBucket `json:",omitempty"`
}

// savedBucket is a kernel's schedule for a bucket of its sizes.
type savedBucket struct {
	Bucket   map[string][2]int64
	Func     string
	FuncHash string
}

// diskKey is the disk cache's file for plan under graph key key.
func diskKey(dir, key string, plan *fusion.Plan) string {
	h := sha256.New()
	h.Write([]byte(key))
	for _, k := range plan.Kernels {
		fmt.Fprintf(h, "\n%s %s", k.Name, ast.Hash(k.Func))
	}
	return filepath.Join(dir, "modules", hex.EncodeToString(h.Sum(nil))[:32]+".json")
}

// loadSchedules returns the scheduled function of each of plan's kernels
// from file, or nil when the file is missing or does not match.
func loadSchedules(file string, plan *fusion.Plan) ([]*ast.Func, []string, [][]autotune.BucketChoice) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, nil
	}
	var s savedSchedules
	if json.Unmarshal(data, &s) != nil || s.Version != cacheVersion || len(s.Kernels) != len(plan.Kernels) {
		return nil, nil, nil
	}
	funcs, from := make([]*ast.Func, len(s.Kernels)), make([]string, len(s.Kernels))
	buckets := make([][]autotune.BucketChoice, len(s.Kernels))
	for i, sk := range s.Kernels {
		k := plan.Kernels[i]
		if sk.Name != k.Name || sk.Hash != ast.Hash(k.Func).String() {
			return nil, nil, nil
		}
		f, err := ast.Parse(sk.Func)
		if err != nil || ast.Hash(f).String() != sk.FuncHash {
			return nil, nil, nil
		}
		funcs[i], from[i] = f, sk.Schedule
		for _, sb := range sk.Buckets {
			bf, err := ast.Parse(sb.Func)
			if err != nil || ast.Hash(bf).String() != sb.FuncHash {
				return nil, nil, nil
			}
			buckets[i] = append(buckets[i], autotune.BucketChoice{Bucket: sb.Bucket, Func: bf})
		}
	}
	return funcs, from, buckets
}

// saveSchedules writes the module's schedules to file (best effort: a
// cache that cannot be written only costs the next compile its time).
func saveSchedules(file string, m *Module) {
	s := savedSchedules{Version: cacheVersion}
	for _, k := range m.kernels {
		sk := savedKernel{
			Name: k.k.Name, Hash: ast.Hash(k.k.Func).String(), Schedule: k.Schedule,
			Func: ast.Print(k.f), FuncHash: ast.Hash(k.f).String(),
		}
		for _, v := range k.variants {
			sk.Buckets = append(sk.Buckets, savedBucket{Bucket: v.bucket, Func: ast.Print(v.f), FuncHash: ast.Hash(v.f).String()})
		}
		s.Kernels = append(s.Kernels, sk)
	}
	data, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(file), 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), file) != nil {
		os.Remove(tmp.Name())
	}
}
