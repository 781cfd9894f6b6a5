package podeviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/parallel"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/patch"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

// deleteWorkers bounds how many pods of one node are deleted at once.
const deleteWorkers = 16

// The permissions the reconciler uses, and no more.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Gate says whether evictions may proceed now. The disruption guard closes
// it while the fault looks like the control plane's or the network's rather
// than the nodes'.
type Gate interface {
	// EvictionAllowed reports whether pods on the node may be deleted now,
	// and if not, why.
	EvictionAllowed(node *corev1.Node) (bool, string)
}

// Reconciler deletes the pods of one node whose NoExecute deadline passed.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the apiserver.
	Client client.Client
	// Pods is where the pods of a node are read and heard of; nil means
	// every pod in the cache Client reads, indexed by node (index.Register).
	Pods podscope.Pods
	// Clock decides which deadlines have passed.
	Clock clock.PassiveClock
	// Recorder emits events on evicted pods.
	Recorder events.EventRecorder
	// PodEvictionTimeout applies to pods without a toleration for the
	// unreachable or not-ready taint, on nodes no policy selects.
	PodEvictionTimeout time.Duration
	// Policies gives each node its pool's eviction timeout; nil means
	// PodEvictionTimeout everywhere.
	Policies policy.Source
	// Gate may hold evictions back; nil lets them all through.
	Gate Gate
	// Back, when set, is asked before pods are evicted for their node's
	// failure (a node lifecycle taint): it reads the node and its Lease
	// live and reports whether the node is back. A node that came back
	// while the watch lagged keeps its pods. nil asks nothing.
	Back func(ctx context.Context, node *corev1.Node) (bool, error)
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
	// untimed remembers when a NoExecute taint without timeAdded was first
	// seen, so that its deadline does not move on every look.
	untimed sync.Map // untimedKey -> time.Time
	// deleted holds the pods deleted but not yet shown deleting by the
	// cache.
	deleted deletions
	// retries spaces the attempts on pods whose eviction failed.
	retries retries
}

type untimedKey struct{ node, taint string }

// Reconcile deletes the node's pods whose deadline has passed and requeues
// for the next deadline.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	now := r.Clock.Now()
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			// Pods of a deleted node are the pod garbage collector's.
			r.pending.set(req.Name, 0)
			r.forgetUntimed(req.Name, nil)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get node %q: %w", req.Name, err)
	}
	noExecute := withoutStaleLifecycleTaints(node, r.noExecuteTaints(node, now))
	if len(noExecute) == 0 {
		r.pending.set(node.Name, 0)
		return ctrl.Result{}, nil
	}

	r.deleted.prune(now)
	r.retries.prune(now)
	pods, err := r.pods().On(ctx, node.Name)
	if errors.Is(err, podscope.ErrNotListed) {
		// The listing queues the node.
		ctrl.LoggerFrom(ctx).V(2).Info("Pods not listed yet; evicting them once they are")
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	timeout := r.timeout(ctx, node)
	var due []dueEviction
	var next time.Time
	pending := 0
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil {
			r.deleted.seen(pod.UID)
			continue
		}
		if r.deleted.pending(pod.UID) {
			continue
		}
		d := eviction.Deadline(pod, noExecute, timeout, now)
		at := d.At
		if retry := r.retries.notBefore(pod.UID, now); retry.After(at) {
			at = retry
		}
		switch {
		case !d.Evict:
		case at.After(now):
			pending++
			next = earliest(next, at)
			if r.Due != nil {
				r.Due(pod, at)
			}
		default:
			due = append(due, dueEviction{pod, d})
		}
	}

	var held []dueEviction
	if len(due) > 0 {
		if allowed, why := r.allowed(node); !allowed {
			due, held = r.dueDespiteHold(due, noExecute, timeout, now)
			ctrl.LoggerFrom(ctx).V(1).Info("Evictions held back", "pods", len(held), "reason", why)
		}
		back, err := r.back(ctx, node, due)
		if err != nil {
			return ctrl.Result{}, err
		}
		if back {
			var waiting []dueEviction
			due, waiting = r.dueDespiteHold(due, noExecute, timeout, now)
			held = append(held, waiting...)
			ctrl.LoggerFrom(ctx).Info("Node is back, read live; not evicting its pods for its failure", "pods", len(waiting))
		}
		retry, failed := r.evictAll(ctx, node, due, now)
		next = earliest(next, retry)
		pending += failed
	}
	r.pending.set(node.Name, pending+len(held))
	if len(held) > 0 {
		return ctrl.Result{RequeueAfter: r.BlockedRetry}, nil
	}
	if next.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: next.Sub(now)}, nil
}

// evictAll evicts the due pods. A pod whose eviction fails goes on a
// backoff of its own rather than the node's, so that the node's other pods
// still go at their deadlines: it returns how many failed and the earliest
// time to try them again.
func (r *Reconciler) evictAll(ctx context.Context, node *corev1.Node, due []dueEviction, now time.Time) (retry time.Time, failed int) {
	var mu sync.Mutex
	_ = parallel.ForEach(due, deleteWorkers, func(e dueEviction) error {
		err := r.evict(ctx, node, e.pod, e.decision)
		if err == nil {
			r.retries.forget(e.pod.UID)
			return nil
		}
		at := r.retries.failed(e.pod.UID, now)
		evictionFailures.Inc()
		ctrl.LoggerFrom(ctx).Error(err, "Eviction failed", "Pod", client.ObjectKeyFromObject(e.pod), "retryAt", at)
		mu.Lock()
		defer mu.Unlock()
		failed++
		retry = earliest(retry, at)
		return nil
	})
	return retry, failed
}

