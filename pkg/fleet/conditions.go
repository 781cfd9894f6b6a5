package fleet

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// SetCondition sets a condition on a node's status, adding it or replacing
// the condition of its type, as an administrator or a maintenance operator
// does: MaintenanceInProgress before a reboot, Drained once the node is
// empty. The node's reporter is not involved, and keeps such a condition as
// it is when it reports: it writes only the conditions its setters own.
//
// A zero LastTransitionTime is now if the condition is new or its status
// differs from the stored one's, and the stored one's otherwise; a zero
// LastHeartbeatTime is now. The node need not be one of the fleet's.
func (f *Fleet) SetCondition(ctx context.Context, name string, c corev1.NodeCondition) error {
	err := f.updateConditions(ctx, name, func(conds []corev1.NodeCondition) ([]corev1.NodeCondition, bool) {
		return setCondition(conds, c, f.opts.Clock.Now()), true
	})
	if err != nil {
		return fmt.Errorf("fleet: set condition %s on node %q: %w", c.Type, name, err)
	}
	return nil
}

// ClearCondition removes the condition of type t from a node's status, as
// an administrator or a maintenance operator does once the maintenance is
// over. A condition already absent is no error.
func (f *Fleet) ClearCondition(ctx context.Context, name string, t corev1.NodeConditionType) error {
	err := f.updateConditions(ctx, name, func(conds []corev1.NodeCondition) ([]corev1.NodeCondition, bool) {
		return clearCondition(conds, t)
	})
	if err != nil {
		return fmt.Errorf("fleet: clear condition %s on node %q: %w", t, name, err)
	}
	return nil
}

// updateConditions writes the conditions change makes of the node's, when
// it says they changed. The node's reporter patches the status
// concurrently, so a write may conflict: the node is then read again and
// the change made anew on what the reporter wrote, which keeps both.
func (f *Fleet) updateConditions(ctx context.Context, name string,
	change func([]corev1.NodeCondition) ([]corev1.NodeCondition, bool)) error {
	nodes := f.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, changed := change(node.Status.Conditions)
		if !changed {
			return nil
		}
		node.Status.Conditions = conds
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// setCondition returns conds with c in place of the conditions of its type,
// or added, its zero times filled in at now. conds is not modified.
func setCondition(conds []corev1.NodeCondition, c corev1.NodeCondition, now time.Time) []corev1.NodeCondition {
	stamp := metav1.NewTime(now)
	if c.LastHeartbeatTime.IsZero() {
		c.LastHeartbeatTime = stamp
	}
	i := slices.IndexFunc(conds, func(s corev1.NodeCondition) bool { return s.Type == c.Type })
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = stamp
		if i >= 0 && conds[i].Status == c.Status && !conds[i].LastTransitionTime.IsZero() {
			c.LastTransitionTime = conds[i].LastTransitionTime
		}
	}
	if i < 0 {
		return append(slices.Clone(conds), c)
	}
	// A Node may carry a type twice; readers take the first, so a second
	// left behind would only contradict the condition set.
	out := make([]corev1.NodeCondition, 0, len(conds))
	for j, s := range conds {
		switch {
		case j == i:
			out = append(out, c)
		case s.Type != c.Type:
			out = append(out, s)
		}
	}
	return out
}

// clearCondition returns conds without the conditions of type t, and
// whether there were any. conds is not modified.
func clearCondition(conds []corev1.NodeCondition, t corev1.NodeConditionType) ([]corev1.NodeCondition, bool) {
	out := slices.DeleteFunc(slices.Clone(conds), func(c corev1.NodeCondition) bool { return c.Type == t })
	return out, len(out) != len(conds)
}
