// Package index names the cache indexes the controllers share, so that each
// is registered once, and the mapping from a pod to its node.
package index

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// PodNodeName indexes pods by the node they are bound to.
const PodNodeName = "spec.nodeName"

// podNodeName is the PodNodeName index function.
func podNodeName(obj client.Object) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil
	}
	return []string{pod.Spec.NodeName}
}

// Register adds the shared indexes to a manager's field indexer.
func Register(ctx context.Context, fi client.FieldIndexer) error {
	if err := fi.IndexField(ctx, &corev1.Pod{}, PodNodeName, podNodeName); err != nil {
		return fmt.Errorf("index pods by node: %w", err)
	}
	return nil
}

// PodNodeNameFunc returns the PodNodeName index function, for fake clients in
// tests.
func PodNodeNameFunc() client.IndexerFunc { return podNodeName }

// PodToNode maps a bound pod to a request for its node.
func PodToNode(_ context.Context, pod *corev1.Pod) []reconcile.Request {
	if pod.Spec.NodeName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: pod.Spec.NodeName}}}
}
