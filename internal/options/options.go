package options

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/leaderelection"
)

// Defaults that match kube-controller-manager, so that flags can be moved over
// unchanged.
const (
	DefaultNodeMonitorPeriod         = 5 * time.Second
	DefaultNodeMonitorGracePeriod    = 50 * time.Second
	DefaultNodeStartupGracePeriod    = time.Minute
	DefaultPodEvictionTimeout        = 5 * time.Minute
	DefaultNodeEvictionRate          = 0.1
	DefaultSecondaryNodeEvictionRate = 0.01
	DefaultLargeClusterSizeThreshold = 50
	DefaultUnhealthyZoneThreshold    = 0.55
	DefaultPartitionFreezeThreshold  = 0.6
	DefaultMetricsBindAddress        = ":8080"
	DefaultHealthProbeBindAddress    = ":8081"
	DefaultLeaderElectionID          = "node-lifecycle-controller"
	DefaultLeaderElectLeaseDuration  = 15 * time.Second
	DefaultLeaderElectRenewDeadline  = 10 * time.Second
	DefaultLeaderElectRetryPeriod    = 2 * time.Second
)

// Client rate limits. kube-controller-manager's --kube-api-qps (20) and
// --kube-api-burst (30) are shared by dozens of controllers that write in
// steady state; this controller writes nothing while nodes are healthy and
// needs its budget in the seconds after nodes fail, when every write is
// late if throttled. The apiserver's priority and fairness still applies.
const (
	DefaultKubeAPIQPS   = 100
	DefaultKubeAPIBurst = 200
)

// Options is the validated configuration of the controller.
type Options struct {
	// Kubeconfig is the path of a kubeconfig file; empty means in-cluster
	// configuration, then $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string
	// KubeAPIQPS and KubeAPIBurst limit the requests the controller sends
	// to the apiserver: a sustained rate per second and a burst.
	KubeAPIQPS   float32
	KubeAPIBurst int32

	// NodeMonitorPeriod is how often the controller looks for nodes whose
	// deadline passed without being acted on. Deadlines are acted on when they
	// fall due; this period is only a safety net.
	NodeMonitorPeriod time.Duration
	// NodeMonitorGracePeriod is how long a node that has posted a Ready
	// condition may go without a heartbeat before it is marked Unknown.
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod replaces NodeMonitorGracePeriod for a node that
	// has never posted a Ready condition.
	NodeStartupGracePeriod time.Duration
	// PodEvictionTimeout is how long pods without a matching toleration stay
	// on a node tainted NoExecute before they are deleted.
	PodEvictionTimeout time.Duration

	// NodeEvictionRate is the number of nodes per second that may be tainted
	// NoExecute in a zone that is not disrupted.
	NodeEvictionRate float64
	// SecondaryNodeEvictionRate replaces NodeEvictionRate in a partially
	// disrupted zone larger than LargeClusterSizeThreshold.
	SecondaryNodeEvictionRate float64
	// LargeClusterSizeThreshold is the zone size at or below which a partially
	// disrupted zone is not tainted at all.
	LargeClusterSizeThreshold int32
	// UnhealthyZoneThreshold is the share of not-ready nodes (more than two)
	// at which a zone counts as partially disrupted.
	UnhealthyZoneThreshold float64
	// PartitionFreezeThreshold is the share of all nodes which, losing
	// their heartbeats within one grace period, freezes NoExecute tainting,
	// pod NotReady marking and eviction; 0 turns the freeze off.
	PartitionFreezeThreshold float64
	// PartitionFreezeCooldown is how long the share of silent nodes must
	// stay below the threshold before a freeze ends; 0 means one
	// NodeMonitorGracePeriod.
	PartitionFreezeCooldown time.Duration

	// LeaderElect makes the controller take a Lease before it acts, so that
	// only one replica judges nodes at a time.
	LeaderElect bool
	// LeaderElectNamespace is where the leader election Lease lives; empty
	// means the namespace the controller runs in, or kube-system outside a
	// cluster.
	LeaderElectNamespace string
	// LeaderElectID is the name of the leader election Lease.
	LeaderElectID string
	// LeaderElectLeaseDuration is how long a replica that is not the
	// leader waits, after it last saw the Lease renewed, before it takes
	// the Lease over: the longest a crashed leader leaves nodes unjudged.
	LeaderElectLeaseDuration time.Duration
	// LeaderElectRenewDeadline is how long the leader keeps trying to
	// renew the Lease before it gives up leading.
	LeaderElectRenewDeadline time.Duration
	// LeaderElectRetryPeriod is how long replicas wait between attempts to
	// take or renew the Lease.
	LeaderElectRetryPeriod time.Duration

	// MetricsBindAddress serves Prometheus metrics; "0" disables it.
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz; "0" disables it.
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's profiles at /debug/pprof/; empty or "0"
	// disables it. Off by default: profiles show the controller's internals
	// to anyone who can reach the address.
	PprofBindAddress string
}

