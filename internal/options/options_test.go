package options

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaultsAreValid(t *testing.T) {
	o := Default()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestFlagsParseOntoDefaults(t *testing.T) {
	o := Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--node-monitor-grace-period=40s",
		"--node-startup-grace-period=2m",
		"--node-eviction-rate=0.5",
		"--leader-elect=false",
	})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.NodeMonitorGracePeriod != 40*time.Second || o.NodeStartupGracePeriod != 2*time.Minute ||
		o.NodeEvictionRate != 0.5 || o.LeaderElect {
		t.Errorf("flags not applied: %+v", o)
	}
	if o.NodeMonitorPeriod != DefaultNodeMonitorPeriod || o.PodEvictionTimeout != DefaultPodEvictionTimeout {
		t.Errorf("untouched flags lost their defaults: %+v", o)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Options)
		want   string // substring of the error; empty means valid
	}{
		{"zero monitor period", func(o *Options) { o.NodeMonitorPeriod = 0 }, "--node-monitor-period=0s: must be positive"},
		{"negative grace", func(o *Options) { o.NodeMonitorGracePeriod = -time.Second }, "--node-monitor-grace-period=-1s: must be positive"},
		{"zero startup grace", func(o *Options) { o.NodeStartupGracePeriod = 0 }, "--node-startup-grace-period=0s: must be positive"},
		{"startup grace below grace", func(o *Options) { o.NodeStartupGracePeriod = 40 * time.Second },
			"--node-startup-grace-period=40s: must be at least --node-monitor-grace-period (50s)"},
		{"startup grace equal to grace", func(o *Options) { o.NodeStartupGracePeriod = 50 * time.Second }, ""},
		{"grace equal to eviction timeout", func(o *Options) { o.PodEvictionTimeout = 50 * time.Second },
			"--node-monitor-grace-period=50s: must be below --pod-eviction-timeout (50s)"},
		{"grace just below eviction timeout", func(o *Options) { o.PodEvictionTimeout = 51 * time.Second }, ""},
		{"zero eviction timeout", func(o *Options) { o.PodEvictionTimeout = 0 }, "--pod-eviction-timeout=0s: must be positive"},
		{"negative rate", func(o *Options) { o.NodeEvictionRate = -0.1 }, "--node-eviction-rate=-0.1: must be"},
		{"NaN rate", func(o *Options) { o.SecondaryNodeEvictionRate = math.NaN() }, "--secondary-node-eviction-rate=NaN"},
		{"zero rate stops tainting", func(o *Options) { o.NodeEvictionRate = 0 }, ""},
		{"negative large cluster", func(o *Options) { o.LargeClusterSizeThreshold = -1 }, "--large-cluster-size-threshold=-1"},
		{"threshold zero", func(o *Options) { o.UnhealthyZoneThreshold = 0 }, "--unhealthy-zone-threshold=0: must be in (0, 1]"},
		{"threshold above one", func(o *Options) { o.UnhealthyZoneThreshold = 1.01 }, "--unhealthy-zone-threshold=1.01"},
		{"threshold NaN", func(o *Options) { o.UnhealthyZoneThreshold = math.NaN() }, "--unhealthy-zone-threshold=NaN"},
		{"threshold one", func(o *Options) { o.UnhealthyZoneThreshold = 1 }, ""},
		{"freeze threshold above one", func(o *Options) { o.PartitionFreezeThreshold = 1.5 }, "--partition-freeze-threshold=1.5: must be in [0, 1]"},
		{"freeze off", func(o *Options) { o.PartitionFreezeThreshold = 0 }, ""},
		{"negative freeze cooldown", func(o *Options) { o.PartitionFreezeCooldown = -time.Second }, "--partition-freeze-cooldown=-1s"},
		{"zero qps", func(o *Options) { o.KubeAPIQPS = 0 }, "--kube-api-qps=0: must be positive"},
		{"negative burst", func(o *Options) { o.KubeAPIBurst = -1 }, "--kube-api-burst=-1: must be positive"},
		{"empty leader id", func(o *Options) { o.LeaderElectID = "" }, "--leader-elect-id"},
		{"empty leader id without election", func(o *Options) { o.LeaderElectID = ""; o.LeaderElect = false }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Default()
			tt.mutate(&o)
			err := o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("want error containing %q, got none", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("want error containing %q, got %q", tt.want, err)
			}
		})
	}
}

func TestValidateReportsEveryBrokenRuleOnItsOwnLine(t *testing.T) {
	o := Default()
	o.NodeMonitorPeriod = 0
	o.UnhealthyZoneThreshold = 2
	err := o.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", lines)
	}
}
