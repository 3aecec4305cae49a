// Package sysmem tells how much memory this machine has, so that loom can
// refuse a job that would not fit with a clear error instead of being
// killed by the kernel's out-of-memory handler half-way.
package sysmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// Total is the machine's physical memory in bytes (from /proc/meminfo),
// or 0 when it cannot be told.
func Total() int64 {
	totalOnce.Do(func() { total = meminfo("MemTotal") })
	return total
}

var (
	totalOnce sync.Once
	total     int64
)

// Available is the memory a new allocation can take now without swapping
// (MemAvailable of /proc/meminfo), or 0 when it cannot be told.
func Available() int64 { return meminfo("MemAvailable") }

// Check returns an error when need bytes are more than the memory
// available now; what names the job in the message. Where the machine's
// memory cannot be told, it returns nil.
func Check(what string, need int64) error {
	avail := Available()
	if avail <= 0 || need <= avail {
		return nil
	}
	return fmt.Errorf("%s needs %s of memory, and this machine has %s available", what, Bytes(need), Bytes(avail))
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

// meminfo returns the field of /proc/meminfo in bytes, 0 if absent.
func meminfo(field string) int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || string(name) != field {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}