// Default returns the options with every value at its default.
func Default() Options {
	return Options{
		KubeAPIQPS:                DefaultKubeAPIQPS,
		KubeAPIBurst:              DefaultKubeAPIBurst,
		NodeMonitorPeriod:         DefaultNodeMonitorPeriod,
		NodeMonitorGracePeriod:    DefaultNodeMonitorGracePeriod,
		NodeStartupGracePeriod:    DefaultNodeStartupGracePeriod,
		PodEvictionTimeout:        DefaultPodEvictionTimeout,
		NodeEvictionRate:          DefaultNodeEvictionRate,
		SecondaryNodeEvictionRate: DefaultSecondaryNodeEvictionRate,
		LargeClusterSizeThreshold: DefaultLargeClusterSizeThreshold,
		UnhealthyZoneThreshold:    DefaultUnhealthyZoneThreshold,
		PartitionFreezeThreshold:  DefaultPartitionFreezeThreshold,
		LeaderElect:               true,
		LeaderElectID:             DefaultLeaderElectionID,
		LeaderElectLeaseDuration:  DefaultLeaderElectLeaseDuration,
		LeaderElectRenewDeadline:  DefaultLeaderElectRenewDeadline,
		LeaderElectRetryPeriod:    DefaultLeaderElectRetryPeriod,
		MetricsBindAddress:        DefaultMetricsBindAddress,
		HealthProbeBindAddress:    DefaultHealthProbeBindAddress,
	}
}

