// Package lifecycletest gives a test suite real node lifecycle on its own
// apiserver, such as envtest's, in one call: the node lifecycle controllers
// with short timings, and a fleet of simulated nodes whose kubelets can be
// stopped and resumed.
//
//	env, err := lifecycletest.Start(ctx, cfg, lifecycletest.Options{Nodes: 3, PodsPerNode: 1})
//	...
//	defer env.Close()
//	env.Stop(env.Nodes()[0])
//	Eventually(ctx, env.Ready(env.Nodes()[0])).Should(Equal(corev1.ConditionUnknown))
//
// The functions it returns for waiting take a context and return a value
// and an error, the shape gomega's Eventually polls; a plain test polls them
// with k8s.io/apimachinery/pkg/util/wait.
//
// One Env runs on one apiserver: two on the same apiserver would be two
// node lifecycle controllers judging the same nodes. A test binary may
// start as many as it has apiservers, one after the other or at once.
package lifecycletest

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// Options describe the environment. Zero fields take the defaults named.
type Options struct {
	// Nodes is how many simulated nodes to run. Default 3, unless Pools
	// are given.
	Nodes int
	// Zones spreads the nodes over this many zones. Default 1.
	Zones int
	// NamePrefix starts the nodes' names, followed by a number. Default
	// "fleet-".
	NamePrefix string
	// Pools shape the nodes in groups instead of Nodes, Zones and
	// NamePrefix: each pool its own count, zones, name prefix, labels (to
	// select it by, as a NodeHealthPolicy's nodeSelector does) and taints.
	// Env.Pool lists a pool's nodes.
	Pools []fleet.Pool
	// PodsPerNode bound to each node, running and Ready. Default 0.
	PodsPerNode int
	// PodTolerations are added to every pod.
	PodTolerations []corev1.Toleration

	// Controllers configures the controllers; nil means FastOptions. Start
	// from FastOptions to change one timing.
	Controllers *options.Options
	// Manager holds the manager's options. Its metrics server and health
	// probes are off unless set; its cache settings are merged with what
	// the controllers need. controller-runtime's check that every
	// controller in the process has its own name is off unless
	// Controller.SkipNameValidation is set: each Env runs controllers of
	// the same names, and a test binary may start several.
	Manager ctrl.Options
	// Setup, when set, is called with the manager before it starts: add the
	// suite's own controllers there.
	Setup func(ctrl.Manager) error
}

// FastOptions returns the controllers' options with seconds where a cluster
// has minutes: a node is marked Unknown 2s after its last heartbeat, and its
// pods are evicted 5s after its NoExecute taint.
func FastOptions() options.Options {
	o := options.Default()
	o.NodeMonitorGracePeriod = 2 * time.Second
	o.NodeStartupGracePeriod = 3 * time.Second
	o.NodeMonitorPeriod = time.Second
	o.PodEvictionTimeout = 5 * time.Second
	o.NodeEvictionRate = 10
	return o
}

// Env is the controllers and a fleet running on one apiserver. Its Fleet
// stops, partitions and resumes nodes.
type Env struct {
	*fleet.Fleet
	// Manager runs the controllers.
	Manager ctrl.Manager

	stop context.CancelFunc
	done chan error
}

// Start runs the controllers and a fleet on the apiserver cfg names. It
// returns once every node is registered and, if asked for, its pods are
// Ready. Close stops both.
func Start(ctx context.Context, cfg *rest.Config, o Options) (*Env, error) {
	if o.Nodes == 0 && len(o.Pools) == 0 {
		o.Nodes = 3
	}
	opts := FastOptions()
	if o.Controllers != nil {
		opts = *o.Controllers
	}
	mgrOpts := o.Manager
	if mgrOpts.Metrics.BindAddress == "" {
		mgrOpts.Metrics = metricsserver.Options{BindAddress: "0"}
	}
	if mgrOpts.HealthProbeBindAddress == "" {
		mgrOpts.HealthProbeBindAddress = "0"
	}
	if mgrOpts.Controller.SkipNameValidation == nil {
		mgrOpts.Controller.SkipNameValidation = ptr.To(true)
	}
	mgr, err := controllers.NewManager(cfg, mgrOpts, opts)
	if err != nil {
		return nil, fmt.Errorf("lifecycletest: %w", err)
	}
	if o.Setup != nil {
		if err := o.Setup(mgr); err != nil {
			return nil, fmt.Errorf("lifecycletest: set up the suite's controllers: %w", err)
		}
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e := &Env{Manager: mgr, stop: stop, done: make(chan error, 1)}
	go func() { e.done <- mgr.Start(runCtx) }()

	// Leases a little shorter than the grace period, so that a node is
	// marked for its silence and not for a Lease that ran out.
	lease := max(1, int32(opts.NodeMonitorGracePeriod/time.Second))
	e.Fleet, err = fleet.Start(ctx, cfg, fleet.Options{
		Nodes: o.Nodes, Zones: o.Zones, NamePrefix: o.NamePrefix, Pools: o.Pools,
		PodsPerNode: o.PodsPerNode, PodTolerations: o.PodTolerations,
		LeaseDurationSeconds:      lease,
		NodeStatusUpdateFrequency: max(opts.NodeMonitorGracePeriod/2, 100*time.Millisecond),
		MaxBackoff:                opts.NodeMonitorGracePeriod / 2,
	})
	if err != nil {
		stop()
		return nil, errors.Join(fmt.Errorf("lifecycletest: %w", err), <-e.done)
	}
	return e, nil
}

// Close stops the fleet and the controllers, and returns the manager's
// error, if it failed.
func (e *Env) Close() error {
	e.Fleet.Close()
	e.stop()
	return <-e.done
}

// Ready returns a function that reads the node's Ready condition status, ""
// while it has none.
func (e *Env) Ready(node string) func(context.Context) (corev1.ConditionStatus, error) {
	return func(ctx context.Context) (corev1.ConditionStatus, error) {
		n, err := e.Client().CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if c := health.ReadyCondition(n); c != nil {
			return c.Status, nil
		}
		return "", nil
	}
}

// Taints returns a function that reads the keys of the node's taints of
// the given effect.
func (e *Env) Taints(node string, effect corev1.TaintEffect) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		n, err := e.Client().CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		var keys []string
		for _, t := range n.Spec.Taints {
			if t.Effect == effect {
				keys = append(keys, t.Key)
			}
		}
		return keys, nil
	}
}

// Pods returns a function that counts the fleet's pods on the node that
// are not being deleted.
func (e *Env) Pods(node string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		pods, err := e.Client().CoreV1().Pods(metav1.NamespaceAll).List(ctx,
			metav1.ListOptions{LabelSelector: fleet.PodLabel + "=" + node})
		if err != nil {
			return 0, err
		}
		live := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				live++
			}
		}
		return live, nil
	}
}
