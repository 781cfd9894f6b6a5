package act

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/eviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/parallel"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// EvictPort is what the evictions' turn reads and writes.
type EvictPort interface {
	Reader
	// Evict deletes a pod whose deadline passed.
	Evict(ctx context.Context, node *corev1.Node, pod *corev1.Pod, d eviction.Decision) error
}

// Evicted is what the evictions' turn did.
type Evicted struct {
	// Evictions is the model's decision.
	safety.Evictions
	// Back is true when the node, read live, was back: only the pods due
	// by other taints went.
	Back bool
	// Failed are the pods whose eviction failed.
	Failed []*corev1.Pod
}

// Evict deletes the pods of a node with NoExecute taints whose deadline has
// passed at now (on the clock the taints' timeAdded is written by), where
// the model lets them go: nothing is evicted for the node's failure while a
// hold keeps it, nor from a node that a live read shows back. pods are the
// node's pods not already on their way out. A pod whose eviction fails is
// reported, not retried: the port logs it and puts it on a backoff of its
// own.
func (x *Executor) Evict(ctx context.Context, p EvictPort, node *corev1.Node, pods []corev1.Pod, s policy.Settings, now time.Time) (Evicted, error) {
	x.see(ctx, p)
	out := Evicted{Evictions: x.model.Evictions(node, pods, s.PodEvictionTimeout, now)}
	log := logr.FromContextOrDiscard(ctx)
	if out.Why != "" && out.Held > 0 {
		log.V(1).Info("Evictions held back", "pods", out.Held, "reason", out.Why)
	}
	due := out.Due
	if out.Confirm {
		live, lease, err := p.Live(ctx, node.Name)
		if err != nil {
			return out, err
		}
		x.see(ctx, p)
		if x.model.Back(live, lease, s.Grace.Monitor, p.Now()) {
			out.Back = true
			out.Held += len(due) - len(out.Despite)
			due = out.Despite
			log.Info("Node is back, read live; not evicting its pods for its failure", "pods", len(out.Due)-len(due))
		}
	}
	if len(due) == 0 {
		return out, nil
	}
	var mu sync.Mutex
	_ = parallel.ForEach(due, x.workers, func(e safety.Due) error {
		if err := p.Evict(ctx, node, e.Pod, e.Decision); err != nil {
			mu.Lock()
			defer mu.Unlock()
			out.Failed = append(out.Failed, e.Pod)
		}
		return nil
	})
	return out, nil
}
