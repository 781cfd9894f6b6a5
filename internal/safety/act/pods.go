package act

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/parallel"
)

// PodPort is what the pods' turn reads and writes.
type PodPort interface {
	Reader
	// MarkPod sets the pod's Ready condition False, as of now; a pod
	// replaced under its name since is left alone, and counts as marked.
	MarkPod(ctx context.Context, pod *corev1.Pod, now time.Time) error
}

// MarkPods marks NotReady the pods of a node the controller found silent,
// as the cache shows the node and its pods when their turn comes: only while
// it is still Unknown and nothing holds the marking, so that a node back
// since its look keeps its pods' readiness; each pod once in the silence.
// Unless the mark has just confirmed the silence, the node is read live
// first: a node that came back while the watch lagged must not lose its
// pods' traffic, nor fight its kubelet. grace is the node's grace period.
func (x *Executor) MarkPods(ctx context.Context, p PodPort, node *corev1.Node, pods []corev1.Pod, grace time.Duration) error {
	log := logr.FromContextOrDiscard(ctx)
	x.see(ctx, p)
	if !x.model.MarksPods(node) {
		log.V(1).Info("Node back, or its pods' marking held, since its look; not marking them NotReady")
		return nil
	}
	todo := x.model.PodsToMark(node, pods)
	if len(todo) == 0 {
		return nil
	}
	now := p.Now()
	if !x.model.Fresh(node.Name, now) {
		live, lease, err := p.Live(ctx, node.Name)
		if err != nil {
			return err
		}
		x.see(ctx, p)
		if !x.model.Silent(live, lease, grace, p.Now()) {
			log.V(1).Info("Node is back, read live; not marking its pods NotReady")
			return nil
		}
	}
	return parallel.ForEach(todo, x.workers, func(pod *corev1.Pod) error {
		if err := p.MarkPod(ctx, pod, now); err != nil {
			return err
		}
		x.model.PodMarked(node, pod.UID)
		return nil
	})
}
