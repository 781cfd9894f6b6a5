// Package options is the configuration of the node lifecycle controllers:
// the settings kube-controller-manager's node lifecycle and taint eviction
// controllers take, under the same names and with the same defaults, and the
// few this implementation adds. The binary binds its flags to it, the
// library (package controllers) takes it, and the status command reads it:
// one type, one Default, one Validate.
//
// It depends on nothing but the standard library, pflag and k8s.io/utils, so
// that any code can build one.
package options

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
)

// Defaults that match kube-controller-manager, so that flags can be moved
// over unchanged.
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
)

// DefaultMaintenanceGracePeriod is how long a node in maintenance that has
// stopped being Ready waits for its NoExecute taint: long enough for a
// reboot or a hardware swap, short enough that a node whose maintenance
// went wrong is dealt with the same working hour.
const DefaultMaintenanceGracePeriod = time.Hour

// DefaultPodWatchNodes is how many nodes may have their pods watched one
// node at a time before every pod is watched at once: as many streams as
// kube-apiserver lets one HTTP/2 connection carry by default (more open
// another connection), and lists, one per node, that take seconds at the
// default rate limit.
const DefaultPodWatchNodes = 100

// DefaultDryRunRecord is the ConfigMap a dry run keeps its comparison in,
// and emits its events on.
const DefaultDryRunRecord = "kube-system/node-lifecycle-controller-dry-run"

// DefaultReconcileTimeout bounds a reconcile of Options that set none. A
// reconcile sends a few requests, or one per pod of a node, at most 16 at
// once: seconds, even behind the client's rate limit.
const DefaultReconcileTimeout = 30 * time.Second

// Options configures the node lifecycle controllers. Start from Default;
// the zero value is not valid.
type Options struct {
	// NodeMonitorPeriod is how often the controller looks for nodes whose
	// deadline passed without being acted on. Deadlines are acted on when
	// they fall due; this period is only a safety net. It is also the period
	// of the apiserver probe that notices an outage.
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
	// MaintenanceGracePeriod is how long a node with a maintenance
	// condition True (MaintenanceInProgress, GracefulNodeShutdownInProgress
	// or Drained) may stay unreachable or not ready before its NoExecute
	// taint is added, counted from the later of the condition turning True
	// and the node ceasing to be Ready. Until then it is marked and tainted
	// NoSchedule as any node, but counts towards no zone, pool breaker or
	// partition freeze. 0 turns the hold off: such a node is judged as if
	// the conditions were not there, as kube-controller-manager judges it.
	MaintenanceGracePeriod time.Duration

	// PodWatchNodes is how many nodes may have their pods watched one node
	// at a time: the nodes not Ready, tainted NoExecute, or whose deadline
	// has just passed, the only ones whose pods the controllers act on.
	// While more need theirs, every pod is watched at once, until no more
	// than half as many do. 0 watches every pod at all times, as
	// kube-controller-manager does. A dry run always watches every pod.
	PodWatchNodes int

	// DryRun runs the controllers beside the controller that decides,
	// kube-controller-manager's most often, writing nothing to Nodes or
	// Pods: they judge, guard and count down as they would, and record what
	// they would have done, and where the other controller did otherwise,
	// in the DryRunRecord ConfigMap, on which their events are emitted.
	DryRun bool
	// DryRunRecord is the ConfigMap, as namespace/name, a dry run keeps its
	// record in.
	DryRunRecord string

	// ReconcileTimeout bounds each reconcile, and so every request it sends
	// to the apiserver: a request stuck on a connection that stopped
	// forwarding (a half-open TCP connection, a proxy that hangs) fails
	// after it and is retried, instead of holding one of the few workers
	// for good. The cache's lists and watches are not bound by it. 0 means
	// DefaultReconcileTimeout. It has no flag.
	ReconcileTimeout time.Duration
	// Clock drives every deadline of the controllers' own; nil means the
	// real clock. Tests set a fake one. It has no flag.
	Clock clock.WithTicker
}

// Default returns the options with every value at its default.
func Default() Options {
	return Options{
		NodeMonitorPeriod:         DefaultNodeMonitorPeriod,
		NodeMonitorGracePeriod:    DefaultNodeMonitorGracePeriod,
		NodeStartupGracePeriod:    DefaultNodeStartupGracePeriod,
		PodEvictionTimeout:        DefaultPodEvictionTimeout,
		NodeEvictionRate:          DefaultNodeEvictionRate,
		SecondaryNodeEvictionRate: DefaultSecondaryNodeEvictionRate,
		LargeClusterSizeThreshold: DefaultLargeClusterSizeThreshold,
		UnhealthyZoneThreshold:    DefaultUnhealthyZoneThreshold,
		PartitionFreezeThreshold:  DefaultPartitionFreezeThreshold,
		MaintenanceGracePeriod:    DefaultMaintenanceGracePeriod,
		PodWatchNodes:             DefaultPodWatchNodes,
		DryRunRecord:              DefaultDryRunRecord,
		ReconcileTimeout:          DefaultReconcileTimeout,
	}
}

