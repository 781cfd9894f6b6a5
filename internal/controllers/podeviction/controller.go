package podeviction

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/patch"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety/act"
)

// The permissions the reconciler uses, and no more.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconciler deletes the pods of one node whose NoExecute deadline passed.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the apiserver.
	Client client.Client
	// Pods is where the pods of a node are read and heard of; nil means
	// every pod in the cache Client reads, indexed by node (index.Register).
	Pods podscope.Pods
	// Clock decides which deadlines have passed: the clock the taints'
	// timeAdded is written by.
	Clock clock.PassiveClock
	// LocalClock is the clock heartbeats are timed on, which tells whether a
	// node read live is back; nil means Clock.
	LocalClock clock.PassiveClock
	// APIReader reads a node and its Lease from the apiserver, before pods
	// are evicted for the node's failure; nil means Client.
	APIReader client.Reader
	// Executor carries out the safety model's decision on which pods go:
	// the model that the node health controller's looks decide with.
	Executor *act.Executor
	// Recorder emits events on evicted pods.
	Recorder events.EventRecorder
	// PodEvictionTimeout applies to pods without a toleration for the
	// unreachable or not-ready taint, on nodes no policy selects, and
	// Grace tells their node back.
	PodEvictionTimeout time.Duration
	Grace              health.Grace
	// Policies gives each node its pool's eviction timeout; nil means
	// PodEvictionTimeout everywhere.
	Policies Policies
	// BlockedRetry is how soon a node whose evictions the gate held back is
	// looked at again.
	BlockedRetry time.Duration
	// ReconcileTimeout bounds each reconcile, and so every request it
	// sends: a request stuck on a dead connection fails and is retried
	// instead of holding a worker for good. 0 means none.
	ReconcileTimeout time.Duration
	// Nudges, when set, sends nodes to look at again whose NoExecute taints
	// changed where no watch shows it: in a dry run (package shadow).
	Nudges <-chan event.TypedGenericEvent[*corev1.Node]
	// Due, when set, is told the deadline of each pod whose eviction is
	// still ahead: a dry run keeps them, to say when it would have evicted
	// a pod the other controller evicted first.
	Due func(pod *corev1.Pod, at time.Time)

	pending pendingCounts
	// attempts remembers the pods deleted that the cache does not show
	// deleting yet, and spaces the attempts on pods whose eviction failed.
	attempts attempts
}

// Reconcile deletes the node's pods whose deadline has passed, where the
// safety model lets them go (act.Executor.Evict), and requeues for the next
// deadline.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	now := r.Clock.Now()
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			// Pods of a deleted node are the pod garbage collector's.
			r.pending.set(req.Name, 0)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get node %q: %w", req.Name, err)
	}
	var pods []corev1.Pod
	if hasNoExecute(node) {
		var err error
		if pods, err = r.pods().On(ctx, node.Name); errors.Is(err, podscope.ErrNotListed) {
			// The listing queues the node.
			ctrl.LoggerFrom(ctx).V(2).Info("Pods not listed yet; evicting them once they are")
			return ctrl.Result{}, nil
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}
	r.attempts.prune(now)
	var next time.Time
	pending, candidates := 0, pods[:0:0]
	for _, pod := range pods {
		switch deleted, retry := r.attempts.of(pod.UID, now); {
		case pod.DeletionTimestamp != nil:
			r.attempts.forget(pod.UID)
		case deleted:
		case retry.After(now):
			pending++
			next = health.Earliest(next, retry)
		default:
			candidates = append(candidates, pod)
		}
	}
	p := &port{r: r, now: now}
	out, err := r.Executor.Evict(ctx, p, node, candidates, r.settings(ctx, node), now)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.Due != nil {
		for _, w := range out.Waiting {
			r.Due(w.Pod, w.Decision.At)
		}
	}
	r.pending.set(node.Name, pending+len(out.Waiting)+len(out.Failed)+out.Held)
	if out.Held > 0 {
		return ctrl.Result{RequeueAfter: r.BlockedRetry}, nil
	}
	if next = health.Earliest(health.Earliest(next, out.Next), p.retry); next.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: next.Sub(now)}, nil
}

