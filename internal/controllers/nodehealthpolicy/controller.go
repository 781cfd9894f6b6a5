package nodehealthpolicy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "nodehealthpolicy-status"

// ReasonEvictionBlocked is the Warning event on a policy whose pool stopped
// allowing NoExecute tainting and eviction.
const ReasonEvictionBlocked = "EvictionBlocked"

// The permissions the reconciler uses, and no more.
// +kubebuilder:rbac:groups=health.nodelifecycle.io,resources=nodehealthpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=health.nodelifecycle.io,resources=nodehealthpolicies/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler keeps each policy's status: its pool's counts, zones and
// conditions.
type Reconciler struct {
	// Client reads from the manager's cache and writes status.
	Client client.Client
	// Source holds the policies in force.
	Source *Source
	// Model holds the pools' zone states and holds.
	Model interface {
		Snapshot() disruption.Snapshot
	}
	// Clock stamps condition transitions.
	Clock clock.PassiveClock
	// Recorder emits events on policies.
	Recorder events.EventRecorder
	// ResyncPeriod is how often a status is brought up to date with what
	// no watch reports, such as a partition freeze.
	ResyncPeriod time.Duration
	// ReconcileTimeout bounds each reconcile, and so every request it
	// sends. 0 means none.
	ReconcileTimeout time.Duration
}

// Reconcile brings one policy's status up to date.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &v1alpha1.NodeHealthPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		return ctrl.Result{}, fmt.Errorf("list nodes: %w", err)
	}
	// One snapshot, so that the freeze, the halt and the pool's zones
	// agree with each other.
	snap := r.Model.Snapshot()
	g := guardView{frozen: snap.Frozen, halted: snap.Halted, hold: snap.Held[p.Name], zones: map[string]disruption.ZoneSnapshot{}}
	for id, z := range snap.Zones {
		if id.Pool == p.Name && z.Size() > 0 {
			g.zones[id.Zone] = z
		}
	}
	st := computeStatus(p, r.Source.Set(ctx), nodes.Items, g, metav1.NewTime(r.Clock.Now()))
	if equality.Semantic.DeepEqual(st, p.Status) {
		return ctrl.Result{RequeueAfter: r.ResyncPeriod}, nil
	}
	was := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionEvictionAllowed)
	base := p.DeepCopy()
	p.Status = st
	if err := r.Client.Status().Patch(ctx, p, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patch NodeHealthPolicy %q status: %w", p.Name, err)
	}
	if now := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionEvictionAllowed); now != nil &&
		now.Status == metav1.ConditionFalse && (was == nil || was.Status != metav1.ConditionFalse || was.Reason != now.Reason) {
		ctrl.LoggerFrom(ctx).Info("Eviction blocked in the pool", "reason", now.Reason, "message", now.Message)
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonEvictionBlocked, "BlockEviction",
			"NoExecute tainting and eviction are blocked (%s): %s", now.Reason, now.Message)
	}
	return ctrl.Result{RequeueAfter: r.ResyncPeriod}, nil
}

// SetupWithManager registers the reconciler: it follows the policies
// through the Source, and watches the Node changes that can move a pool's
// counts.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// The Source queues every policy after it refreshed the set for a
		// change, so a status is never computed from an older set.
		WatchesRawSource(r.Source.Policies()).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allPolicies),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: nodeCountsChanged})).
		WithOptions(controller.Options{ReconciliationTimeout: r.ReconcileTimeout}).
		Complete(r)
}

// allPolicies maps a Node event to every policy: any of them may select it.
func (r *Reconciler) allPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &v1alpha1.NodeHealthPolicyList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing NodeHealthPolicies failed")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// nodeCountsChanged passes Node updates that can change which pool a node
// is in or whether it counts as healthy: labels and the Ready status.
func nodeCountsChanged(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(o.Labels, n.Labels) || health.ReadyStatus(o) != health.ReadyStatus(n)
}
