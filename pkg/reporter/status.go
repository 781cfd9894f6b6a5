package reporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/klog/v2"
)

// syncStatus reports the node's status if it must be; a failure waits for
// the next sync. A Node found deleted is reported missing at every sync and
// never registered again: like a kubelet's, the reporter's Node is created
// once, by Run, and whoever deletes it means it to be gone.
func (r *Reporter) syncStatus(ctx context.Context) {
	if err := r.updateStatus(ctx); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Failed to report node status, will retry",
			"retryAfter", r.cfg.NodeStatusUpdateFrequency)
	}
}

// updateStatus makes up to maxTries attempts at one status sync. A Node
// found missing ends the sync at once: every read and write that can say so
// goes to etcd, and trying again would only get the same answer.
func (r *Reporter) updateStatus(ctx context.Context) error {
	var err error
	for try := range maxTries {
		if err = r.tryUpdateStatus(ctx, try); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("report status of node %q: %w", r.cfg.NodeName, err)
		}
		if try > 0 {
			r.onRepeatedFailure()
		}
		klog.FromContext(ctx).V(2).Info("Node status sync failed", "try", try+1, "error", err.Error())
	}
	return fmt.Errorf("report status of node %q: %d tries failed: %w", r.cfg.NodeName, maxTries, err)
}

