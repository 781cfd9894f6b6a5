package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
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
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause %s: %w", p.Path, err)
	}
	return nil
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