// AddFlags binds every option to a flag of fs, under kube-controller-manager's
// name where it has one. The values already in o are the flags' defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"Path to a kubeconfig file. Empty means in-cluster configuration, then $KUBECONFIG, then ~/.kube/config.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS,
		"Requests per second the controller may send to the apiserver, sustained. Higher than "+
			"kube-controller-manager's 20, which many controllers share: this one writes only when nodes fail, and then must not wait.")
	fs.Int32Var(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst,
		"Requests the controller may send to the apiserver in a burst above --kube-api-qps.")

	fs.DurationVar(&o.NodeMonitorPeriod, "node-monitor-period", o.NodeMonitorPeriod,
		"How often to look for nodes whose grace deadline passed without being acted on. "+
			"Deadlines are acted on when they fall due; this is only a safety resync.")
	fs.DurationVar(&o.NodeMonitorGracePeriod, "node-monitor-grace-period", o.NodeMonitorGracePeriod,
		"How long a node may go without a heartbeat (a Lease renewal or a Ready condition heartbeat) "+
			"before it is marked Unknown. Must be below --pod-eviction-timeout.")
	fs.DurationVar(&o.NodeStartupGracePeriod, "node-startup-grace-period", o.NodeStartupGracePeriod,
		"The grace period for a node that has never posted a Ready condition. Must be at least --node-monitor-grace-period.")
	fs.DurationVar(&o.PodEvictionTimeout, "pod-eviction-timeout", o.PodEvictionTimeout,
		"How long pods with no toleration for the unreachable or not-ready NoExecute taint stay on a "+
			"tainted node before they are deleted, counted from the taint's timeAdded.")

	fs.Float64Var(&o.NodeEvictionRate, "node-eviction-rate", o.NodeEvictionRate,
		"Nodes per second that may be tainted NoExecute in a zone that is not partially disrupted.")
	fs.Float64Var(&o.SecondaryNodeEvictionRate, "secondary-node-eviction-rate", o.SecondaryNodeEvictionRate,
		"Nodes per second that may be tainted NoExecute in a partially disrupted zone larger than --large-cluster-size-threshold.")
	fs.Int32Var(&o.LargeClusterSizeThreshold, "large-cluster-size-threshold", o.LargeClusterSizeThreshold,
		"Zone size at or below which a partially disrupted zone is not tainted NoExecute at all.")
	fs.Float64Var(&o.UnhealthyZoneThreshold, "unhealthy-zone-threshold", o.UnhealthyZoneThreshold,
		"Share of not-ready nodes (more than two) at which a zone is partially disrupted, in (0, 1].")
	fs.Float64Var(&o.PartitionFreezeThreshold, "partition-freeze-threshold", o.PartitionFreezeThreshold,
		"Share of all nodes, in [0, 1], which losing their heartbeats within one grace period (at least 3 nodes) "+
			"freezes NoExecute tainting, pod NotReady marking and eviction; 0 turns the freeze off.")
	fs.DurationVar(&o.PartitionFreezeCooldown, "partition-freeze-cooldown", o.PartitionFreezeCooldown,
		"How long the share of silent nodes must stay below --partition-freeze-threshold before a freeze ends; "+
			"0 means one --node-monitor-grace-period.")

	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Take a leader election Lease before acting, so that one replica judges nodes at a time.")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", o.LeaderElectNamespace,
		"Namespace of the leader election Lease. Empty means the controller's own namespace, or kube-system outside a cluster.")
	fs.StringVar(&o.LeaderElectID, "leader-elect-id", o.LeaderElectID,
		"Name of the leader election Lease.")
	fs.DurationVar(&o.LeaderElectLeaseDuration, "leader-elect-lease-duration", o.LeaderElectLeaseDuration,
		"How long a replica that is not the leader waits, after it last saw the leader renew the Lease, before it "+
			"takes the Lease over: the longest a crashed leader leaves nodes unjudged. Must exceed --leader-elect-renew-deadline.")
	fs.DurationVar(&o.LeaderElectRenewDeadline, "leader-elect-renew-deadline", o.LeaderElectRenewDeadline,
		"How long the leader keeps trying to renew the Lease before it stops leading. "+
			"Must exceed 1.2 times --leader-elect-retry-period.")
	fs.DurationVar(&o.LeaderElectRetryPeriod, "leader-elect-retry-period", o.LeaderElectRetryPeriod,
		"How long replicas wait between attempts to take or renew the Lease.")

	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		`Address that serves Prometheus metrics at /metrics; "0" disables it.`)
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		`Address that serves /healthz and /readyz; "0" disables it.`)
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress,
		`Address that serves Go's profiles at /debug/pprof/ (such as 127.0.0.1:8082); empty or "0" disables it.`)
}

// FreezeCooldown returns the partition freeze cooldown, with 0 resolved to
// one grace period.
func (o *Options) FreezeCooldown() time.Duration {
	if o.PartitionFreezeCooldown == 0 {
		return o.NodeMonitorGracePeriod
	}
	return o.PartitionFreezeCooldown
}