// tryUpdateStatus computes the node's status against the Node and patches
// it when it must be reported. The first try takes the Node from the
// reporter's watch (see watchNode); it reads it from etcd only while the
// watch has none, and at later tries, in case a stale Node was what failed
// the earlier ones.
func (r *Reporter) tryUpdateStatus(ctx context.Context, try int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	nodes := r.client.CoreV1().Nodes()
	node := r.watchedNode()
	if try > 0 || node == nil {
		var err error
		if node, err = nodes.Get(ctx, r.cfg.NodeName, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get node %q: %w", r.cfg.NodeName, err)
		}
	}

	now := r.clock.Now()
	next, report, err := r.nextStatus(node, now)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to compute part of the node status")
	}
	if !report {
		return nil
	}
	patch, err := statusPatch(&node.Status, &next.Status)
	if err != nil {
		return fmt.Errorf("patch status of node %q: %w", r.cfg.NodeName, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := nodes.Patch(ctx, r.cfg.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("patch status of node %q: %w", r.cfg.NodeName, err)
	}
	// A report made because the interval passed keeps the node's phase; one
	// made because the status changed, or the first of an adopted Node,
	// draws a new one.
	if r.lastReport.IsZero() || !r.dueForReport(now) {
		r.reportDelay = r.reportSpread()
	} else {
		r.reportDelay = 0
	}
	r.lastReport = now
	klog.FromContext(ctx).V(4).Info("Reported node status")
	return nil
}

// nextStatus computes the status of node at now and says whether it must be
// reported: when it changed meaningfully, or when the report interval has
// passed since the last report (see dueForReport). The error, if any, is of
// setters that failed; next is still usable.
func (r *Reporter) nextStatus(node *corev1.Node, now time.Time) (next *corev1.Node, report bool, err error) {
	next, err = r.computeNode(node, now)
	report = r.dueForReport(now) || statusChanged(&node.Status, &next.Status)
	return next, report, err
}

// dueForReport says whether an unchanged status must be written at now:
// when it never was, or when NodeStatusReportFrequency, spread by the delay
// drawn at the last report of a change, has passed since the last report.
// A registration, and the first report of an adopted Node, count as such a
// report, so that nodes started together do not report together ever after.
func (r *Reporter) dueForReport(now time.Time) bool {
	return r.lastReport.IsZero() || !now.Before(r.lastReport.Add(r.cfg.NodeStatusReportFrequency+r.reportDelay))
}

// computeNode runs the setters on a copy of base at now and stamps the times
// of the conditions they set against base. The copy is returned even if some
// setters failed, with their errors.
func (r *Reporter) computeNode(base *corev1.Node, now time.Time) (*corev1.Node, error) {
	// Managed fields can outweigh the rest of a Node; setters never need
	// them, so they are not copied.
	meta := base.ObjectMeta
	meta.ManagedFields = nil
	node := &corev1.Node{
		ObjectMeta: *meta.DeepCopy(),
		Spec:       *base.Spec.DeepCopy(),
		Status:     *base.Status.DeepCopy(),
	}
	var errs []error
	for _, set := range r.setters {
		if err := set(node, now); err != nil {
			errs = append(errs, err)
		}
	}
	stampConditions(base.Status.Conditions, node.Status.Conditions, now)
	if len(errs) > 0 {
		return node, fmt.Errorf("set status of node %q: %w", r.cfg.NodeName, errors.Join(errs...))
	}
	return node, nil
}

// stampConditions sets the times of the next conditions a setter set in
// this pass: every heartbeat is now; a transition time stays that of the
// previous condition of the type unless its status changed.
//
// A condition the setters left exactly as it was in prev, times included,
// belongs to another writer (an administrator, a maintenance operator, a
// cloud provider) and keeps its times, so the status patch leaves it out:
// like a careful kubelet, the reporter writes only the conditions it owns,
// and neither makes a stale foreign condition look fresh nor brings back
// one its owner removed meanwhile. A condition a setter set always differs
// from the stored one, since SetCondition writes it without times and the
// stored one has them.
func stampConditions(prev, next []corev1.NodeCondition, now time.Time) {
	stamp := metav1.NewTime(now)
	for i := range next {
		c := &next[i]
		if unchanged(prev, c) {
			continue
		}
		c.LastHeartbeatTime = stamp
		c.LastTransitionTime = stamp
		if p := findCondition(prev, c.Type); p != nil && p.Status == c.Status {
			c.LastTransitionTime = p.LastTransitionTime
		}
	}
}

// unchanged says whether c is one of the prev conditions as it was. Any
// condition of its type counts, not only the first: a Node may carry two of
// one type, and the second, which no setter replaces, is not theirs either.
func unchanged(prev []corev1.NodeCondition, c *corev1.NodeCondition) bool {
	for i := range prev {
		if prev[i].Type == c.Type && equality.Semantic.DeepEqual(prev[i], *c) {
			return true
		}
	}
	return false
}

func findCondition(conditions []corev1.NodeCondition, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// statusChanged says whether next differs meaningfully from prev: in any
// condition other than by its heartbeat time, or semantically anywhere else.
func statusChanged(prev, next *corev1.NodeStatus) bool {
	if conditionsChanged(prev.Conditions, next.Conditions) {
		return true
	}
	a, b := *prev, *next
	a.Conditions, b.Conditions = nil, nil
	return !equality.Semantic.DeepEqual(a, b)
}

func conditionsChanged(prev, next []corev1.NodeCondition) bool {
	if len(prev) != len(next) {
		return true
	}
	for i := range next {
		n := &next[i]
		p := findCondition(prev, n.Type)
		if p == nil || p.Status != n.Status || p.Reason != n.Reason || p.Message != n.Message ||
			!p.LastTransitionTime.Equal(&n.LastTransitionTime) {
			return true
		}
	}
	return false
}

// statusPatch is the strategic merge patch that turns the status prev into
// next, touching nothing but the status.
func statusPatch(prev, next *corev1.NodeStatus) ([]byte, error) {
	// Addresses merge by type, which is not unique (a node may have two
	// InternalIPs), so merging changed addresses could mix old and new ones:
	// they are replaced whole instead.
	replaceAddresses := len(prev.Addresses) > 0 && !equality.Semantic.DeepEqual(prev.Addresses, next.Addresses)
	diffed := *next
	if replaceAddresses {
		diffed.Addresses = prev.Addresses
	}
	prevJSON, err := json.Marshal(corev1.Node{Status: *prev})
	if err != nil {
		return nil, fmt.Errorf("marshal previous status: %w", err)
	}
	nextJSON, err := json.Marshal(corev1.Node{Status: diffed})
	if err != nil {
		return nil, fmt.Errorf("marshal next status: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(prevJSON, nextJSON, corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("compute status patch: %w", err)
	}
	if !replaceAddresses {
		return patch, nil
	}
	var fields map[string]any
	if err := json.Unmarshal(patch, &fields); err != nil {
		return nil, fmt.Errorf("read status patch: %w", err)
	}
	status, _ := fields["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		fields["status"] = status
	}
	addresses := make([]any, 0, len(next.Addresses)+1)
	for _, a := range next.Addresses {
		addresses = append(addresses, map[string]any{"type": string(a.Type), "address": a.Address})
	}
	status["addresses"] = append(addresses, map[string]any{"$patch": "replace"})
	patch, err = json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("write status patch: %w", err)
	}
	return patch, nil
}
