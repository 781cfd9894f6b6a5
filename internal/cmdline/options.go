package cmdline

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // the json log format, as kube-controller-manager offers

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

	// LeaderElection is kube-controller-manager's leader election
	// configuration, bound to its flags by k8s.io/component-base. An empty
	// ResourceNamespace means the namespace the controller runs in, or
	// kube-system outside a cluster. LeaseDuration is how long a replica
	// that is not the leader waits, after it last saw the Lease renewed,
	// before it takes the Lease over: the longest a crashed leader leaves
	// nodes unjudged.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// Logs is kube-controller-manager's logging configuration (-v,
	// --vmodule, --logging-format), bound by k8s.io/component-base.
	Logs *logsapi.LoggingConfiguration

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
		KubeAPIQPS:   DefaultKubeAPIQPS,
		KubeAPIBurst: DefaultKubeAPIBurst,
		Options:      options.Default(),
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:   true,
			LeaseDuration: metav1.Duration{Duration: DefaultLeaderElectLeaseDuration},
			RenewDeadline: metav1.Duration{Duration: DefaultLeaderElectRenewDeadline},
			RetryPeriod:   metav1.Duration{Duration: DefaultLeaderElectRetryPeriod},
			ResourceLock:  resourcelock.LeasesResourceLock,
			ResourceName:  DefaultLeaderElectionID,
		},
		Logs:                   logsapi.NewLoggingConfiguration(),
		MetricsBindAddress:     DefaultMetricsBindAddress,
		HealthProbeBindAddress: DefaultHealthProbeBindAddress,
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

	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fs)
	// This controller's names before it took kube-controller-manager's.
	fs.StringVar(&o.LeaderElection.ResourceName, "leader-elect-id", o.LeaderElection.ResourceName, "Name of the leader election Lease.")
	fs.StringVar(&o.LeaderElection.ResourceNamespace, "leader-elect-namespace", o.LeaderElection.ResourceNamespace,
		"Namespace of the leader election Lease.")
	_ = fs.MarkDeprecated("leader-elect-id", "use --leader-elect-resource-name")
	_ = fs.MarkDeprecated("leader-elect-namespace", "use --leader-elect-resource-namespace")
	if o.Logs == nil {
		o.Logs = logsapi.NewLoggingConfiguration()
	}
	logsapi.AddFlags(o.Logs, fs)

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
	if o.LeaderElection.LeaderElect {
		if o.LeaderElection.ResourceName == "" {
			bad("leader-elect-resource-name", `""`, "must not be empty when --leader-elect is set")
		}
		if o.LeaderElection.ResourceLock != resourcelock.LeasesResourceLock {
			bad("leader-elect-resource-lock", o.LeaderElection.ResourceLock,
				"only leases is supported, as in kube-controller-manager since 1.24")
		}
		errs = append(errs, o.validateLeaderElectTimings()...)
	}
	if o.Logs != nil {
		for _, e := range logsapi.Validate(o.Logs, nil, nil) {
			errs = append(errs, fmt.Errorf("invalid logging flags: %w", e))
		}
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
	lease, renew, retry := o.LeaderElection.LeaseDuration.Duration, o.LeaderElection.RenewDeadline.Duration, o.LeaderElection.RetryPeriod.Duration
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
