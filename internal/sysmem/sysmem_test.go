package sysmem

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 30: "3.0 GiB", 1536 << 20: "1.5 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	if Total() == 0 {
		t.Skip("no /proc/meminfo")
	}
	if avail, ok := Available(); !ok || avail <= 0 || avail > Total() {
		t.Errorf("available %d (%v) of total %d", avail, ok, Total())
	}
	if err := Check("a small job", 1<<20); err != nil {
		t.Errorf("1 MiB: %v", err)
	}
	err := Check("a huge job", 1<<62)
	if err == nil || !strings.Contains(err.Error(), "a huge job needs 4.0 EiB of memory") {
		t.Errorf("4 EiB: %v", err)
	}
}

// fakeEnv writes files under a temporary root (paths relative to it) and
// returns the environment that reads them, with the given resource limits.
func fakeEnv(t *testing.T, files map[string]string, limits map[resource]int64) env {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return env{root: root, rlimit: func(r resource) (int64, bool) {
		n, ok := limits[r]
		return n, ok
	}}
}

const (
	gib     = 1 << 30
	meminfo = "MemTotal:       33554432 kB\nMemFree:  1000 kB\nMemAvailable:   16777216 kB\n" // 32 GiB, 16 available
	status  = "Name:\tloom\nVmSize:\t  1048576 kB\nVmData:\t   524288 kB\n"                   // 1 GiB, 512 MiB
)

// TestLimits: the memory available is the least of the machine's and of
// the process's own limits (ulimit -v and -d less its sizes, each
// cgroup's limit less its use without the file cache it can drop, v2 and
// v1, the cgroups above the process's included); the total, the least of
// the limits and the machine's memory; the error names the limit.
func TestLimits(t *testing.T) {
	v2 := map[string]string{
		"proc/meminfo":     meminfo,
		"proc/self/status": status,
		"proc/self/cgroup": "0::/user.slice/job\n",
		"proc/self/mountinfo": "22 1 0:20 / /proc rw - proc proc rw\n" +
			"30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
		"sys/fs/cgroup/user.slice/memory.max":         "8589934592\n", // 8 GiB
		"sys/fs/cgroup/user.slice/memory.current":     "1073741824\n", // 1 GiB
		"sys/fs/cgroup/user.slice/job/memory.max":     "max\n",
		"sys/fs/cgroup/user.slice/job/memory.current": "6442450944\n",                       // 6 GiB,
		"sys/fs/cgroup/user.slice/job/memory.stat":    "anon 1\ninactive_file 2147483648\n", // 2 of them cache
	}
	v1 := map[string]string{
		"proc/meminfo":     meminfo,
		"proc/self/status": status,
		"proc/self/cgroup": "5:devices:/\n4:memory:/docker/abc\n0::/\n",
		// The container sees its own cgroup at the mount point.
		"proc/self/mountinfo":                                  "35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
		"sys/fs/cgroup/memory/memory.limit_in_bytes":           "3221225472\n", // 3 GiB
		"sys/fs/cgroup/memory/memory.usage_in_bytes":           "2147483648\n",
		"sys/fs/cgroup/memory/memory.stat":                     "cache 5\ntotal_inactive_file 536870912\n", // 512 MiB of it cache
		"sys/fs/cgroup/memory/unrelated/memory.limit_in_bytes": "1\n",
	}
	unlimitedV1 := map[string]string{
		"proc/meminfo":        meminfo,
		"proc/self/cgroup":    "4:memory:/\n",
		"proc/self/mountinfo": "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
		"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		"sys/fs/cgroup/memory/memory.usage_in_bytes": "2147483648\n",
	}
	for _, c := range []struct {
		name   string
		files  map[string]string
		limits map[resource]int64
		avail  int64
		total  int64
		says   string // in Check's error
	}{
		{"machine", map[string]string{"proc/meminfo": meminfo}, nil, 16 * gib, 32 * gib, "this machine has 16.0 GiB available"},
		{"ulimit -v", map[string]string{"proc/meminfo": meminfo, "proc/self/status": status}, map[resource]int64{addressSpace: 4 * gib}, 3 * gib, 4 * gib, "this process has 3.0 GiB available under its address-space limit (ulimit -v) of 4.0 GiB"},
		{"ulimit -d", map[string]string{"proc/meminfo": meminfo, "proc/self/status": status}, map[resource]int64{addressSpace: 40 * gib, dataSegment: 2 * gib}, 1536 << 20, 2 * gib, "under its data limit (ulimit -d) of 2.0 GiB"},
		{"over the limit", map[string]string{"proc/meminfo": meminfo, "proc/self/status": status}, map[resource]int64{addressSpace: gib / 2}, 0, gib / 2, "has 0 B available"},
		// The job's cgroup has no limit; the slice above it 8 GiB, of
		// which it uses 1: 7 GiB left. The job's own 6 GiB (4 without
		// its cache) are counted in the slice's.
		{"cgroup v2", v2, nil, 7 * gib, 8 * gib, "its memory cgroup's limit (/sys/fs/cgroup/user.slice/memory.max) of 8.0 GiB"},
		{"cgroup v2 and ulimit -v", v2, map[resource]int64{addressSpace: 5 * gib}, 4 * gib, 5 * gib, "ulimit -v"},
		{"cgroup v1", v1, nil, 1536 << 20, 3 * gib, "/sys/fs/cgroup/memory/memory.limit_in_bytes) of 3.0 GiB"},
		{"cgroup v1 unlimited", unlimitedV1, nil, 16 * gib, 32 * gib, "this machine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := fakeEnv(t, c.files, c.limits)
			b, ok := e.available()
			if !ok || b.room != c.avail {
				t.Errorf("available %s (%v, %s), want %s", Bytes(b.room), ok, b.name, Bytes(c.avail))
			}
			if got := e.total(); got != c.total {
				t.Errorf("total %s, want %s", Bytes(got), Bytes(c.total))
			}
			saved := host
			defer func() { host = saved }()
			host = e
			err := Check("the job", 1<<40)
			if err == nil || !strings.Contains(err.Error(), c.says) || !strings.HasPrefix(err.Error(), "the job needs 1.0 TiB of memory") {
				t.Errorf("Check: %v\nwant it to say %q", err, c.says)
			}
			if err := Check("the job", c.avail); err != nil {
				t.Errorf("Check of all there is: %v", err)
			}
		})
	}
	// Nothing to read: nothing known, and no check refuses.
	e := fakeEnv(t, nil, nil)
	if _, ok := e.available(); ok || e.total() != 0 {
		t.Errorf("no files: available known %v, total %d", ok, e.total())
	}
}
