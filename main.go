// Command node-lifecycle-controller judges node health from Lease and status
// heartbeats and marks silent nodes Unknown at their grace deadline. It takes
// kube-controller-manager's flag names and defaults, so it can run in place of
// that binary's node-lifecycle-controller.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/buildinfo"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/cmdline"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/serving"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/shadow"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/status"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if !errors.Is(err, pflag.ErrHelp) {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(os.Stderr, "node-lifecycle-controller: %s\n", line)
			}
		}
		os.Exit(exitCode(err))
	}
}

func exitCode(err error) int {
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	var ce configError
	if errors.As(err, &ce) {
		return 2
	}
	return 1
}

// configError marks an error in the configuration, refused before anything
// starts.
type configError struct{ error }

func (e configError) Unwrap() error { return e.error }

func run(args []string) error {
	if len(args) > 0 && args[0] == "status" {
		return runStatus(args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "compare" {
		return runCompare(args[1:], os.Stdout)
	}
	opts := cmdline.Default()

	fs := pflag.NewFlagSet("node-lifecycle-controller", pflag.ContinueOnError)
	fs.SortFlags = false
	opts.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: node-lifecycle-controller [flags]\n"+
			"       node-lifecycle-controller status [flags]   (see status --help)\n"+
			"       node-lifecycle-controller compare [flags]  (see compare --help)\n\n"+
			"Judges node health from Lease and status heartbeats and marks silent nodes Unknown\n"+
			"at their grace deadline. Flag names and defaults are kube-controller-manager's; its\n"+
			"other flags are accepted and logged as having no effect, or refused when their value\n"+
			"contradicts what this binary does (see docs/operating.md).\n\nFlags:\n%s",
			fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return configError{err}
	}
	if fs.NArg() > 0 {
		return configError{fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	if opts.Version {
		fmt.Println("node-lifecycle-controller", buildinfo.Read(buildVersion))
		return nil
	}
	if err := opts.Validate(); err != nil {
		return configError{err}
	}
	cfg, err := restConfig(opts.Master, opts.Kubeconfig)
	if err != nil {
		return configError{err}
	}
	cfg.QPS, cfg.Burst = opts.KubeAPIQPS, int(opts.KubeAPIBurst)
	build := buildinfo.Read(buildVersion)
	// The requests, and so the field manager of every write, carry the
	// controller's name whatever the binary is called ("/manager" in the
	// image): another writer of the nodes' lifecycle state is told apart
	// by it.
	cfg.UserAgent = fmt.Sprintf("node-lifecycle-controller/%s (%s/%s)", build.Version, goruntime.GOOS, goruntime.GOARCH)
	// As kube-controller-manager: the controller sits beside the apiserver,
	// and gzip on every watch event costs both sides CPU to save bandwidth
	// nobody is short of.
	cfg.DisableCompression = true

	// As kube-controller-manager: klog, in the format and at the verbosity
	// the logging flags say, and controller-runtime's logger writes to it.
	if err := logsapi.ValidateAndApply(opts.Logs, nil); err != nil {
		return configError{err}
	}
	defer logs.FlushLogs()
	ctrl.SetLogger(klog.Background())
	log := ctrl.Log.WithName("setup")
	for _, note := range opts.UpstreamNotes() {
		log.Info("Accepted a kube-controller-manager flag that has no effect here", "flag", note.Flag, "value", note.Value, "why", note.Why)
	}

	mgr, err := controllers.NewManager(cfg, managerOptions(opts), opts.Options)
	if err != nil {
		return err
	}
	checks := mgr.HealthChecks()
	srv, err := serving.New(opts.Serving, opts.Kubeconfig, serving.Content{
		Live: checks.Live, Ready: checks.Ready, All: checks.All(),
		Metrics: promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}),
	})
	if err != nil {
		return err
	}
	if srv != nil {
		if err := mgr.Add(srv); err != nil {
			return fmt.Errorf("add the secure server: %w", err)
		}
		log.Info("Serving /healthz, /livez, /readyz and /metrics", "address", srv.Addr().String())
	}

	buildinfo.Publish(build)
	log.Info("Starting", "version", build.String(), "nodeMonitorGracePeriod", opts.NodeMonitorGracePeriod,
		"nodeStartupGracePeriod", opts.NodeStartupGracePeriod, "nodeMonitorPeriod", opts.NodeMonitorPeriod,
		"leaderElect", opts.LeaderElection.LeaderElect, "leaderElectLeaseDuration", opts.LeaderElection.LeaseDuration.Duration,
		"leaderElectRenewDeadline", opts.LeaderElection.RenewDeadline.Duration, "leaderElectRetryPeriod", opts.LeaderElection.RetryPeriod.Duration)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// managerOptions converts validated flags to the manager's options.
func managerOptions(opts cmdline.Options) ctrl.Options {
	return ctrl.Options{
		Metrics:                    metricsOptions(opts),
		HealthProbeBindAddress:     opts.HealthProbeBindAddress,
		PprofBindAddress:           opts.PprofBindAddress,
		LeaderElection:             opts.LeaderElection.LeaderElect,
		LeaderElectionResourceLock: opts.LeaderElection.ResourceLock,
		LeaderElectionID:           opts.LeaderElection.ResourceName,
		LeaderElectionNamespace:    opts.LeaderElection.ResourceNamespace,
		LeaseDuration:              &opts.LeaderElection.LeaseDuration.Duration,
		RenewDeadline:              &opts.LeaderElection.RenewDeadline.Duration,
		RetryPeriod:                &opts.LeaderElection.RetryPeriod.Duration,
		// On a clean shutdown the next replica takes over at once, without
		// waiting out the lease duration.
		LeaderElectionReleaseOnCancel: true,
	}
}

// metricsOptions serves metrics as the flags say: by default over HTTPS, to
// callers the apiserver authenticates and authorizes, with HTTP/2 off.
func metricsOptions(opts cmdline.Options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: opts.MetricsBindAddress, SecureServing: opts.MetricsSecure}
	if !opts.MetricsSecure {
		return m
	}
	m.FilterProvider = filters.WithAuthenticationAndAuthorization
	m.CertDir, m.CertName, m.KeyName = opts.MetricsCertPath, opts.MetricsCertName, opts.MetricsCertKey
	if !opts.EnableHTTP2 {
		m.TLSOpts = append(m.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return m
}

// restConfig loads the kubeconfig named by --kubeconfig, or the default
// chain when it is empty; --master, when set, overrides its server.
func restConfig(master, path string) (*rest.Config, error) {
	if path == "" && master == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig given and no default configuration found: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags(master, path)
	if err != nil && path == "" {
		return nil, fmt.Errorf("invalid --master=%s: %w", master, err)
	}
	if err != nil {
		return nil, fmt.Errorf("invalid --kubeconfig=%s: %w", path, err)
	}
	return cfg, nil
}

// buildVersion is the release the binary was built as, stamped by the
// Makefile (-ldflags "-X main.buildVersion=v0.1.0"); empty for a plain go
// build, which reports the module's version as Go records it.
var buildVersion string

// statusTimeout bounds the reads of the status subcommand.
const statusTimeout = time.Minute

// runStatus is the status subcommand: why nodes are not ready, and when
// their pods will go.
func runStatus(args []string, out io.Writer) error {
	opts := cmdline.Default()
	fs := pflag.NewFlagSet("node-lifecycle-controller status", pflag.ContinueOnError)
	fs.SortFlags = false
	output := fs.StringP("output", "o", "text", "Output format: text or json.")
	opts.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: node-lifecycle-controller status [flags]\n\n"+
			"Shows, per zone, its state and counts, and for each node that is not Ready or carries\n"+
			"a node lifecycle taint: its verdict and why, its heartbeat age, its taints, and for each\n"+
			"of its pods the time left before eviction and what decides it (a toleration,\n"+
			"--pod-eviction-timeout, or a hold: partition freeze, every zone down, a policy's breaker,\n"+
			"pause or halted zone). Pass the timing flags the controller runs with: nodes no\n"+
			"NodeHealthPolicy selects follow them.\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := parseReportFlags(fs, args, output); err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return configError{err}
	}
	cfg, err := restConfig(opts.Master, opts.Kubeconfig)
	if err != nil {
		return configError{err}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	in, err := status.Gather(ctx, c, policy.Defaults(opts.Options), time.Now())
	if err != nil {
		return err
	}
	report := status.Build(in)
	if *output == "json" {
		return status.WriteJSON(out, report)
	}
	return status.WriteText(out, report)
}

// parseReportFlags parses the flags of a subcommand that writes a report,
// and refuses an --output other than text or json, and any argument left.
func parseReportFlags(fs *pflag.FlagSet, args []string, output *string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return configError{err}
	}
	if *output != "text" && *output != "json" {
		return configError{fmt.Errorf("invalid --output=%s: must be text or json", *output)}
	}
	if fs.NArg() > 0 {
		return configError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
	}
	return nil
}

// runCompare is the compare subcommand: what a dry run (--dry-run) would
// have done, against what the controller that decides did.
func runCompare(args []string, out io.Writer) error {
	fs := pflag.NewFlagSet("node-lifecycle-controller compare", pflag.ContinueOnError)
	fs.SortFlags = false
	output := fs.StringP("output", "o", "text", "Output format: text or json.")
	opts := cmdline.Default()
	fs.StringVar(&opts.DryRunRecord, "dry-run-record", opts.DryRunRecord,
		"The ConfigMap, as namespace/name, the dry run keeps its record in.")
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty means the default chain.")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: node-lifecycle-controller compare [flags]\n\n"+
			"Shows what a controller run with --dry-run would have done against what the controller\n"+
			"that decides did, from the dry run's record: for each node either marked, when each marked\n"+
			"it and which was earlier; for each NoExecute taint and pod eviction, whether the dry run\n"+
			"made it too, when, or held it back and why (partition freeze, every zone down, a pool's\n"+
			"hold, maintenance).\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := parseReportFlags(fs, args, output); err != nil {
		return err
	}
	ns, name, err := opts.DryRunRecordKey()
	if err != nil {
		return configError{err}
	}
	cfg, err := restConfig("", opts.Kubeconfig)
	if err != nil {
		return configError{err}
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	key := client.ObjectKey{Namespace: ns, Name: name}
	stored, err := shadow.Load(ctx, c, key)
	if err != nil {
		return err
	}
	report := shadow.Compare(key.String(), stored)
	if *output == "json" {
		return shadow.WriteJSON(out, report)
	}
	return shadow.WriteText(out, report)
}
