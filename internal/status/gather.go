package status

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// Gather reads what a report needs from the apiserver: every Node, the node
// Leases, the NodeHealthPolicies when their CRD is installed, the partition
// freeze the leader keeps, and the pods of the nodes that are not healthy. defaults are the
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

// freezeSince returns when the partition freeze the leader keeps on the
// kube-node-lease Namespace began, or zero when it keeps none. A record that
// does not parse is an error: the report must not say that no freeze holds,
// nor show a namespace whose records a new leader would ignore as sound.
func freezeSince(ctx context.Context, c client.Reader) (time.Time, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: corev1.NamespaceNodeLease}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return time.Time{}, nil
		}
		return time.Time{}, fmt.Errorf("read the partition freeze kept on namespace %s: %w", corev1.NamespaceNodeLease, err)
	}
	kept, err := safety.KeptOn(ns)
	if err != nil {
		return time.Time{}, fmt.Errorf("namespace %s: %w", corev1.NamespaceNodeLease, err)
	}
	if kept.Freeze == nil {
		return time.Time{}, nil
	}
	return kept.Freeze.Since, nil
}
