package nodehealth

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// wantedNoExecute returns the node lifecycle NoExecute taint a node's Ready
// condition calls for, or "" for none: unreachable for Unknown, not-ready
// for False. A status no API version defines evicts nothing: the node may
// well be heartbeating, and the NoSchedule taint already keeps new pods off.
func wantedNoExecute(node *corev1.Node) string {
	ready := health.ReadyCondition(node)
	switch {
	case ready == nil:
		return ""
	case ready.Status == corev1.ConditionFalse:
		return corev1.TaintNodeNotReady
	case ready.Status == corev1.ConditionUnknown:
		return corev1.TaintNodeUnreachable
	default:
		return ""
	}
}

// hasLifecycleNoExecute reports whether the node carries either node
// lifecycle NoExecute taint.
func hasLifecycleNoExecute(node *corev1.Node) bool {
	return hasNoExecute(node, corev1.TaintNodeUnreachable) || hasNoExecute(node, corev1.TaintNodeNotReady)
}

// hasNoExecute reports whether the node carries the given NoExecute taint.
func hasNoExecute(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key && t.Effect == corev1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// reconcileNoExecute brings the node lifecycle NoExecute taints in line with
// the node's Ready condition and the disruption guard. Removing a taint and
// swapping one for the other happen at once; adding one waits for the
// guard. A node the guard holds (a partition freeze, every zone down, its
// pool's or zone's hold) loses the taint: held is a state the cluster shows,
// so that a new leader, or a hold lifted by a policy deleted and made again,
// finds no countdown running, and every pod's countdown starts again from
// the taint added once the hold lifts. It returns how long until the node
// should ask the guard again, or 0 when only a change of state can help.
func (r *Reconciler) reconcileNoExecute(ctx context.Context, node *corev1.Node, pool string, now time.Time) (time.Duration, error) {
	want := wantedNoExecute(node)
	if why := r.Guard.Hold(node.Name); want == "" || why != "" {
		r.Guard.CancelTaint(node.Name)
		if want != "" && hasLifecycleNoExecute(node) {
			ctrl.LoggerFrom(ctx).Info("Removing NoExecute taint while the node is held", "reason", why)
		}
		return 0, r.setNoExecute(ctx, node, "", now)
	}
	other := corev1.TaintNodeUnreachable
	if want == other {
		other = corev1.TaintNodeNotReady
	}
	switch {
	case hasNoExecute(node, want) && !hasNoExecute(node, other):
		r.Guard.CancelTaint(node.Name)
		return 0, nil
	case hasNoExecute(node, want) || hasNoExecute(node, other):
		// The node went from one kind of unhealthy to the other: swap at
		// once, keeping it tainted throughout.
		r.Guard.CancelTaint(node.Name)
		return 0, r.setNoExecute(ctx, node, want, now)
	}
	ok, wait, why := r.Guard.TakeTaint(node.Name, now)
	if !ok {
		ctrl.LoggerFrom(ctx).V(1).Info("NoExecute taint held back", "taint", want, "reason", why, "retryAfter", wait)
		if wait < 0 {
			return 0, nil
		}
		return max(wait, time.Millisecond), nil
	}
	if err := r.setNoExecute(ctx, node, want, now); err != nil {
		r.wakes.now(r.Guard.ReturnTaint(node.Name)...)
		return 0, err
	}
	taintsApplied.WithLabelValues(zoneLabel(node), pool).Inc()
	ctrl.LoggerFrom(ctx).Info("Tainted node NoExecute", "taint", want)
	return 0, nil
}

// setNoExecute leaves the node with exactly the given lifecycle NoExecute
// taint ("" for none); other taints are kept. A new taint is timed now by
// the apiserver's clock, unless it replaces the other lifecycle taint: a node that goes from not
// ready to unreachable, or back, is one failure, and its pods' countdowns
// keep the time the first taint was added. A flapping node must not restart
// them by swapping.
func (r *Reconciler) setNoExecute(ctx context.Context, node *corev1.Node, key string, now time.Time) error {
	out := make([]corev1.Taint, 0, len(node.Spec.Taints)+1)
	changed := false
	present := false
	var swapped *metav1.Time
	for _, t := range node.Spec.Taints {
		lifecycle := t.Effect == corev1.TaintEffectNoExecute &&
			(t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady)
		switch {
		case lifecycle && t.Key == key && !present:
			present = true
			out = append(out, t)
		case lifecycle:
			if t.TimeAdded != nil && (swapped == nil || t.TimeAdded.Before(swapped)) {
				swapped = t.TimeAdded
			}
			changed = true
		default:
			out = append(out, t)
		}
	}
	if key != "" && !present {
		added := metav1.NewTime(r.stamp(now))
		if swapped != nil && swapped.Before(&added) {
			added = *swapped
		}
		out = append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
		changed = true
	}
	if !changed {
		return nil
	}
	base := node.DeepCopy()
	node.Spec.Taints = out
	if err := r.Client.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patch node %q NoExecute taints: %w", node.Name, err)
	}
	return nil
}
