package nodehealth

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/taints"
)

// markUnreachable marks a node whose deadline passed. It returns the node as
// it now is, the verdict that stands, and whether it marked the node.
//
// A mark costs two requests in the common case: the node's Lease read live,
// and the mark itself, a status patch locked to the resourceVersion of the
// cached node. A heartbeat the cache had not shown yet cancels the mark
// either way: one in the Lease is in the live read, one in the Node's status
// changed its resourceVersion and fails the patch. Only then is the Node
// read live (markLive), and the node judged again from what the apiserver
// holds.
func (r *Reconciler) markUnreachable(ctx context.Context, cached *corev1.Node, v health.Verdict, grace health.Grace, now time.Time) (*corev1.Node, health.Verdict, bool, error) {
	if _, changed := health.MarkUnknown(cached.Status.Conditions, cached.CreationTimestamp, metav1.NewTime(now)); !changed {
		return cached, v, false, nil
	}
	// Its pods are needed once it is marked: have them listed meanwhile.
	r.pods().Expect(cached.Name)
	lease, err := getLease(ctx, r.APIReader, cached.Name)
	if err != nil {
		return nil, v, false, fmt.Errorf("read lease live: %w", err)
	}
	node, v, marked, err := r.markIfSilent(ctx, cached, lease, v, grace)
	if !apierrors.IsConflict(err) {
		return node, v, marked, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Node changed since the cache saw it; reading it live before marking")
	return r.markLive(ctx, cached, v, grace)
}

// markLive reads the node and its Lease live, side by side, so that a mark
// waits for one round trip and not two, and marks the node if they show no
// heartbeat since its deadline.
func (r *Reconciler) markLive(ctx context.Context, cached *corev1.Node, v health.Verdict, grace health.Grace) (*corev1.Node, health.Verdict, bool, error) {
	type leaseRead struct {
		lease *coordinationv1.Lease
		err   error
	}
	leaseDone := make(chan leaseRead, 1)
	go func() {
		lease, err := getLease(ctx, r.APIReader, cached.Name)
		leaseDone <- leaseRead{lease, err}
	}()
	node := &corev1.Node{}
	nodeErr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cached), node)
	read := <-leaseDone
	if nodeErr != nil {
		return nil, v, false, fmt.Errorf("read node %q live: %w", cached.Name, nodeErr)
	}
	if read.err != nil {
		return nil, v, false, fmt.Errorf("read lease live: %w", read.err)
	}
	return r.markIfSilent(ctx, node, read.lease, v, grace)
}

// markIfSilent marks the node Unknown unless the node, as given, or its
// Lease, read live, shows a heartbeat that moves its deadline. The patch is
// locked to node's resourceVersion: it fails with a conflict if the Node
// changed since.
func (r *Reconciler) markIfSilent(ctx context.Context, node *corev1.Node, lease *coordinationv1.Lease, v health.Verdict, grace health.Grace) (*corev1.Node, health.Verdict, bool, error) {
	log := ctrl.LoggerFrom(ctx)
	// What the reads show is as of now, not as of the reconcile's start:
	// a read held up by a hung apiserver returns long after it was sent.
	now := r.Clock.Now()
	obs := r.Tracker.Observe(node.Name, node.UID, health.PulseOf(node, lease), now)
	if obs.Renewed {
		log.V(1).Info("Live read found a heartbeat the cache had not shown; not marking",
			"deadline", v.Deadline)
		return node, health.Judge(node, obs.LastHeartbeat, grace, now), false, nil
	}
	if r.Sight != nil {
		if blind, since := r.Sight.Blind(); blind {
			// The live read was sent before an outage and answered after
			// it, before any request sent since: its kubelets have had
			// no chance to write yet.
			return nil, v, false, fmt.Errorf("node %q: %w since %v", node.Name, errBlind, since)
		}
	}
	if again := health.Judge(node, obs.LastHeartbeat, grace, now); !again.Expired {
		// An apiserver outage ended while the node was read, and was
		// excused: the node's deadline moved on.
		log.V(1).Info("Deadline moved while the node was read; not marking",
			"deadline", v.Deadline, "newDeadline", again.Deadline)
		return node, again, false, nil
	}

	conds, changed := health.MarkUnknown(node.Status.Conditions, node.CreationTimestamp, metav1.NewTime(r.stamp(now)))
	if !changed {
		return node, v, false, nil
	}
	wasReady := health.ReadyCondition(node)
	base := node
	node = node.DeepCopy()
	node.Status.Conditions = conds
	if err := r.Client.Status().Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, v, false, fmt.Errorf("patch node %q status: %w", node.Name, err)
	}

	delay := r.Clock.Since(v.Deadline)
	markDelay.Observe(delay.Seconds())
	log.Info("Marked node unreachable", "lastHeartbeat", obs.LastHeartbeat, "deadline", v.Deadline,
		"delay", delay, "neverReported", v.NeverReported)
	// As with kube-controller-manager, only a node the mark took from Ready
	// is announced: one already NotReady, or never ready, lost nothing.
	if wasReady != nil && wasReady.Status == corev1.ConditionTrue {
		r.eventNotReady(node)
	}
	return node, v, true, nil
}

// reconcileTaints brings the node's NoSchedule condition taints in line with
// its conditions.
func (r *Reconciler) reconcileTaints(ctx context.Context, node *corev1.Node, now time.Time) error {
	want, changed := taints.ReconcileNoSchedule(node, metav1.NewTime(now))
	if !changed {
		return nil
	}
	base := node.DeepCopy()
	node.Spec.Taints = want
	if err := r.Client.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patch node %q taints: %w", node.Name, err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Updated NoSchedule taints", "wanted", taints.WantedNoSchedule(node))
	return nil
}

// getLease returns the node's Lease, or nil when it has none.
func getLease(ctx context.Context, c client.Reader, name string) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{}
	err := c.Get(ctx, client.ObjectKey{Namespace: LeaseNamespace, Name: name}, lease)
	switch {
	case err == nil:
		return lease, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("get lease %s/%s: %w", LeaseNamespace, name, err)
	}
}
