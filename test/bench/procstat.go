package main

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"
)

// userHZ is the unit of the CPU times in /proc/PID/stat. The kernel fixes it
// at 100 for what it shows user space, whatever its internal tick rate.
// procfs converts with it too, but only to float seconds: counting whole
// ticks keeps the duration exact.
const userHZ = 100

// cpuTime returns the CPU time a process has used so far, in user and
// kernel mode together, from /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, fmt.Errorf("read the CPU time of process %d: %w", pid, err)
	}
	s, err := p.Stat()
	if err != nil {
		return 0, fmt.Errorf("read the CPU time of process %d: %w", pid, err)
	}
	return time.Duration(s.UTime+s.STime) * time.Second / userHZ, nil
}

// peakRSS returns the most resident memory a process has had, VmHWM in
// /proc/PID/status, in bytes.
func peakRSS(pid int) (int64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, fmt.Errorf("read the memory of process %d: %w", pid, err)
	}
	s, err := p.NewStatus()
	if err != nil {
		return 0, fmt.Errorf("read the memory of process %d: %w", pid, err)
	}
	// procfs leaves VmHWM at zero when the line is missing, as it is for
	// a zombie or a kernel thread.
	if s.VmHWM == 0 {
		return 0, fmt.Errorf("process %d: no VmHWM in /proc/%d/status", pid, pid)
	}
	return int64(s.VmHWM), nil
}
