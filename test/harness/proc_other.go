//go:build !linux

package harness

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent death
// signal; callers stop their children on every way out they control.
func setParentDeathSignal(*exec.Cmd) {}
