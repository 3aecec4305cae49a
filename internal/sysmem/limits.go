package sysmem

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// env is where the figures come from: the files under root (/proc, and
// the cgroup file systems where /proc/self/mountinfo says they are
// mounted) and the process's resource limits. Tests give it a directory
// of fake files and fake limits.
type env struct {
	root string
	// rlimit returns the soft limit of a resource, ok false for none
	// (unlimited, or unknown).
	rlimit func(r resource) (limit int64, ok bool)
}

// host is this process's environment.
var host = env{root: "/", rlimit: getrlimit}

// resource is a limit of setrlimit(2).
type resource int

const (
	addressSpace resource = iota // RLIMIT_AS, ulimit -v
	dataSegment                  // RLIMIT_DATA, ulimit -d
)

// bound is one bound on what the process can allocate: a limit, what it
// leaves (the limit less what is used), and its name for messages. The
// machine's MemAvailable is a bound without a limit.
type bound struct {
	name  string
	limit int64 // 0: the machine's available memory
	room  int64
}

// available returns the tightest bound: the one that leaves the least
// room (never less than 0); ok is false when there is none.
func (e env) available() (least bound, ok bool) {
	if n := e.meminfo("MemAvailable"); n > 0 {
		least, ok = bound{name: "this machine's available memory", room: n}, true
	}
	for _, b := range e.limits() {
		if !ok || b.room < least.room {
			least, ok = b, true
		}
	}
	least.room = max(least.room, 0)
	return least, ok
}

// total returns the least of the machine's memory and the process's
// limits, 0 when none can be told.
func (e env) total() int64 {
	t := e.meminfo("MemTotal")
	for _, b := range e.limits() {
		if t <= 0 || b.limit < t {
			t = b.limit
		}
	}
	return max(t, 0)
}

// limits returns the process's limits that are set: its address-space
// and data limits, less its virtual and data sizes; its memory cgroup's
// limit and those of the cgroups above it, less their use (the file
// cache they could drop, inactive_file, not counted as used).
func (e env) limits() []bound {
	var out []bound
	for _, l := range []struct {
		r      resource
		name   string
		status string // the field of /proc/self/status that counts against it
	}{
		{addressSpace, "its address-space limit (ulimit -v)", "VmSize"},
		{dataSegment, "its data limit (ulimit -d)", "VmData"},
	} {
		if limit, ok := e.rlimit(l.r); ok {
			used := e.procField("self/status", l.status)
			out = append(out, bound{name: l.name, limit: limit, room: limit - used})
		}
	}
	return append(out, e.cgroupLimits()...)
}

// cgroupLimits returns the memory limits of the process's cgroups, v2 and
// v1: the cgroup's own and each one's above it up to the root of the
// mount, which all apply.
func (e env) cgroupLimits() []bound {
	var out []bound
	for _, m := range e.cgroupMounts() {
		rel := "/"
		if strings.HasPrefix(m.path, m.root) {
			rel = "/" + strings.TrimPrefix(m.path, m.root)
		}
		for dir := path.Clean(rel); ; dir = path.Dir(dir) {
			full := filepath.Join(e.root, m.point, dir)
			limit, ok := readLimit(filepath.Join(full, m.maxFile))
			if ok {
				used, _ := readLimit(filepath.Join(full, m.usedFile))
				used -= statField(filepath.Join(full, "memory.stat"), m.inactive...)
				name := "its memory cgroup's limit (" + path.Join(m.point, dir, m.maxFile) + ")"
				out = append(out, bound{name: name, limit: limit, room: limit - max(used, 0)})
			}
			if dir == "/" || dir == "." {
				break
			}
		}
	}
	return out
}

// cgroupMount is where the memory controller of one cgroup hierarchy is
// mounted, and the process's cgroup in it.
type cgroupMount struct {
	point    string // the mount point, /sys/fs/cgroup
	root     string // the cgroup the mount shows at its point
	path     string // the process's cgroup
	maxFile  string // memory.max or memory.limit_in_bytes
	usedFile string // memory.current or memory.usage_in_bytes
	inactive []string
}

// cgroupMounts reads /proc/self/cgroup and /proc/self/mountinfo.
func (e env) cgroupMounts() []cgroupMount {
	paths := map[string]string{} // "v2" or "v1" → the process's cgroup
	for _, line := range e.lines("self/cgroup") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			paths["v2"] = parts[2]
		case hasWord(parts[1], "memory"):
			paths["v1"] = parts[2]
		}
	}
	var out []cgroupMount
	for _, line := range e.lines("self/mountinfo") {
		// id parent major:minor root point options... - type source super-options
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		root, point := unescape(f[3]), unescape(f[4])
		switch {
		case g[0] == "cgroup2" && paths["v2"] != "":
			out = append(out, cgroupMount{point: point, root: root, path: paths["v2"], maxFile: "memory.max", usedFile: "memory.current", inactive: []string{"inactive_file"}})
		case g[0] == "cgroup" && len(g) >= 3 && hasWord(g[2], "memory") && paths["v1"] != "":
			out = append(out, cgroupMount{point: point, root: root, path: paths["v1"], maxFile: "memory.limit_in_bytes", usedFile: "memory.usage_in_bytes", inactive: []string{"total_inactive_file", "inactive_file"}})
		}
	}
	return out
}

// unescape undoes mountinfo's octal escapes of spaces and the like.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hasWord reports whether the comma-separated list holds w.
func hasWord(list, w string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == w {
			return true
		}
	}
	return false
}

// noLimit: cgroup v1 writes "no limit" as the largest page count it
// holds, about 2^63.
const noLimit = 1 << 62

// readLimit reads a cgroup file holding one number of bytes; ok is false
// for "max", no limit, or a file that is not there.
func readLimit(file string) (int64, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil || n <= 0 || n >= noLimit {
		return 0, false
	}
	return n, true
}

// statField returns the first of keys found in a memory.stat file, 0 if
// none.
func statField(file string, keys ...string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	vals := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				vals[k] = n
			}
		}
	}
	for _, k := range keys {
		if n, ok := vals[k]; ok {
			return n
		}
	}
	return 0
}

// meminfo returns the field of /proc/meminfo in bytes, 0 if absent.
func (e env) meminfo(field string) int64 { return e.procField("meminfo", field) }

// procField returns a "Name: N kB" field of a /proc file in bytes, 0 if
// absent.
func (e env) procField(file, field string) int64 {
	for _, line := range e.lines(file) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// lines returns the lines of a file under /proc, none when it cannot be
// read.
func (e env) lines(file string) []string {
	f, err := os.Open(filepath.Join(e.root, "proc", file))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
