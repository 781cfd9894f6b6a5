package options

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaultsAreKubeControllerManagersAndValid(t *testing.T) {
	o := Default()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if o.NodeMonitorGracePeriod != 50*time.Second || o.NodeStartupGracePeriod != time.Minute ||
		o.NodeMonitorPeriod != 5*time.Second || o.PodEvictionTimeout != 5*time.Minute ||
		o.NodeEvictionRate != 0.1 || o.SecondaryNodeEvictionRate != 0.01 ||
		o.LargeClusterSizeThreshold != 50 || o.UnhealthyZoneThreshold != 0.55 {
		t.Errorf("defaults differ from kube-controller-manager's: %+v", o)
	}
}

// TestFreezeCooldownIsOneGraceByDefault: the library and the flag mean the
// same by an unset cooldown, one grace period, whatever the grace period.
func TestFreezeCooldownIsOneGraceByDefault(t *testing.T) {
	o := Default()
	o.NodeMonitorGracePeriod = 7 * time.Second
	if got := o.FreezeCooldown(); got != 7*time.Second {
		t.Errorf("FreezeCooldown() = %v, want the grace period", got)
	}
	o.PartitionFreezeCooldown = time.Minute
	if got := o.FreezeCooldown(); got != time.Minute {
		t.Errorf("FreezeCooldown() = %v, want the one set", got)
	}
}

func TestReconcileTimeout(t *testing.T) {
	o := Default()
	o.ReconcileTimeout = 0
	if got := o.ReconcileTimeoutOrDefault(); got != DefaultReconcileTimeout {
		t.Errorf("unset timeout = %v, want %v", got, DefaultReconcileTimeout)
	}
	o.ReconcileTimeout = -time.Second
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "ReconcileTimeout=-1s") {
		t.Errorf("negative timeout: err = %v", err)
	}
}

func TestFlagsBindOntoTheOptions(t *testing.T) {
	o := Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--node-monitor-grace-period=40s", "--partition-freeze-cooldown=2m"}); err != nil {
		t.Fatal(err)
	}
	if o.NodeMonitorGracePeriod != 40*time.Second || o.PartitionFreezeCooldown != 2*time.Minute {
		t.Errorf("flags not applied: %+v", o)
	}
	if o.PodEvictionTimeout != DefaultPodEvictionTimeout {
		t.Errorf("an untouched flag lost its default: %v", o.PodEvictionTimeout)
	}
}
