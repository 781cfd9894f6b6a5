package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrPortTaken is returned when a process's port answers but another
// process holds it: FreeLocalAddr's port is free only when it returns, and
// processes started at the same time may be handed the same one.
var ErrPortTaken = errors.New("port held by another process")

// WaitListening waits until the process holds a listening TCP socket on
// port, and returns ErrPortTaken if it exits or timeout passes first. A
// health check that answered on the port does not tell which process
// answered: this does (Linux only).
func (p *Process) WaitListening(ctx context.Context, port int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := listensOn(p.PID(), port)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited without listening on port %d: %w", p.Path, port, ErrPortTaken)
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return fmt.Errorf("%s not listening on port %d after %v: %w", p.Path, port, timeout, ErrPortTaken)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// listensOn says whether process pid holds a socket listening on TCP port:
// the inodes of the listening sockets on port, from the process's network
// namespace's tables, matched against its open files.
func listensOn(pid, port int) (bool, error) {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	inodes := map[string]bool{}
	for _, table := range []string{"net/tcp", "net/tcp6"} {
		if err := listeningInodes(filepath.Join(proc, table), port, inodes); err != nil {
			return false, err
		}
	}
	if len(inodes) == 0 {
		return false, nil
	}
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil // exited
		}
		return false, fmt.Errorf("list the files of process %d: %w", pid, err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true, nil
		}
	}
	return false, nil
}

// listeningInodes adds to inodes those of the sockets in the TCP table at
// path (/proc/<pid>/net/tcp or tcp6) that listen on port.
func listeningInodes(path string, port int, inodes map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // exited, or no IPv6
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	const listen = "0A" // TCP_LISTEN, as the table writes the state
	want := fmt.Sprintf(":%04X", port)
	s := bufio.NewScanner(f)
	for s.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
		fields := strings.Fields(s.Text())
		if len(fields) < 10 || fields[3] != listen || !strings.HasSuffix(fields[1], want) {
			continue
		}
		inodes[fields[9]] = true
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
