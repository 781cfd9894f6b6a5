package podscope

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/index"
)

// ErrNotListed is returned by On for a node whose pods are not listed yet.
// Every Source queues the node once they are.
var ErrNotListed = errors.New("pods not listed yet")

// Pods is where a controller reads the pods bound to a node, and hears of
// their changes.
type Pods interface {
	// On returns the pods bound to node, copies the caller may change.
	// It fails with ErrNotListed (wrapped) until they are listed.
	On(ctx context.Context, node string) ([]corev1.Pod, error)
	// Expect says the node's pods are about to be asked for: its deadline
	// has passed and it is being marked.
	Expect(node string)
	// Source queues a pod's node when one of its pods changes in a way
	// preds pass, and a node when its pods are first listed.
	Source(preds ...predicate.TypedPredicate[*corev1.Pod]) source.TypedSource[reconcile.Request]
}

// Cluster reads pods from a cache of every pod, indexed by node
// (index.Register), as kube-controller-manager keeps them.
type Cluster struct {
	// Reader lists pods by index.PodNodeName.
	Reader client.Reader
	// Cache holds the pods Reader lists; Source watches it.
	Cache cache.Cache
}

var _ Pods = Cluster{}

// On lists the node's pods from the cache.
func (c Cluster) On(ctx context.Context, node string) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := c.Reader.List(ctx, pods, client.MatchingFields{index.PodNodeName: node}); err != nil {
		return nil, fmt.Errorf("list pods on node %q: %w", node, err)
	}
	return pods.Items, nil
}

// Expect does nothing: every pod is cached already.
func (Cluster) Expect(string) {}

// Source watches every pod in the cache.
func (c Cluster) Source(preds ...predicate.TypedPredicate[*corev1.Pod]) source.TypedSource[reconcile.Request] {
	return source.Kind(c.Cache, &corev1.Pod{}, handler.TypedEnqueueRequestsFromMapFunc(index.PodToNode), preds...)
}
