// Command floor is the benchmark's floor: the least any node lifecycle
// controller pays. It watches what no such controller can do without, Nodes
// and the Leases in kube-node-lease, with our controller's client settings
// (controller-runtime's cache, protobuf for Kubernetes' types, no gzip,
// managed fields dropped, the same rate limits), keeps them in informer
// caches and does nothing else: no handlers, no reconciles, no writes. The
// bench (test/bench) runs it as a third contender and reports the CPU and
// memory of the other two against it.
//
// It takes the flags of our controller that it needs, under the same names:
//
//	floor --kubeconfig=PATH --kube-api-qps=20 --kube-api-burst=30 \
//	    --health-probe-bind-address=127.0.0.1:8081 --pprof-bind-address=127.0.0.1:8082
//
// /readyz answers once both caches hold their first list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/cmdline"
)

// flags is the command line.
type flags struct {
	kubeconfig               string
	qps                      float64
	burst                    int
	healthProbe, pprofServer string
}

func main() {
	err := run(os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintf(os.Stderr, "floor: %v\n", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path to a kubeconfig file (required)")
	fs.Float64Var(&f.qps, "kube-api-qps", cmdline.DefaultKubeAPIQPS, "requests per second to the apiserver, sustained, as our controller's flag")
	fs.IntVar(&f.burst, "kube-api-burst", cmdline.DefaultKubeAPIBurst, "requests to the apiserver in a burst above --kube-api-qps")
	fs.StringVar(&f.healthProbe, "health-probe-bind-address", cmdline.DefaultHealthProbeBindAddress, `address that serves /healthz and /readyz; "0" disables it`)
	fs.StringVar(&f.pprofServer, "pprof-bind-address", "", `address that serves Go's profiles at /debug/pprof/; empty or "0" disables it`)
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("unexpected arguments: %v", fs.Args())
	case f.kubeconfig == "":
		return f, errors.New("--kubeconfig is required")
	case !(f.qps > 0) || f.burst <= 0:
		return f, fmt.Errorf("--kube-api-qps=%v --kube-api-burst=%d: both must be positive", f.qps, f.burst)
	}
	return f, nil
}

func run(args []string) error {
	f, err := parseFlags(args)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return fmt.Errorf("invalid --kubeconfig=%s: %w", f.kubeconfig, err)
	}
	ctrl.SetLogger(klog.Background())
	mgr, err := newManager(cfg, f)
	if err != nil {
		return err
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// newManager returns a manager whose cache holds Nodes and node Leases, and
// which is ready once they are listed. The settings that decide what a watch
// costs are our controller's (main.go); the cache's are taken from it.
func newManager(cfg *rest.Config, f flags) (ctrl.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	// As our controller, after kube-controller-manager: no gzip on watch
	// events. ContentType is left empty, so that controller-runtime asks
	// for protobuf for Kubernetes' types, as it does for our controller.
	cfg.DisableCompression = true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: f.healthProbe,
		PprofBindAddress:       f.pprofServer,
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	// Asked for before the manager starts, the informers start with its
	// cache, which the manager waits for before it runs anything else.
	for _, obj := range []client.Object{&corev1.Node{}, &coordinationv1.Lease{}} {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return nil, fmt.Errorf("watch %T: %w", obj, err)
		}
	}
	var synced atomic.Bool
	if err := mgr.Add(manager.RunnableFunc(func(context.Context) error {
		synced.Store(true)
		return nil
	})); err != nil {
		return nil, fmt.Errorf("add the sync marker: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add healthz check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", func(*http.Request) error {
		if !synced.Load() {
			return errors.New("the Node and Lease caches are not synced yet")
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("add readyz check: %w", err)
	}
	return mgr, nil
}
