package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/shadow"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// DryRunEventSource is the component a dry run's events come from: never
// one of kube-controller-manager's, so that nothing filtering on those takes
// a dry run's events for the real controller's.
const DryRunEventSource = "node-lifecycle-controller-dry-run"

// writers are what the controllers write with: the manager's client and
// kube-controller-manager's event sources, or in a dry run a client that
// writes nothing and a recorder whose events land on the dry run's record.
type writers struct {
	client client.Client
	// apiReader reads live, without a client-side rate limit
	// (unthrottled): the reads that confirm a silence before a mark, and
	// before a node's pods are marked, come by the hundred when a zone
	// dies, and each one waited for is a late mark.
	apiReader client.Reader
	upstream  *upstreamEvents
	dry       *shadow.Shadow
}

// newWriters returns the writers opts call for. In a dry run it adds to mgr
// the watch of what the other controller does and the store of the record.
func newWriters(mgr ctrl.Manager, opts options.Options, upstream *upstreamEvents, holds shadow.Holds, clk clock.WithTicker) (*writers, error) {
	live, err := unthrottled(mgr)
	if err != nil {
		return nil, err
	}
	w := &writers{client: mgr.GetClient(), apiReader: live, upstream: upstream}
	if !opts.DryRun {
		return w, nil
	}
	ns, name, err := opts.DryRunRecordKey()
	if err != nil {
		return nil, err
	}
	own := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	w.dry = shadow.New(shadow.NewRecord(), clk, shadow.Retarget(upstream.For(DryRunEventSource), own))
	w.dry.Holds = holds
	w.client = w.dry.Client(mgr.GetClient())
	w.apiReader = w.dry.Reader(live)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return w.dry.Watch(ctx, mgr.GetCache())
	})); err != nil {
		return nil, fmt.Errorf("add dry-run watch: %w", err)
	}
	store := w.dry.Store(mgr.GetAPIReader(), mgr.GetClient(), types.NamespacedName{Namespace: ns, Name: name}, clk, opts.NodeMonitorPeriod)
	if err := mgr.Add(store); err != nil {
		return nil, fmt.Errorf("add dry-run record store: %w", err)
	}
	mgr.GetLogger().Info("Dry run: nothing is written to Nodes or Pods", "record", opts.DryRunRecord)
	return w, nil
}

// unthrottled returns a client that reads live, over the manager's
// connection, without a client-side rate limit: the apiserver's priority
// and fairness meters what it sends.
func unthrottled(mgr ctrl.Manager) (client.Reader, error) {
	c, err := client.New(unlimited(mgr.GetConfig()), client.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("unthrottled client: %w", err)
	}
	return c, nil
}

// unlimited returns a copy of cfg without a client-side rate limit, for the
// clients whose workers bound what they send and whose requests the
// apiserver's priority and fairness meters: the controllers' writes and
// the live reads that confirm a silence.
func unlimited(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	return cfg
}

// recorder returns the recorder of a controller whose events come from
// component.
func (w *writers) recorder(component string) events.EventRecorder {
	if w.dry != nil {
		return w.dry.Recorder
	}
	return w.upstream.For(component)
}

// policyRecorder returns the recorder of the NodeHealthPolicy status
// controller.
func (w *writers) policyRecorder(mgr ctrl.Manager, name string) events.EventRecorder {
	if w.dry != nil {
		return w.dry.Recorder
	}
	return mgr.GetEventRecorder(name)
}

// nudges returns the nodes a dry run's taints changed, nil outside one.
func (w *writers) nudges() <-chan event.TypedGenericEvent[*corev1.Node] {
	if w.dry == nil {
		return nil
	}
	return w.dry.Nudges()
}

// due returns what a dry run keeps eviction deadlines with, nil outside
// one.
func (w *writers) due() func(*corev1.Pod, time.Time) {
	if w.dry == nil {
		return nil
	}
	return w.dry.EvictionDue
}