// AddFlags binds every option that has a flag to fs, under
// kube-controller-manager's name where it has one. The values already in o
// are the flags' defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
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
	fs.DurationVar(&o.MaintenanceGracePeriod, "maintenance-grace-period", o.MaintenanceGracePeriod,
		"How long a node with MaintenanceInProgress, GracefulNodeShutdownInProgress or Drained True may stay "+
			"unreachable or not ready before it is tainted NoExecute, counted from the later of the condition turning "+
			"True and the node ceasing to be Ready. Until then it is marked and tainted NoSchedule, its pods marked "+
			"NotReady if it went silent, and it counts towards no zone, pool breaker or partition freeze. The grace runs "+
			"once per failure. 0 turns this off.")
	fs.IntVar(&o.PodWatchNodes, "pod-watch-nodes", o.PodWatchNodes,
		"How many nodes may have their pods watched one node at a time: those not Ready, tainted NoExecute, or whose "+
			"deadline has just passed, the only ones whose pods are acted on. While more need theirs, every pod is "+
			"watched at once, until no more than half as many do; a standby replica watches no more than this many "+
			"nodes' pods, and never every pod. 0 watches every pod at all times, as kube-controller-manager does; "+
			"so does --dry-run.")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun,
		"Write nothing to Nodes or Pods: judge, guard and count down as usual beside the controller that decides, "+
			"and record what would have been done, and where that controller did otherwise, in --dry-run-record "+
			"(read it with the compare command). Leader election takes the lease named by "+
			"--leader-elect-resource-name with -dry-run appended, never the real one.")
	fs.StringVar(&o.DryRunRecord, "dry-run-record", o.DryRunRecord,
		"The ConfigMap, as namespace/name, a dry run keeps its comparison in and emits its events on.")
}

// DryRunRecordKey returns DryRunRecord split into its namespace and name.
func (o *Options) DryRunRecordKey() (namespace, name string, err error) {
	ns, n, ok := strings.Cut(o.DryRunRecord, "/")
	if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
		return "", "", fmt.Errorf("invalid --dry-run-record=%s: must be namespace/name", o.DryRunRecord)
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return "", "", fmt.Errorf("invalid --dry-run-record=%s: namespace: %s", o.DryRunRecord, msgs[0])
	}
	if msgs := validation.IsDNS1123Subdomain(n); len(msgs) > 0 {
		return "", "", fmt.Errorf("invalid --dry-run-record=%s: name: %s", o.DryRunRecord, msgs[0])
	}
	return ns, n, nil
}

// FreezeCooldown returns the partition freeze cooldown, with 0 resolved to
// one grace period.
func (o *Options) FreezeCooldown() time.Duration {
	if o.PartitionFreezeCooldown == 0 {
		return o.NodeMonitorGracePeriod
	}
	return o.PartitionFreezeCooldown
}

// ReconcileTimeoutOrDefault returns ReconcileTimeout, with 0 resolved to
// DefaultReconcileTimeout.
func (o *Options) ReconcileTimeoutOrDefault() time.Duration {
	if o.ReconcileTimeout == 0 {
		return DefaultReconcileTimeout
	}
	return o.ReconcileTimeout
}

// Validate reports every rule the options break, one line each, naming the
// flag.
func (o *Options) Validate() error {
	var errs []error
	bad := func(flag string, value any, rule string) {
		errs = append(errs, fmt.Errorf("invalid --%s=%v: %s", flag, value, rule))
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
	if o.MaintenanceGracePeriod < 0 {
		bad("maintenance-grace-period", o.MaintenanceGracePeriod, "must not be negative")
	}
	if o.PodWatchNodes < 0 {
		bad("pod-watch-nodes", o.PodWatchNodes, "must not be negative")
	}
	if o.DryRun {
		if _, _, err := o.DryRunRecordKey(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.ReconcileTimeout < 0 {
		errs = append(errs, fmt.Errorf("invalid ReconcileTimeout=%v: must not be negative", o.ReconcileTimeout))
	}
	return errors.Join(errs...)
}
