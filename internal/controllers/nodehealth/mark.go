package nodehealth

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// markUnreachable marks a node whose deadline passed. It returns the node and
// its Lease as they now are, and whether it marked the node.
//
// A mark costs two requests in the common case: the node's Lease read live,
// and the mark itself, a status patch locked to the resourceVersion of the
// cached node. A heartbeat the cache had not shown yet cancels the mark
// either way: one in the Lease is in the live read, one in the Node's status
// changed its resourceVersion and fails the patch. Only then is the Node
// read live (markLive), and the node judged again from what the apiserver
// holds.
func (r *Reconciler) markUnreachable(ctx context.Context, cached *corev1.Node, v health.Verdict, grace health.Grace) (*corev1.Node, *coordinationv1.Lease, bool, error) {
	// Its pods are needed once it is marked: have them listed meanwhile.
	r.pods().Expect(cached.Name)
	lease, err := getLease(ctx, r.APIReader, cached.Name)
	if err != nil {
		return nil, nil, false, fmt.Errorf("read lease live: %w", err)
	}
	node, marked, err := r.markIfSilent(ctx, cached, lease, v, grace)
	if !apierrors.IsConflict(err) {
		return node, lease, marked, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Node changed since the cache saw it; reading it live before marking")
	return r.markLive(ctx, cached, v, grace)
}

// markLive reads the node and its Lease live, side by side, so that a mark
// waits for one round trip and not two, and marks the node if they show no
// heartbeat since its deadline.
func (r *Reconciler) markLive(ctx context.Context, cached *corev1.Node, v health.Verdict, grace health.Grace) (*corev1.Node, *coordinationv1.Lease, bool, error) {
	node, lease, err := r.readLive(ctx, cached.Name)
	if err != nil {
		return nil, nil, false, err
	}
	node, marked, err := r.markIfSilent(ctx, node, lease, v, grace)
	return node, lease, marked, err
}

// markIfSilent marks the node Unknown unless the node, as given, or its
// Lease, read live, shows a heartbeat that moves its deadline. The patch is
// locked to node's resourceVersion: it fails with a conflict if the Node
// changed since.
func (r *Reconciler) markIfSilent(ctx context.Context, node *corev1.Node, lease *coordinationv1.Lease, v health.Verdict, grace health.Grace) (*corev1.Node, bool, error) {
	log := ctrl.LoggerFrom(ctx)
	// What the reads show is as of now, not as of the reconcile's start:
	// a read held up by a hung apiserver returns long after it was sent.
	now := r.Clock.Now()
	again, silent := r.model().Confirm(node, lease, grace, now)
	if !silent && again.Deadline.After(v.Deadline) {
		// A heartbeat the cache had not shown, or an apiserver outage that
		// ended while the node was read, and was excused: the node's
		// deadline moved on.
		log.V(1).Info("Live read found the node heard since its deadline; not marking",
			"deadline", v.Deadline, "newDeadline", again.Deadline)
		return node, false, nil
	}
	if r.Sight != nil {
		if blind, since := r.Sight.Blind(); blind {
			// The live read was sent before an outage and answered after
			// it, before any request sent since: its kubelets have had
			// no chance to write yet.
			return nil, false, fmt.Errorf("node %q: %w since %v", node.Name, errBlind, since)
		}
	}
	if !silent {
		return node, false, nil
	}

	conds, changed := health.MarkUnknown(node.Status.Conditions, node.CreationTimestamp, metav1.NewTime(r.stamp(now)))
	if !changed {
		return node, false, nil
	}
	wasReady := health.ReadyCondition(node)
	base := node
	node = node.DeepCopy()
	node.Status.Conditions = conds
	if err := r.Client.Status().Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, false, fmt.Errorf("patch node %q status: %w", node.Name, err)
	}

	delay := r.Clock.Since(v.Deadline)
	markDelay.Observe(delay.Seconds())
	log.Info("Marked node unreachable", "deadline", v.Deadline,
		"delay", delay, "neverReported", v.NeverReported)
	// As with kube-controller-manager, only a node the mark took from Ready
	// is announced: one already NotReady, or never ready, lost nothing.
	if wasReady != nil && wasReady.Status == corev1.ConditionTrue {
		r.eventNotReady(node)
	}
	return node, true, nil
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
