package cmdline

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// Defaults of the process's flags that match kube-controller-manager, so that
// flags can be moved over unchanged.
const (
	DefaultMetricsBindAddress       = ":8080"
	DefaultHealthProbeBindAddress   = ":8081"
	DefaultLeaderElectionID         = "node-lifecycle-controller"
	DefaultLeaderElectLeaseDuration = 15 * time.Second
	DefaultLeaderElectRenewDeadline = 10 * time.Second
	DefaultLeaderElectRetryPeriod   = 2 * time.Second
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

// Options is the binary's command line: the controllers' options, and what
// the process needs around them (the apiserver, leader election, what it
// serves).
type Options struct {
	options.Options

	// Kubeconfig is the path of a kubeconfig file; empty means in-cluster
	// configuration, then $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string
	// KubeAPIQPS and KubeAPIBurst limit the requests the controller sends
	// to the apiserver: a sustained rate per second and a burst.
	KubeAPIQPS   float32
	KubeAPIBurst int32

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
		KubeAPIQPS:               DefaultKubeAPIQPS,
		KubeAPIBurst:             DefaultKubeAPIBurst,
		Options:                  options.Default(),
		LeaderElect:              true,
		LeaderElectID:            DefaultLeaderElectionID,
		LeaderElectLeaseDuration: DefaultLeaderElectLeaseDuration,
		LeaderElectRenewDeadline: DefaultLeaderElectRenewDeadline,
		LeaderElectRetryPeriod:   DefaultLeaderElectRetryPeriod,
		MetricsBindAddress:       DefaultMetricsBindAddress,
		HealthProbeBindAddress:   DefaultHealthProbeBindAddress,
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

	o.Options.AddFlags(fs)

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
	if err := o.Options.Validate(); err != nil {
		errs = append(errs, err)
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
