package cmdline

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// kube-controller-manager's names for the two controllers this binary
// replaces, and its older alias for the first.
const (
	nodeLifecycleController = "node-lifecycle-controller"
	nodeLifecycleAlias      = "nodelifecycle"
	taintEvictionController = "taint-eviction-controller"
)

// upstreamGroup is a set of kube-controller-manager flags that this binary
// has no flag of its own for, and why it accepts them without acting on them.
type upstreamGroup struct {
	why    string
	bools  []string
	values []string
}

// upstreamFlags are kube-controller-manager's flags (as of 1.37) that this
// binary accepts, so that a kube-controller-manager command line starts it
// unchanged. test/deploy checks the list against kube-controller-manager's
// own --help. Each one given is logged at start with why it has no effect;
// the few whose values would contradict what this binary does are refused
// by Validate.
var upstreamFlags = []upstreamGroup{
	{
		why: "configures a kube-controller-manager controller that this binary does not run",
		bools: []string{"allocate-node-cidrs", "configure-cloud-routes", "disable-attach-detach-reconcile-sync",
			"disable-force-detach-on-timeout", "enable-dynamic-provisioning", "enable-garbage-collector", "enable-hostpath-provisioner"},
		values: []string{"attach-detach-reconcile-sync-period", "cidr-allocator-type", "cloud-config", "cluster-cidr", "cluster-name",
			"cluster-signing-cert-file", "cluster-signing-duration", "cluster-signing-key-file",
			"cluster-signing-kube-apiserver-client-cert-file", "cluster-signing-kube-apiserver-client-key-file",
			"cluster-signing-kubelet-client-cert-file", "cluster-signing-kubelet-client-key-file",
			"cluster-signing-kubelet-serving-cert-file", "cluster-signing-kubelet-serving-key-file",
			"cluster-signing-legacy-unknown-cert-file", "cluster-signing-legacy-unknown-key-file",
			"concurrent-cron-job-syncs", "concurrent-daemonset-syncs", "concurrent-deployment-syncs",
			"concurrent-device-taint-eviction-syncs", "concurrent-disruption-syncs", "concurrent-endpoint-syncs",
			"concurrent-ephemeralvolume-syncs", "concurrent-gc-syncs", "concurrent-horizontal-pod-autoscaler-syncs",
			"concurrent-job-syncs", "concurrent-namespace-syncs", "concurrent-rc-syncs", "concurrent-replicaset-syncs",
			"concurrent-resource-quota-syncs", "concurrent-resourceclaim-syncs", "concurrent-service-endpoint-syncs",
			"concurrent-serviceaccount-token-syncs", "concurrent-statefulset-syncs", "concurrent-ttl-after-finished-syncs",
			"concurrent-validating-admission-policy-status-syncs", "endpoint-updates-batch-period",
			"endpointslice-updates-batch-period", "external-cloud-volume-plugin", "flex-volume-plugin-dir",
			"horizontal-pod-autoscaler-cpu-initialization-period", "horizontal-pod-autoscaler-downscale-stabilization",
			"horizontal-pod-autoscaler-initial-readiness-delay", "horizontal-pod-autoscaler-sync-period",
			"horizontal-pod-autoscaler-tolerance", "legacy-service-account-token-clean-up-period", "max-endpoints-per-slice",
			"mirroring-concurrent-service-endpoint-syncs", "mirroring-endpointslice-updates-batch-period",
			"mirroring-max-endpoints-per-subset", "namespace-sync-period", "node-cidr-mask-size", "node-cidr-mask-size-ipv4",
			"node-cidr-mask-size-ipv6", "pv-recycler-increment-timeout-nfs", "pv-recycler-minimum-timeout-hostpath",
			"pv-recycler-minimum-timeout-nfs", "pv-recycler-pod-template-filepath-hostpath",
			"pv-recycler-pod-template-filepath-nfs", "pv-recycler-timeout-increment-hostpath", "pvclaimbinder-sync-period",
			"resource-quota-sync-period", "root-ca-file", "route-reconciliation-period", "service-account-private-key-file",
			"service-cluster-ip-range", "terminated-pod-gc-threshold"},
	},
	{
		why:   "profiles are served at --pprof-bind-address instead",
		bools: []string{"profiling", "contention-profiling"},
	},
	{
		why:    "configures kube-controller-manager's metrics registry; this binary's metrics are listed in docs/reference/metrics.md",
		values: []string{"allow-metric-labels", "allow-metric-labels-manifest", "disabled-metrics", "show-hidden-metrics-for-version"},
	},
	{
		why: "this binary runs under its own identity (its kubeconfig or its pod's ServiceAccount), " +
			"and runs the node lifecycle and taint eviction controllers only",
		bools:  []string{"use-service-account-credentials"},
		values: []string{"controllers", "controller-start-interval", "controller-shutdown-timeout", "min-resync-period"},
	},
	{
		why:    "this binary asks for protobuf for Kubernetes' types and JSON for its own, as controller-runtime does",
		values: []string{"kube-api-content-type"},
	},
	{
		why:    "no kube-controller-manager feature gate or emulated version changes what this binary does",
		values: []string{"feature-gates", "emulated-version", "min-compatibility-version", "cloud-provider"},
	},
	{
		why:    "leader migration moves controllers between kube-controller-manager and cloud-controller-manager; this binary takes a Lease of its own",
		bools:  []string{"enable-leader-migration"},
		values: []string{"leader-migration-config"},
	},
}