// Validate reports every rule the options break, one line per flag.
func (o *Options) Validate() error {
	var errs []error
	bad := func(flag string, value any, rule string) {
		errs = append(errs, fmt.Errorf("invalid --%s=%v: %s", flag, value, rule))
	}

	if !(o.KubeAPIQPS > 0) {
		bad("kube-api-qps", o.KubeAPIQPS, "must be positive")
	}
	if o.KubeAPIBurst <= 0 {
		bad("kube-api-burst", o.KubeAPIBurst, "must be positive")
	}
	if o.NodeMonitorPeriod <= 0 {
		bad("node-monitor-period", o.NodeMonitorPeriod, "must be positive")
	}
	if o.NodeMonitorGracePeriod <= 0 {
		bad("node-monitor-grace-period", o.NodeMonitorGracePeriod, "must be positive")
	}
	if o.NodeStartupGracePeriod <= 0 {
		bad("node-startup-grace-period", o.NodeStartupGracePeriod, "must be positive")
	} else if o.NodeStartupGracePeriod < o.NodeMonitorGracePeriod {
		bad("node-startup-grace-period", o.NodeStartupGracePeriod,
			fmt.Sprintf("must be at least --node-monitor-grace-period (%v)", o.NodeMonitorGracePeriod))
	}
	if o.PodEvictionTimeout <= 0 {
		bad("pod-eviction-timeout", o.PodEvictionTimeout, "must be positive")
	} else if o.NodeMonitorGracePeriod >= o.PodEvictionTimeout {
		bad("node-monitor-grace-period", o.NodeMonitorGracePeriod,
			fmt.Sprintf("must be below --pod-eviction-timeout (%v)", o.PodEvictionTimeout))
	}
	// The negated comparisons also refuse NaN.
	if !(o.NodeEvictionRate >= 0) {
		bad("node-eviction-rate", o.NodeEvictionRate, "must be a number of nodes per second, at least 0")
	}
	if !(o.SecondaryNodeEvictionRate >= 0) {
		bad("secondary-node-eviction-rate", o.SecondaryNodeEvictionRate, "must be a number of nodes per second, at least 0")
	}
	if o.LargeClusterSizeThreshold < 0 {
		bad("large-cluster-size-threshold", o.LargeClusterSizeThreshold, "must not be negative")
	}
	if !(o.UnhealthyZoneThreshold > 0 && o.UnhealthyZoneThreshold <= 1) {
		bad("unhealthy-zone-threshold", o.UnhealthyZoneThreshold, "must be in (0, 1]")
	}
	if !(o.PartitionFreezeThreshold >= 0 && o.PartitionFreezeThreshold <= 1) {
		bad("partition-freeze-threshold", o.PartitionFreezeThreshold, "must be in [0, 1]")
	}
	if o.PartitionFreezeCooldown < 0 {
		bad("partition-freeze-cooldown", o.PartitionFreezeCooldown, "must not be negative")
	}
	if o.LeaderElect {
		if o.LeaderElectID == "" {
			bad("leader-elect-id", `""`, "must not be empty when --leader-elect is set")
		}
		errs = append(errs, o.validateLeaderElectTimings()...)
	}
	return errors.Join(errs...)
}

// validateLeaderElectTimings applies client-go's rules for leader election
// timings (leaderelection.NewLeaderElector), which would otherwise refuse them
// only once the manager starts. Like kube-controller-manager, it does not
// look at them when --leader-elect is off.
func (o *Options) validateLeaderElectTimings() []error {
	var errs []error
	bad := func(flag string, value any, rule string) {
		errs = append(errs, fmt.Errorf("invalid --%s=%v: %s", flag, value, rule))
	}
	lease, renew, retry := o.LeaderElectLeaseDuration, o.LeaderElectRenewDeadline, o.LeaderElectRetryPeriod
	if lease <= 0 {
		bad("leader-elect-lease-duration", lease, "must be positive")
	}
	if renew <= 0 {
		bad("leader-elect-renew-deadline", renew, "must be positive")
	}
	if retry <= 0 {
		bad("leader-elect-retry-period", retry, "must be positive")
	}
	if lease > 0 && renew > 0 && lease <= renew {
		bad("leader-elect-renew-deadline", renew,
			fmt.Sprintf("must be below --leader-elect-lease-duration (%v)", lease))
	}
	// client-go retries renewals with up to this much jitter, and refuses a
	// deadline that one jittered retry could use up.
	if renew > 0 && retry > 0 && renew <= time.Duration(leaderelection.JitterFactor*float64(retry)) {
		bad("leader-elect-retry-period", retry,
			fmt.Sprintf("must be below --leader-elect-renew-deadline (%v) divided by %v, the leader election jitter factor",
				renew, leaderelection.JitterFactor))
	}
	return errs
}
