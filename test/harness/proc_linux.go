package harness

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal has the kernel kill the child if its parent dies
// without stopping it, so that no process outlives the command.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
