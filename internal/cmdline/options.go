package cmdline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // the json log format, as kube-controller-manager offers

	"github.com/nodelifecycle/node-lifecycle-controller/internal/serving"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// Defaults of the process's flags that match kube-controller-manager, so that
// flags can be moved over unchanged.
const (
	DefaultMetricsBindAddress       = "0"
	DefaultHealthProbeBindAddress   = "0"
	DefaultLeaderElectionID         = "node-lifecycle-controller"
	DefaultLeaderElectionNamespace  = "kube-system"
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
	// Master is the apiserver's address, overriding the kubeconfig's.
	Master string
	// KubeAPIQPS and KubeAPIBurst limit the requests the controller sends
	// to the apiserver: a sustained rate per second and a burst.
	KubeAPIQPS   float32
	KubeAPIBurst int32

	// LeaderElection is kube-controller-manager's leader election
	// configuration, bound to its flags by k8s.io/component-base. The Lease
	// is in kube-system by default, wherever the process runs, as
	// kube-controller-manager's: every replica of every install, and a
	// process run from a laptop, compete for the one Lease, and one writes.
	// LeaseDuration is how long a replica
	// that is not the leader waits, after it last saw the Lease renewed,
	// before it takes the Lease over: the longest a crashed leader leaves
	// nodes unjudged.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// Logs is kube-controller-manager's logging configuration (-v,
	// --vmodule, --logging-format), bound by k8s.io/component-base.
	Logs *logsapi.LoggingConfiguration

	// Serving is kube-controller-manager's secure port, which serves the
	// health checks and the metrics: where it listens, its certificate, and
	// who may call it.
	Serving *serving.Options

	// MetricsBindAddress serves Prometheus metrics in controller-runtime's
	// way, apart from the secure port; "0" (the default) disables it.
	MetricsBindAddress string
	// MetricsSecure serves metrics over HTTPS, to callers whose bearer
	// token the apiserver authenticates (TokenReview) and allows to get
	// /metrics (SubjectAccessReview), as kube-controller-manager does.
	// Off, metrics are plain HTTP to anyone who can reach the address.
	MetricsSecure bool
	// MetricsCertPath is a directory holding the metrics server's
	// certificate and key, MetricsCertName and MetricsCertKey; empty means a
	// self-signed certificate made at start.
	MetricsCertPath string
	MetricsCertName string
	MetricsCertKey  string
	// EnableHTTP2 lets the metrics server speak HTTP/2. Off by default, as
	// in kubebuilder's projects: HTTP/2's stream handling has been the way
	// in for denial-of-service attacks (CVE-2023-44487, CVE-2023-39325).
	EnableHTTP2 bool
	// HealthProbeBindAddress serves /healthz and /readyz over plain HTTP,
	// apart from the secure port; "0" (the default) disables it.
	HealthProbeBindAddress string
	// Version prints the binary's version and exits.
	Version bool

	// Upstream holds the kube-controller-manager flags given that this
	// binary accepts without acting on them, by name; UpstreamNotes says
	// why each has no effect.
	Upstream map[string]string

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
			LeaderElect:       true,
			LeaseDuration:     metav1.Duration{Duration: DefaultLeaderElectLeaseDuration},
			RenewDeadline:     metav1.Duration{Duration: DefaultLeaderElectRenewDeadline},
			RetryPeriod:       metav1.Duration{Duration: DefaultLeaderElectRetryPeriod},
			ResourceLock:      resourcelock.LeasesResourceLock,
			ResourceName:      DefaultLeaderElectionID,
			ResourceNamespace: DefaultLeaderElectionNamespace,
		},
		Logs:                   logsapi.NewLoggingConfiguration(),
		Serving:                serving.NewOptions(),
		MetricsBindAddress:     DefaultMetricsBindAddress,
		MetricsSecure:          true,
		MetricsCertName:        "tls.crt",
		MetricsCertKey:         "tls.key",
		HealthProbeBindAddress: DefaultHealthProbeBindAddress,
		Upstream:               map[string]string{},
	}
}

