// Package sysmem tells how much memory this process may take, so that
// loom can refuse a job that would not fit with a clear error instead of
// being killed by the kernel's out-of-memory handler (or failing an
// allocation under ulimit) half-way.
//
// The figures are the least of the machine's (/proc/meminfo) and the
// process's own limits: its address-space and data limits (ulimit -v,
// ulimit -d) and its memory cgroup's (v2 memory.max, v1
// memory.limit_in_bytes, and those of the cgroups above it). Read
// limits.go first.
package sysmem

import (
	"fmt"
	"sync"
)

// Total is the memory this process could ever hold, in bytes: the
// machine's physical memory, or the least of the process's limits when
// that is less; 0 when none of them can be told.
func Total() int64 {
	totalOnce.Do(func() { total = host.total() })
	return total
}

var (
	totalOnce sync.Once
	total     int64
)

// Available is the memory a new allocation of this process can take now,
// in bytes: the machine's MemAvailable, or less where one of the
// process's limits leaves less room (the limit less what the process, or
// its cgroup, already uses). ok is false when nothing can be told.
func Available() (n int64, ok bool) {
	b, ok := host.available()
	return b.room, ok
}

// Check returns an error when need bytes are more than the memory
// available now (see Available); what names the job in the message, which
// says which limit left too little. Where nothing can be told, it returns
// nil.
func Check(what string, need int64) error {
	b, ok := host.available()
	if !ok || need <= b.room {
		return nil
	}
	if b.limit == 0 {
		return fmt.Errorf("%s needs %s of memory, and this machine has %s available", what, Bytes(need), Bytes(b.room))
	}
	return fmt.Errorf("%s needs %s of memory, and this process has %s available under %s of %s", what, Bytes(need), Bytes(b.room), b.name, Bytes(b.limit))
}

// Bytes prints a byte count with a binary unit: "512 B", "3.0 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
