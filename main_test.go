package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/cmdline"
)

func TestRunRefusesBadConfigurationBeforeStarting(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--node-monitor-grace-period=0s"}, "invalid --node-monitor-grace-period=0s: must be positive"},
		{[]string{"--unhealthy-zone-threshold=1.5"}, "invalid --unhealthy-zone-threshold=1.5: must be in (0, 1]"},
		{[]string{"--leader-elect-lease-duration=10s"},
			"invalid --leader-elect-renew-deadline=10s: must be below --leader-elect-lease-duration (10s)"},
		{[]string{"--leader-elect-retry-period=0s"}, "invalid --leader-elect-retry-period=0s: must be positive"},
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

// The Lease is in kube-system wherever the process runs, as
// kube-controller-manager's, unless the flag says otherwise.
func TestLeaderElectionLeaseIsInKubeSystemByDefault(t *testing.T) {
	opts := cmdline.Default()
	if got := managerOptions(opts).LeaderElectionNamespace; got != "kube-system" {
		t.Fatalf("Lease in %q by default, want kube-system", got)
	}
	opts.LeaderElection.ResourceNamespace = "ops"
	if got := managerOptions(opts).LeaderElectionNamespace; got != "ops" {
		t.Fatalf("--leader-elect-resource-namespace=ops ignored: %q", got)
	}
	opts.LeaderElection.ResourceNamespace = ""
	if err := opts.Validate(); err == nil || !strings.Contains(err.Error(), "--leader-elect-resource-namespace") {
		t.Fatalf("an empty namespace: %v, want it refused", err)
	}
}

func TestManagerOptionsCarryLeaderElectTimings(t *testing.T) {
	opts := cmdline.Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse([]string{"--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s",
		"--leader-elect-retry-period=4s", "--leader-elect-resource-namespace=ops", "--leader-elect-resource-name=nlc"}); err != nil {
		t.Fatalf("parse: %v", err)
	}
	got := managerOptions(opts)
	if !got.LeaderElection || got.LeaderElectionID != "nlc" || got.LeaderElectionNamespace != "ops" ||
		got.LeaderElectionResourceLock != "leases" {
		t.Errorf("leader election not wired: %+v", got)
	}
	if got.LeaseDuration == nil || *got.LeaseDuration != 30*time.Second ||
		got.RenewDeadline == nil || *got.RenewDeadline != 20*time.Second ||
		got.RetryPeriod == nil || *got.RetryPeriod != 4*time.Second {
		t.Errorf("timings not passed on: lease %v, renew %v, retry %v", got.LeaseDuration, got.RenewDeadline, got.RetryPeriod)
	}
	if !got.LeaderElectionReleaseOnCancel {
		t.Error("a clean shutdown must release the Lease")
	}
}
