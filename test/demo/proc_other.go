//go:build !linux

package main

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent death
// signal; the demo stops the controller itself on every way out it controls.
func setParentDeathSignal(*exec.Cmd) {}
