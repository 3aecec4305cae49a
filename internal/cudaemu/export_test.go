package cudaemu

import "context"

// ResetHeader forgets the process's precompiled header, so that the next
// program looks for one (in $LOOM_CACHE_DIR) or builds it.
func ResetHeader() {
	pchMu.Lock()
	defer pchMu.Unlock()
	pchTried, pchDir = false, ""
}

// HeaderDir is headerDir for the tests.
func HeaderDir() string { return headerDir(context.Background()) }
