package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestRunRefusesBadConfigurationBeforeStarting(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--node-monitor-grace-period=0s"}, "invalid --node-monitor-grace-period=0s: must be positive"},
		{[]string{"--unhealthy-zone-threshold=1.5"}, "invalid --unhealthy-zone-threshold=1.5: must be in (0, 1]"},
		{[]string{"--kubeconfig=/does/not/exist"}, "invalid --kubeconfig=/does/not/exist"},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"--node-eviction-rate=fast"}, `invalid argument "fast"`},
		{[]string{"stray"}, "unexpected arguments: stray"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			err := run(tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if code := exitCode(err); code != 2 {
				t.Fatalf("exit code %d, want 2", code)
			}
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	err := run([]string{"--help"})
	if !errors.Is(err, pflag.ErrHelp) || exitCode(err) != 0 {
		t.Fatalf("got %v (exit %d)", err, exitCode(err))
	}
}

func TestLeaderElectionNamespace(t *testing.T) {
	if got := leaderElectionNamespace("ops"); got != "ops" {
		t.Fatalf("flag ignored: %q", got)
	}
	// Outside a pod there is no service account namespace file.
	if got := leaderElectionNamespace(""); got != "kube-system" {
		t.Fatalf("fallback = %q", got)
	}
}
