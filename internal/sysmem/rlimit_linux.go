package sysmem

import (
	"math"
	"syscall"
)

// getrlimit returns the process's soft limit of r; ok is false when it is
// unlimited (RLIM_INFINITY, all ones) or cannot be read.
func getrlimit(r resource) (int64, bool) {
	which := map[resource]int{addressSpace: syscall.RLIMIT_AS, dataSegment: syscall.RLIMIT_DATA}[r]
	var l syscall.Rlimit
	if err := syscall.Getrlimit(which, &l); err != nil || l.Cur > math.MaxInt64 {
		return 0, false
	}
	return int64(l.Cur), true
}
