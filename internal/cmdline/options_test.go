package cmdline

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
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
		"--pprof-bind-address=127.0.0.1:8082",
	})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.NodeMonitorGracePeriod != 40*time.Second || o.NodeStartupGracePeriod != 2*time.Minute ||
		o.NodeEvictionRate != 0.5 || o.LeaderElection.LeaderElect || o.PprofBindAddress != "127.0.0.1:8082" {
		t.Errorf("flags not applied: %+v", o)
	}
	if o.NodeMonitorPeriod != options.DefaultNodeMonitorPeriod || o.PodEvictionTimeout != options.DefaultPodEvictionTimeout {
		t.Errorf("untouched flags lost their defaults: %+v", o)
	}
}

// TestPprofIsOffByDefault keeps the profiles, which show the controller's
// internals, unserved unless asked for.
func TestPprofIsOffByDefault(t *testing.T) {
	o := Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.PprofBindAddress != "" {
		t.Errorf("pprof served by default at %q", o.PprofBindAddress)
	}
}

// TestServingIsSecureByDefault: the health checks and metrics are served on
// the secure port only, unless asked otherwise, and the metrics server's
// HTTP/2 stays off when it is turned on.
func TestServingIsSecureByDefault(t *testing.T) {
	o := Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if !o.Serving.Enabled() || o.Serving.SecureServing.BindPort != 10263 {
		t.Errorf("secure port %d, want 10263", o.Serving.SecureServing.BindPort)
	}
	if o.MetricsBindAddress != "0" || o.HealthProbeBindAddress != "0" {
		t.Errorf("metrics at %q and probes at %q by default, want both off (\"0\")", o.MetricsBindAddress, o.HealthProbeBindAddress)
	}
	if !o.MetricsSecure || o.EnableHTTP2 {
		t.Errorf("metrics secure=%v http2=%v, want secure, HTTP/1.1 only", o.MetricsSecure, o.EnableHTTP2)
	}
	if err := fs.Parse([]string{"--metrics-secure=false", "--metrics-bind-address=:8080", "--secure-port=0"}); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.MetricsSecure || o.MetricsBindAddress != ":8080" || o.Serving.Enabled() {
		t.Errorf("metrics secure=%v at %q, secure port %d after --metrics-secure=false --metrics-bind-address=:8080 --secure-port=0",
			o.MetricsSecure, o.MetricsBindAddress, o.Serving.SecureServing.BindPort)
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
		{"negative maintenance grace", func(o *Options) { o.MaintenanceGracePeriod = -time.Minute }, "--maintenance-grace-period=-1m0s: must not be negative"},
		{"maintenance hold off", func(o *Options) { o.MaintenanceGracePeriod = 0 }, ""},
		{"negative pod watch nodes", func(o *Options) { o.PodWatchNodes = -1 }, "--pod-watch-nodes=-1: must not be negative"},
		{"every pod watched", func(o *Options) { o.PodWatchNodes = 0 }, ""},
		{"zero qps", func(o *Options) { o.KubeAPIQPS = 0 }, "--kube-api-qps=0: must be positive"},
		{"negative burst", func(o *Options) { o.KubeAPIBurst = -1 }, "--kube-api-burst=-1: must be positive"},
		{"empty leader id", func(o *Options) { o.LeaderElection.ResourceName = "" }, "--leader-elect-resource-name"},
		{"config map lock", func(o *Options) { o.LeaderElection.ResourceLock = "configmaps" }, "--leader-elect-resource-lock=configmaps: only leases"},
		{"unknown log format", func(o *Options) { o.Logs.Format = "yaml" }, "invalid logging flags"},
		{"empty leader id without election", func(o *Options) { o.LeaderElection.ResourceName = ""; o.LeaderElection.LeaderElect = false }, ""},
		{"zero lease duration", func(o *Options) { o.LeaderElection.LeaseDuration.Duration = 0 }, "--leader-elect-lease-duration=0s: must be positive"},
		{"negative renew deadline", func(o *Options) { o.LeaderElection.RenewDeadline.Duration = -time.Second },
			"--leader-elect-renew-deadline=-1s: must be positive"},
		{"zero retry period", func(o *Options) { o.LeaderElection.RetryPeriod.Duration = 0 }, "--leader-elect-retry-period=0s: must be positive"},
		{"renew deadline equal to lease", func(o *Options) { o.LeaderElection.RenewDeadline.Duration = 15 * time.Second },
			"--leader-elect-renew-deadline=15s: must be below --leader-elect-lease-duration (15s)"},
		{"renew deadline above lease", func(o *Options) { o.LeaderElection.LeaseDuration.Duration = 8 * time.Second },
			"--leader-elect-renew-deadline=10s: must be below --leader-elect-lease-duration (8s)"},
		{"renew deadline just below lease", func(o *Options) { o.LeaderElection.RenewDeadline.Duration = 15*time.Second - time.Millisecond }, ""},
		{"retry period equal to renew deadline", func(o *Options) { o.LeaderElection.RetryPeriod.Duration = 10 * time.Second },
			"--leader-elect-retry-period=10s: must be below --leader-elect-renew-deadline (10s) divided by 1.2"},
		// client-go refuses a renew deadline of at most 1.2 retry periods.
		{"retry period at renew deadline over jitter", func(o *Options) {
			o.LeaderElection.RenewDeadline.Duration, o.LeaderElection.RetryPeriod.Duration = 12*time.Second, 10*time.Second
		}, "--leader-elect-retry-period=10s: must be below --leader-elect-renew-deadline (12s) divided by 1.2"},
		{"retry period just inside the jitter", func(o *Options) {
			o.LeaderElection.RenewDeadline.Duration, o.LeaderElection.RetryPeriod.Duration = 12*time.Second+time.Nanosecond, 10*time.Second
		}, ""},
		{"short timings", func(o *Options) {
			o.LeaderElection.LeaseDuration.Duration, o.LeaderElection.RenewDeadline.Duration, o.LeaderElection.RetryPeriod.Duration = 3*time.Second, 2*time.Second, 500*time.Millisecond
		}, ""},
		{"metrics cert path missing", func(o *Options) { o.MetricsCertPath = "/nonexistent" },
			"--metrics-cert-name=tls.crt: stat /nonexistent/tls.crt"},
		{"metrics cert path without the key", func(o *Options) { o.MetricsCertPath = "testdata/certs"; o.MetricsCertKey = "" },
			`--metrics-cert-key="": must name a file`},
		{"metrics cert path over plain HTTP", func(o *Options) { o.MetricsCertPath = "testdata/certs"; o.MetricsSecure = false },
			"--metrics-cert-path=testdata/certs: needs --metrics-secure"},
		{"metrics cert path", func(o *Options) { o.MetricsCertPath = "testdata/certs" }, ""},
		{"plain metrics", func(o *Options) { o.MetricsSecure = false }, ""},
		{"bad timings without election", func(o *Options) {
			o.LeaderElection.LeaderElect, o.LeaderElection.LeaseDuration.Duration, o.LeaderElection.RetryPeriod.Duration = false, -time.Second, time.Hour
		}, ""},
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

// TestLeaderElectTimingsMatchClientGo checks Validate against the rules
// client-go applies when the manager starts, so that no timing passes the
// flags only to be refused later, and none is refused that would run.
func TestLeaderElectTimingsMatchClientGo(t *testing.T) {
	values := []time.Duration{-time.Second, 0, time.Nanosecond, 500 * time.Millisecond, 833 * time.Millisecond,
		time.Second, 1200 * time.Millisecond, 2 * time.Second, 2400*time.Millisecond + time.Nanosecond, 3 * time.Second}
	lock := &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "test"}}
	for _, lease := range values {
		for _, renew := range values {
			for _, retry := range values {
				o := Default()
				o.LeaderElection.LeaseDuration.Duration, o.LeaderElection.RenewDeadline.Duration, o.LeaderElection.RetryPeriod.Duration = lease, renew, retry
				_, clientGoErr := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
					Lock: lock, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
					Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
				})
				if err := o.Validate(); (err == nil) != (clientGoErr == nil) {
					t.Errorf("lease %v, renew %v, retry %v: Validate says %v, client-go says %v", lease, renew, retry, err, clientGoErr)
				}
			}
		}
	}
}

