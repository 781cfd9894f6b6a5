package main

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel kill the controller if the demo dies
// without stopping it, so that no process outlives the demo.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
