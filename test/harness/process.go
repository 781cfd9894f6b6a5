package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Process is a binary under test, running as a child process.
type Process struct {
	// Path and Args are what it was started with.
	Path string
	Args []string

	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	waitErr error         // how it exited; read only after exited is closed
}

// StartProcess starts the binary at path with args, its output going to
// log. The kernel kills it if this process dies without stopping it.
func StartProcess(path string, args []string, log io.Writer) (*Process, error) {
	return StartProcessWithEnv(path, args, nil, log)
}

// StartProcessWithEnv is StartProcess with env (KEY=VALUE) added to this
// process's environment, a later entry of a key winning.
func StartProcessWithEnv(path string, args, env []string, log io.Writer) (*Process, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("binary %s: %w", path, err)
	}
	cmd := exec.Command(path, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = log, log
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	p := &Process{Path: path, Args: args, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// PID is the process's id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// WaitReady polls url with client until it answers 200, the process exits,
// or timeout passes.
func (p *Process) WaitReady(ctx context.Context, client *http.Client, url string, timeout time.Duration) error {
	// Hand-written rather than wait.PollUntilContextTimeout, which waits on
	// its context and timer alone: this must also stop when the process exits.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := client.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (see its log): %w", p.Path, p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w", p.Path, url, ctx.Err())
		case <-tick.C:
		}
	}
}

// Kill ends the process with SIGKILL, as a crash or the OOM killer would:
// it releases nothing and finishes nothing. It returns once the process has
// exited.
func (p *Process) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Pause stops the process with SIGSTOP, as a long garbage collection or a
// paused VM would: it runs nothing, answers nothing and keeps every
// connection open until Resume. Its clocks go on counting. Kill ends it
// where it stands; Stop's SIGTERM waits for Resume, so Stop kills it once
// its grace is over.
func (p *Process) Pause() error {
	if err := Suspend(p.cmd.Process.Pid); err != nil {
		return fmt.Errorf("pause %s: %w", p.Path, err)
	}
	return nil
}

// Suspend sends SIGSTOP to a process and returns once every one of its
// threads has stopped: kill returns at once, and each thread stops only as
// it next runs, so on a busy machine a process may answer a request after
// kill returned.
func Suspend(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stop process %d: %w", pid, err)
	}
	task := filepath.Join("/proc", strconv.Itoa(pid), "task")
	deadline := time.Now().Add(10 * time.Second)
	for {
		running, err := runningThread(task)
		switch {
		case err != nil:
			return err
		case running == "":
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("thread %s of process %d still runs 10s after SIGSTOP", running, pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// runningThread returns a thread under task, /proc/<pid>/task, that has
// not stopped, or "" when all have.
func runningThread(task string) (string, error) {
	threads, err := os.ReadDir(task)
	if err != nil {
		return "", fmt.Errorf("list threads: %w", err)
	}
	for _, t := range threads {
		stat, err := os.ReadFile(filepath.Join(task, t.Name(), "stat"))
		if err != nil {
			return "", fmt.Errorf("read thread state: %w", err)
		}
		// The state follows the command name, which is in parentheses.
		_, state, _ := bytes.Cut(stat, []byte(") "))
		if !bytes.HasPrefix(state, []byte("T")) {
			return t.Name(), nil
		}
	}
	return "", nil
}

// Resume lets a process that Pause stopped run again, with SIGCONT.
func (p *Process) Resume() error {
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume %s: %w", p.Path, err)
	}
	return nil
}

// Stop asks the process to shut down with SIGTERM and waits for it, killing
// it if it takes longer than grace. An exit status other than zero is not an
// error: some binaries report the signal that way.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		var exit *exec.ExitError
		if p.waitErr != nil && !errors.As(p.waitErr, &exit) {
			return fmt.Errorf("%s: %w", p.Path, p.waitErr)
		}
		return nil
	case <-timer.C:
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not stop within %v and was killed", p.Path, grace)
	}
}
