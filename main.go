// Command node-lifecycle-controller judges node health from Lease and status
// heartbeats and marks silent nodes Unknown at their grace deadline. It takes
// kube-controller-manager's flag names and defaults, so it can run in place of
// that binary's node-lifecycle-controller.
package main

import (
	"errors"
	goflag "flag"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/options"
)

// serviceAccountNamespace is where a pod learns its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

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
	opts := options.Default()
	zapOpts := zap.Options{}

	fs := pflag.NewFlagSet("node-lifecycle-controller", pflag.ContinueOnError)
	fs.SortFlags = false
	opts.AddFlags(fs)
	logFlags := goflag.NewFlagSet("logging", goflag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	fs.AddGoFlagSet(logFlags)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: node-lifecycle-controller [flags]\n"+
			"       node-lifecycle-controller status [flags]   (see status --help)\n\n"+
			"Judges node health from Lease and status heartbeats and marks silent nodes Unknown\n"+
			"at their grace deadline. Flag names and defaults are kube-controller-manager's.\n\nFlags:\n%s",
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
	if err := opts.Validate(); err != nil {
		return configError{err}
	}
	cfg, err := restConfig(opts.Kubeconfig)
	if err != nil {
		return configError{err}
	}
	cfg.QPS, cfg.Burst = opts.KubeAPIQPS, int(opts.KubeAPIBurst)

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	mgr, err := ctrl.NewManager(cfg, managerOptions(opts))
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := controllers.SetupWithManager(mgr, controllerOptions(opts)); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add readyz check: %w", err)
	}

	log.Info("Starting", "nodeMonitorGracePeriod", opts.NodeMonitorGracePeriod,
		"nodeStartupGracePeriod", opts.NodeStartupGracePeriod, "nodeMonitorPeriod", opts.NodeMonitorPeriod,
		"leaderElect", opts.LeaderElect, "leaderElectLeaseDuration", opts.LeaderElectLeaseDuration,
		"leaderElectRenewDeadline", opts.LeaderElectRenewDeadline, "leaderElectRetryPeriod", opts.LeaderElectRetryPeriod)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// managerOptions converts validated flags to the manager's options.
func managerOptions(opts options.Options) ctrl.Options {
	return ctrl.Options{
		Cache:                   controllers.CacheOptions(),
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        opts.LeaderElectID,
		LeaderElectionNamespace: leaderElectionNamespace(opts.LeaderElectNamespace),
		LeaseDuration:           &opts.LeaderElectLeaseDuration,
		RenewDeadline:           &opts.LeaderElectRenewDeadline,
		RetryPeriod:             &opts.LeaderElectRetryPeriod,
		// On a clean shutdown the next replica takes over at once, without
		// waiting out the lease duration.
		LeaderElectionReleaseOnCancel: true,
	}
}

// controllerOptions converts validated flags to the controllers' options.
func controllerOptions(opts options.Options) controllers.Options {
	return controllers.Options{
		NodeMonitorGracePeriod:    opts.NodeMonitorGracePeriod,
		NodeStartupGracePeriod:    opts.NodeStartupGracePeriod,
		NodeMonitorPeriod:         opts.NodeMonitorPeriod,
		PodEvictionTimeout:        opts.PodEvictionTimeout,
		NodeEvictionRate:          opts.NodeEvictionRate,
		SecondaryNodeEvictionRate: opts.SecondaryNodeEvictionRate,
		LargeClusterSizeThreshold: int(opts.LargeClusterSizeThreshold),
		UnhealthyZoneThreshold:    opts.UnhealthyZoneThreshold,
		PartitionFreezeThreshold:  opts.PartitionFreezeThreshold,
		PartitionFreezeCooldown:   opts.FreezeCooldown(),
	}
}

// restConfig loads the kubeconfig named by --kubeconfig, or the default
// chain when it is empty.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig given and no default configuration found: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("invalid --kubeconfig=%s: %w", path, err)
	}
	return cfg, nil
}

// leaderElectionNamespace picks the namespace of the leader election Lease:
// the flag, else the pod's own namespace, else kube-system.
func leaderElectionNamespace(flag string) string {
	if flag != "" {
		return flag
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "kube-system"
}
