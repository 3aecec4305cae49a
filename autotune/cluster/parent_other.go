//go:build !linux

package cluster

import "os/exec"

// setParentDeath does nothing where the kernel cannot signal a child when
// its parent ends: a worker then outlives a tuner that was killed, until
// it is stopped.
func setParentDeath(c *exec.Cmd) {}
