package cluster

import (
	"os/exec"
	"syscall"
)

// setParentDeath has the kernel signal c when the process that started
// it ends, however it ends.
func setParentDeath(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