// port is the executor's way to the apiserver for one reconcile.
type port struct {
	r   *Reconciler
	now time.Time

	mu sync.Mutex
	// retry is the earliest time a pod whose eviction failed may be tried
	// again.
	retry time.Time
}

// Now returns the time heartbeats are timed by.
func (p *port) Now() time.Time {
	if p.r.LocalClock == nil {
		return p.r.Clock.Now()
	}
	return p.r.LocalClock.Now()
}

// Live reads the node and its Lease from the apiserver.
func (p *port) Live(ctx context.Context, name string) (*corev1.Node, *coordinationv1.Lease, error) {
	reader := p.r.APIReader
	if reader == nil {
		reader = p.r.Client
	}
	return nodehealth.ReadLive(ctx, reader, name)
}

// Evict evicts the pod. A pod whose eviction fails goes on a backoff of its
// own rather than the node's, so that the node's other pods still go at
// their deadlines.
func (p *port) Evict(ctx context.Context, node *corev1.Node, pod *corev1.Pod, d eviction.Decision) error {
	err := p.r.evict(ctx, node, pod, d)
	if err == nil {
		return nil
	}
	at := p.r.attempts.failed(pod.UID, p.now)
	evictionFailures.Inc()
	ctrl.LoggerFrom(ctx).Error(err, "Eviction failed", "Pod", client.ObjectKeyFromObject(pod), "retryAt", at)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retry = health.Earliest(p.retry, at)
	return err
}

// pods returns where the node's pods are read: Pods, or the pods of the
// cache Client reads, indexed by node.
func (r *Reconciler) pods() podscope.Pods {
	if r.Pods != nil {
		return r.Pods
	}
	return podscope.Cluster{Reader: r.Client}
}

// settings returns the settings of the node's pool.
func (r *Reconciler) settings(ctx context.Context, node *corev1.Node) policy.Settings {
	if r.Policies == nil {
		return policy.Settings{PodEvictionTimeout: r.PodEvictionTimeout, Grace: r.Grace}
	}
	return r.Policies.For(ctx, node)
}

// evict marks a pod as a disruption target and deletes it.
func (r *Reconciler) evict(ctx context.Context, node *corev1.Node, pod *corev1.Pod, d eviction.Decision) error {
	log := ctrl.LoggerFrom(ctx).WithValues("Pod", client.ObjectKeyFromObject(pod))
	r.eventEvicting(pod, node)

	if target, ok := setDisruptionTarget(pod, metav1.NewTime(r.Clock.Now())); ok {
		// A strategic merge sets the one condition and keeps those another
		// writer set meanwhile; the UID keeps it off a new pod that took
		// the name since the cache saw this one.
		if err := r.Client.Status().Patch(ctx, pod, patch.PodCondition(target)); err != nil {
			if patch.Replaced(err) {
				return nil
			}
			return fmt.Errorf("patch pod %s/%s status: %w", pod.Namespace, pod.Name, err)
		}
	}
	if err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone already, or replaced by a new pod of the same name.
			return nil
		}
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r.attempts.deleted(pod.UID, r.Clock.Now())
	delay := r.Clock.Since(d.At)
	podDeletions.Inc()
	evictionDelay.Observe(delay.Seconds())
	log.Info("Evicted pod", "taint", d.Taint, "cause", d.Cause, "deadline", d.At, "delay", delay)
	return nil
}

// setDisruptionTarget sets the pod's DisruptionTarget condition, and returns
// it and whether it changed.
func setDisruptionTarget(pod *corev1.Pod, now metav1.Time) (corev1.PodCondition, bool) {
	want := corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: disruptionReason, Message: disruptionMessage, LastTransitionTime: now,
	}
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
			return want, false
		}
		*c = want
		return want, true
	}
	pod.Status.Conditions = append(pod.Status.Conditions, want)
	return want, true
}

// Policies is the controller's view of the NodeHealthPolicies in force
// (nodehealthpolicy.Source).
type Policies interface {
	// For returns the settings the node follows.
	For(ctx context.Context, node *corev1.Node) policy.Settings
	// Nodes subscribes the controller to policy changes: after each, the
	// returned source queues the nodes keep accepts (every node when keep
	// is nil), once For answers with the new policies.
	Nodes(keep func(*corev1.Node) bool) source.TypedSource[reconcile.Request]
}