// AddFlags binds every option to a flag of fs, under kube-controller-manager's
// name where it has one. The values already in o are the flags' defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"Path to a kubeconfig file. Empty means the file $KUBECONFIG names, else in-cluster configuration, else ~/.kube/config.")
	fs.StringVar(&o.Master, "master", o.Master, "Address of the apiserver, overriding the one in --kubeconfig.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS,
		"Requests per second the controller may send to the apiserver, sustained, for each kind of object it reads or writes. Higher than "+
			"kube-controller-manager's 20, which many controllers share: this one writes only when nodes fail, and then must not wait. "+
			"Writes, and the live reads that confirm a silence, are not limited on the client: the workers bound them, "+
			"and the apiserver's priority and fairness meters them. The limit applies to the lists and watches, the events and the leader election.")
	fs.Int32Var(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst,
		"Requests the controller may send to the apiserver in a burst above --kube-api-qps, with the same division.")

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

	if o.Serving == nil {
		o.Serving = serving.NewOptions()
	}
	o.Serving.AddFlags(fs)

	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		`An address that serves Prometheus metrics at /metrics apart from the secure port (--secure-port), which serves them too; "0" disables it.`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"Serve metrics over HTTPS, only to callers whose bearer token the apiserver authenticates and allows to get /metrics. "+
			"Set to false for plain HTTP, open to anyone who can reach --metrics-bind-address.")
	fs.StringVar(&o.MetricsCertPath, "metrics-cert-path", o.MetricsCertPath,
		"Directory holding the metrics server's certificate and key (--metrics-cert-name, --metrics-cert-key), "+
			"reloaded when they change. Empty means a self-signed certificate made at start.")
	fs.StringVar(&o.MetricsCertName, "metrics-cert-name", o.MetricsCertName, "File name of the metrics server's certificate in --metrics-cert-path.")
	fs.StringVar(&o.MetricsCertKey, "metrics-cert-key", o.MetricsCertKey, "File name of the metrics server's key in --metrics-cert-path.")
	fs.BoolVar(&o.EnableHTTP2, "enable-http2", o.EnableHTTP2,
		"Let the metrics server speak HTTP/2. Off by default: HTTP/2 stream handling has been used for denial-of-service attacks.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		`An address that serves /healthz and /readyz over plain HTTP, apart from the secure port (--secure-port), which serves them too; "0" disables it.`)
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress,
		`Address that serves Go's profiles at /debug/pprof/ (such as 127.0.0.1:8082); empty or "0" disables it.`)
	fs.BoolVar(&o.Version, "version", o.Version, "Print the version and exit.")
	o.addUpstreamFlags(fs)
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
		if o.LeaderElection.ResourceNamespace == "" {
			bad("leader-elect-resource-namespace", `""`, "must not be empty when --leader-elect is set")
		}
		if o.LeaderElection.ResourceLock != resourcelock.LeasesResourceLock {
			bad("leader-elect-resource-lock", o.LeaderElection.ResourceLock,
				"only leases is supported, as in kube-controller-manager since 1.24")
		}
		errs = append(errs, o.validateLeaderElectTimings()...)
	}
	if o.Serving != nil {
		errs = append(errs, o.Serving.Validate()...)
	}
	errs = append(errs, o.validateMetricsCert()...)
	errs = append(errs, o.validateUpstream()...)
	if o.Logs != nil {
		for _, e := range logsapi.Validate(o.Logs, nil, nil) {
			errs = append(errs, fmt.Errorf("invalid logging flags: %w", e))
		}
	}
	return errors.Join(errs...)
}

// validateMetricsCert refuses a certificate that cannot be served: the
// metrics server would otherwise fall back to a self-signed one, and a
// scraper that verifies the certificate would fail with no word why.
func (o *Options) validateMetricsCert() []error {
	if o.MetricsCertPath == "" {
		return nil
	}
	var errs []error
	if !o.MetricsSecure {
		errs = append(errs, fmt.Errorf("invalid --metrics-cert-path=%s: needs --metrics-secure", o.MetricsCertPath))
	}
	for _, f := range []struct{ flag, name string }{{"metrics-cert-name", o.MetricsCertName}, {"metrics-cert-key", o.MetricsCertKey}} {
		if f.name == "" {
			errs = append(errs, fmt.Errorf("invalid --%s=\"\": must name a file in --metrics-cert-path", f.flag))
			continue
		}
		if _, err := os.Stat(filepath.Join(o.MetricsCertPath, f.name)); err != nil {
			errs = append(errs, fmt.Errorf("invalid --%s=%s: %w", f.flag, f.name, err))
		}
	}
	return errs
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
