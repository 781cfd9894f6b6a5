package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat. The kernel fixes it
// at 100 for what it shows user space, whatever its internal tick rate.
const userHZ = 100

// cpuTime returns the CPU time a process has used so far, in user and
// kernel mode together, from /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read the CPU time of process %d: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces and parentheses:
	// the fields that follow start after the last ')'.
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	// Fields 14 and 15 (utime, stime) of proc(5); the first after the
	// command name is field 3.
	fields := strings.Fields(string(b[end+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields after the command name", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// peakRSS returns the most resident memory a process has had, VmHWM in
// /proc/PID/status, in bytes.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read the memory of process %d: %w", pid, err)
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		value, ok := strings.CutPrefix(s.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse VmHWM of process %d: %w", pid, err)
		}
		return kb << 10, nil
	}
	if err := s.Err(); err != nil {
		return 0, fmt.Errorf("read the memory of process %d: %w", pid, err)
	}
	return 0, fmt.Errorf("process %d: no VmHWM in /proc/%d/status", pid, pid)
}