// pods returns where the node's pods are read: Pods, or the pods of the
// cache Client reads, indexed by node.
func (r *Reconciler) pods() podscope.Pods {
	if r.Pods != nil {
		return r.Pods
	}
	return podscope.Cluster{Reader: r.Client}
}

// earliest returns the earlier of two times, the zero time counting as
// none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// dueDespiteHold splits the due evictions of a node the gate holds: a hold
// stops the controller's own work, not an administrator's, so a pod due by
// a NoExecute taint other than the node lifecycle ones (such as
// node.kubernetes.io/out-of-service, set to recover from a non-graceful node
// shutdown) still goes, at the deadline that taint alone sets.
func (r *Reconciler) dueDespiteHold(due []dueEviction, taints []corev1.Taint, timeout time.Duration, now time.Time) (evict, held []dueEviction) {
	others := slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return eviction.IsLifecycleTaint(t.Key) })
	for _, e := range due {
		if d := eviction.Deadline(e.pod, others, timeout, now); d.Evict && !d.At.After(now) {
			evict = append(evict, dueEviction{e.pod, d})
		} else {
			held = append(held, e)
		}
	}
	return evict, held
}

// noExecuteTaints returns the node's NoExecute taints, with a first-seen
// time filled in for those that carry none.
func (r *Reconciler) noExecuteTaints(node *corev1.Node, now time.Time) []corev1.Taint {
	var out []corev1.Taint
	keep := map[string]bool{}
	for _, t := range node.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if t.TimeAdded == nil {
			seen, _ := r.untimed.LoadOrStore(untimedKey{node.Name, t.Key}, now)
			t.TimeAdded = &metav1.Time{Time: seen.(time.Time)}
			keep[t.Key] = true
		}
		out = append(out, t)
	}
	r.forgetUntimed(node.Name, keep)
	return out
}

// withoutStaleLifecycleTaints drops the unreachable and not-ready taints of
// a node that reports Ready again: the node health controller is about to
// remove them, and pods whose deadline passed while an eviction was held
// back must not go in that moment.
func withoutStaleLifecycleTaints(node *corev1.Node, taints []corev1.Taint) []corev1.Taint {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return taints
	}
	return slices.DeleteFunc(taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady
	})
}

// forgetUntimed drops the first-seen times of a node's untimed taints, but
// for those in keep.
func (r *Reconciler) forgetUntimed(node string, keep map[string]bool) {
	r.untimed.Range(func(k, _ any) bool {
		if key := k.(untimedKey); key.node == node && !keep[key.taint] {
			r.untimed.Delete(k)
		}
		return true
	})
}

// timeout returns the eviction timeout of the node's pool.
func (r *Reconciler) timeout(ctx context.Context, node *corev1.Node) time.Duration {
	if r.Policies == nil {
		return r.PodEvictionTimeout
	}
	return r.Policies.For(ctx, node).PodEvictionTimeout
}

// back reports whether the node, whose pods are due for its failure, is
// back after all: asked once, and only when a due eviction is for a node
// lifecycle taint.
func (r *Reconciler) back(ctx context.Context, node *corev1.Node, due []dueEviction) (bool, error) {
	if r.Back == nil {
		return false, nil
	}
	for _, e := range due {
		if eviction.IsLifecycleTaint(e.decision.Taint) {
			return r.Back(ctx, node)
		}
	}
	return false, nil
}

func (r *Reconciler) allowed(node *corev1.Node) (bool, string) {
	if r.Gate == nil {
		return true, ""
	}
	return r.Gate.EvictionAllowed(node)
}

// dueEviction is a pod whose deadline has passed, and what decided it.
type dueEviction struct {
	pod      *corev1.Pod
	decision eviction.Decision
}

// evict marks a pod as a disruption target and deletes it.
func (r *Reconciler) evict(ctx context.Context, node *corev1.Node, pod *corev1.Pod, d eviction.Decision) error {
	log := ctrl.LoggerFrom(ctx).WithValues("Pod", client.ObjectKeyFromObject(pod))
	r.eventEvicting(pod, node)

	base := pod.DeepCopy()
	if setDisruptionTarget(pod, metav1.NewTime(r.Clock.Now())) {
		// A strategic merge sets the one condition and keeps those another
		// writer set meanwhile; the UID keeps it off a new pod that took
		// the name since the cache saw this one.
		if err := r.Client.Status().Patch(ctx, pod, patch.ForUID(client.StrategicMergeFrom(base))); err != nil {
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
	r.deleted.done(pod.UID, r.Clock.Now())
	delay := r.Clock.Since(d.At)
	podDeletions.Inc()
	evictionDelay.Observe(delay.Seconds())
	log.Info("Evicted pod", "taint", d.Taint, "cause", d.Cause, "deadline", d.At, "delay", delay)
	return nil
}

// setDisruptionTarget sets the pod's DisruptionTarget condition and reports
// whether it changed.
func setDisruptionTarget(pod *corev1.Pod, now metav1.Time) bool {
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
			return false
		}
		*c = want
		return true
	}
	pod.Status.Conditions = append(pod.Status.Conditions, want)
	return true
}
