package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// Options configures the controllers. The zero value is not valid; start
// from DefaultOptions.
type Options struct {
	// NodeMonitorGracePeriod is how long a node that has posted a Ready
	// condition may go without a heartbeat before it is marked Unknown.
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod is the grace period of a node that has never
	// posted a Ready condition.
	NodeStartupGracePeriod time.Duration
	// NodeMonitorPeriod is the period of the safety resync that catches
	// deadlines a requeue missed.
	NodeMonitorPeriod time.Duration
	// PodEvictionTimeout is how long pods without a toleration for the
	// unreachable or not-ready NoExecute taint stay on a tainted node.
	PodEvictionTimeout time.Duration
	// Clock drives every deadline; nil means the real clock.
	Clock clock.WithTicker
}

// DefaultOptions returns kube-controller-manager's timings.
func DefaultOptions() Options {
	return Options{
		NodeMonitorGracePeriod: 50 * time.Second,
		NodeStartupGracePeriod: time.Minute,
		NodeMonitorPeriod:      5 * time.Second,
		PodEvictionTimeout:     5 * time.Minute,
	}
}

func (o Options) validate() error {
	if o.NodeMonitorGracePeriod <= 0 || o.NodeStartupGracePeriod <= 0 || o.NodeMonitorPeriod <= 0 || o.PodEvictionTimeout <= 0 {
		return errors.New("grace periods, the monitor period and the pod eviction timeout must be positive")
	}
	return nil
}

// CacheOptions returns the cache settings the controllers need: Leases are
// watched in kube-node-lease only, and managed fields, which nothing here
// reads, are dropped from every cached object.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{corev1.NamespaceNodeLease: {}}},
		},
	}
}

// SetupWithManager adds the node lifecycle controllers to mgr. The manager's
// cache must be built with CacheOptions.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := opts.validate(); err != nil {
		return fmt.Errorf("controllers: %w", err)
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return EnsureLeaseNamespace(ctx, mgr.GetAPIReader(), mgr.GetClient())
	})); err != nil {
		return fmt.Errorf("add lease namespace check: %w", err)
	}
	r := &nodehealth.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Clock:     clk,
		Recorder:  mgr.GetEventRecorder(nodehealth.ControllerName),
		Tracker:   health.NewTracker(),
		Grace:     health.Grace{Monitor: opts.NodeMonitorGracePeriod, Startup: opts.NodeStartupGracePeriod},
	}
	if err := r.SetupWithManager(mgr, opts.NodeMonitorPeriod, clk); err != nil {
		return fmt.Errorf("set up node health controller: %w", err)
	}
	pe := &podeviction.Reconciler{
		Client:             mgr.GetClient(),
		Clock:              clk,
		Recorder:           mgr.GetEventRecorder(podeviction.ControllerName),
		PodEvictionTimeout: opts.PodEvictionTimeout,
		BlockedRetry:       opts.NodeMonitorPeriod,
	}
	if err := pe.SetupWithManager(context.Background(), mgr); err != nil {
		return fmt.Errorf("set up pod eviction controller: %w", err)
	}
	return nil
}

// EnsureLeaseNamespace creates kube-node-lease when it is missing. The
// apiserver normally creates it; a control plane that does not leaves the
// kubelets nowhere to write their Leases.
func EnsureLeaseNamespace(ctx context.Context, r client.Reader, w client.Writer) error {
	ns := &corev1.Namespace{}
	err := r.Get(ctx, client.ObjectKey{Name: corev1.NamespaceNodeLease}, ns)
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get namespace %s: %w", corev1.NamespaceNodeLease, err)
	}
	ns.Name = corev1.NamespaceNodeLease
	if err := w.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", corev1.NamespaceNodeLease, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created namespace", "namespace", corev1.NamespaceNodeLease)
	return nil
}