// upstreamValue records the value a kube-controller-manager flag was given.
type upstreamValue struct {
	name   string
	isBool bool
	given  map[string]string
}

// String returns the value given, as pflag.Value requires.
func (v *upstreamValue) String() string { return v.given[v.name] }

// Set records the value, refusing a boolean flag anything else.
func (v *upstreamValue) Set(s string) error {
	if v.isBool {
		if _, err := strconv.ParseBool(s); err != nil {
			return fmt.Errorf("not a boolean: %w", err)
		}
	}
	v.given[v.name] = s
	return nil
}

// Type names the value's type in usage messages.
func (v *upstreamValue) Type() string {
	if v.isBool {
		return "bool"
	}
	return "string"
}

// addUpstreamFlags binds kube-controller-manager's flags, hidden from
// --help, recording each one given in o.Upstream.
func (o *Options) addUpstreamFlags(fs *pflag.FlagSet) {
	if o.Upstream == nil {
		o.Upstream = map[string]string{}
	}
	for _, g := range upstreamFlags {
		for _, kind := range []struct {
			names  []string
			isBool bool
		}{{g.bools, true}, {g.values, false}} {
			for _, name := range kind.names {
				f := fs.VarPF(&upstreamValue{name: name, isBool: kind.isBool, given: o.Upstream}, name, "",
					"kube-controller-manager's; accepted without effect: "+g.why+".")
				if kind.isBool {
					f.NoOptDefVal = "true"
				}
				_ = fs.MarkHidden(name)
			}
		}
	}
}

// UpstreamNote is a kube-controller-manager flag that was given, and why it
// has no effect here.
type UpstreamNote struct {
	Flag, Value, Why string
}

// UpstreamNotes lists the kube-controller-manager flags given, sorted by
// name.
func (o *Options) UpstreamNotes() []UpstreamNote {
	var notes []UpstreamNote
	for _, g := range upstreamFlags {
		for _, name := range slices.Concat(g.bools, g.values) {
			if v, ok := o.Upstream[name]; ok {
				notes = append(notes, UpstreamNote{Flag: name, Value: v, Why: g.why})
			}
		}
	}
	slices.SortFunc(notes, func(a, b UpstreamNote) int { return strings.Compare(a.Flag, b.Flag) })
	return notes
}

// validateUpstream refuses kube-controller-manager flags whose values ask
// for what this binary does not do.
func (o *Options) validateUpstream() []error {
	var errs []error
	if v, ok := o.Upstream["controllers"]; ok {
		for _, name := range []string{nodeLifecycleController, taintEvictionController} {
			if !controllerEnabled(v, name) {
				errs = append(errs, fmt.Errorf("invalid --controllers=%s: leaves out %s, which is what this binary runs; "+
					"leave the flag out, or run kube-controller-manager for the controllers it lists", v, name))
			}
		}
	}
	if v, ok := o.Upstream["enable-leader-migration"]; ok {
		if on, _ := strconv.ParseBool(v); on {
			errs = append(errs, fmt.Errorf("invalid --enable-leader-migration=%s: leader migration is not supported; "+
				"this binary takes its own Lease, --leader-elect-resource-name", v))
		}
	}
	if v := o.Upstream["leader-migration-config"]; v != "" {
		errs = append(errs, fmt.Errorf("invalid --leader-migration-config=%s: leader migration is not supported; "+
			"this binary takes its own Lease, --leader-elect-resource-name", v))
	}
	return errs
}

// controllerEnabled applies kube-controller-manager's rules for --controllers
// to a controller on by default: a name enables it, the name after a minus
// disables it, and '*' enables every controller on by default.
func controllerEnabled(list, name string) bool {
	aliases := []string{name}
	if name == nodeLifecycleController {
		aliases = append(aliases, nodeLifecycleAlias)
	}
	star := false
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		switch {
		case slices.Contains(aliases, item):
			return true
		case strings.HasPrefix(item, "-") && slices.Contains(aliases, item[1:]):
			return false
		case item == "*":
			star = true
		}
	}
	return star
}
