package status

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

// Event reasons the controller records on the kube-node-lease Namespace
// when a partition freeze starts and ends.
const (
	reasonFreeze      = "PartitionFreeze"
	reasonFreezeEnded = "PartitionFreezeEnded"
)

// Gather reads what a report needs from the apiserver: every Node, the node
// Leases, the NodeHealthPolicies when their CRD is installed, the freeze
// events, and the pods of the nodes that are not healthy. defaults are the
// settings of nodes no policy selects: the controller's flags.
func Gather(ctx context.Context, c client.Reader, defaults policy.Settings, now time.Time) (Input, error) {
	in := Input{Now: now}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		return in, fmt.Errorf("list nodes: %w", err)
	}
	in.Nodes = nodes.Items
	leases := &coordinationv1.LeaseList{}
	if err := c.List(ctx, leases, client.InNamespace(corev1.NamespaceNodeLease)); err != nil {
		return in, fmt.Errorf("list node leases: %w", err)
	}
	in.Leases = leases.Items
	policies := &v1alpha1.NodeHealthPolicyList{}
	if err := c.List(ctx, policies); err != nil && !meta.IsNoMatchError(err) {
		return in, fmt.Errorf("list NodeHealthPolicies: %w", err)
	}
	in.PolicyObjects = policies.Items
	in.Policies = policy.NewSet(defaults, policies.Items)

	since, err := freezeSince(ctx, c)
	if err != nil {
		return in, err
	}
	in.FrozenSince = since
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if ready := health.ReadyCondition(n); ready != nil && ready.Status == corev1.ConditionTrue && !hasLifecycleTaint(n) {
			continue
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.MatchingFields{"spec.nodeName": n.Name}); err != nil {
			return in, fmt.Errorf("list pods on node %q: %w", n.Name, err)
		}
		in.Pods = append(in.Pods, pods.Items...)
	}
	return in, nil
}

// freezeSince returns when the partition freeze in force began, from the
// latest freeze event, or zero when the latest says it ended or there is
// none (events expire, an hour by default).
func freezeSince(ctx context.Context, c client.Reader) (time.Time, error) {
	events := &eventsv1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		return time.Time{}, fmt.Errorf("list events: %w", err)
	}
	var latest time.Time
	frozen := false
	for i := range events.Items {
		e := &events.Items[i]
		if e.Regarding.Kind != "Namespace" || e.Regarding.Name != corev1.NamespaceNodeLease ||
			(e.Reason != reasonFreeze && e.Reason != reasonFreezeEnded) {
			continue
		}
		at := e.EventTime.Time
		if e.Series != nil && e.Series.LastObservedTime.After(at) {
			at = e.Series.LastObservedTime.Time
		}
		if at.After(latest) {
			latest, frozen = at, e.Reason == reasonFreeze
		}
	}
	if !frozen {
		return time.Time{}, nil
	}
	return latest, nil
}