func TestLeaderElectTimingFlags(t *testing.T) {
	o := Default()
	if o.LeaderElection.LeaseDuration.Duration != 15*time.Second || o.LeaderElection.RenewDeadline.Duration != 10*time.Second ||
		o.LeaderElection.RetryPeriod.Duration != 2*time.Second {
		t.Fatalf("defaults are not kube-controller-manager's: %+v", o)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--leader-elect-lease-duration=30s",
		"--leader-elect-renew-deadline=20s",
		"--leader-elect-retry-period=4s",
	})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.LeaderElection.LeaseDuration.Duration != 30*time.Second || o.LeaderElection.RenewDeadline.Duration != 20*time.Second ||
		o.LeaderElection.RetryPeriod.Duration != 4*time.Second {
		t.Errorf("flags not applied: %+v", o)
	}
}

func TestValidateReportsEachBrokenLeaderElectRuleOnce(t *testing.T) {
	o := Default()
	// The lease is too short for the renew deadline, and the retry period
	// too long for it: two rules, two lines, and no line about positivity.
	o.LeaderElection.LeaseDuration.Duration = 5 * time.Second
	o.LeaderElection.RetryPeriod.Duration = 9 * time.Second
	err := o.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "--leader-elect-renew-deadline=10s") ||
		!strings.Contains(lines[1], "--leader-elect-retry-period=9s") {
		t.Fatalf("want one line for the renew deadline and one for the retry period, got %q", lines)
	}
	// A timing that is not positive is reported as such, and not again in
	// its relations to the others.
	o = Default()
	o.LeaderElection.RenewDeadline.Duration = 0
	err = o.Validate()
	if err == nil {
		t.Fatal("want an error")
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 1 {
		t.Fatalf("want 1 line, got %q", lines)
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

// TestKubeControllerManagerFlags: the leader election and logging flags of
// an upstream command line parse unchanged, and this controller's former
// names still work, deprecated.
func TestKubeControllerManagerFlags(t *testing.T) {
	o := Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--leader-elect=true", "--leader-elect-resource-lock=leases",
		"--leader-elect-resource-name=kube-controller-manager", "--leader-elect-resource-namespace=kube-system",
		"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s",
		"-v=2", "--logging-format=json",
	})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	le := o.LeaderElection
	if le.ResourceName != "kube-controller-manager" || le.ResourceNamespace != "kube-system" || le.ResourceLock != "leases" {
		t.Errorf("leader election = %+v", le)
	}
	if o.Logs.Verbosity != 2 || o.Logs.Format != "json" {
		t.Errorf("logging = %+v", o.Logs)
	}

	o = Default()
	fs = pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--leader-elect-id=nlc", "--leader-elect-namespace=ops"}); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.LeaderElection.ResourceName != "nlc" || o.LeaderElection.ResourceNamespace != "ops" {
		t.Errorf("deprecated names not applied: %+v", o.LeaderElection)
	}
	if f := fs.Lookup("leader-elect-id"); f == nil || f.Deprecated == "" {
		t.Error("--leader-elect-id is not marked deprecated")
	}
}
