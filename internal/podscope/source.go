package podscope

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Source queues the node of a watched pod that changed in a way preds
// pass, and a node once its pods are listed.
func (s *Scoped) Source(preds ...predicate.TypedPredicate[*corev1.Pod]) source.TypedSource[reconcile.Request] {
	return source.TypedFunc[reconcile.Request](func(ctx context.Context, q queue) error {
		sub := &subscriber{queue: q, preds: preds}
		s.mu.Lock()
		s.subs[sub] = struct{}{}
		s.mu.Unlock()
		go func() {
			<-ctx.Done()
			s.mu.Lock()
			delete(s.subs, sub)
			s.mu.Unlock()
		}()
		return nil
	})
}

// subscribers returns the current subscribers. Called with mu held.
func (s *Scoped) subscribers() []*subscriber {
	out := make([]*subscriber, 0, len(s.subs))
	for sub := range s.subs {
		out = append(out, sub)
	}
	return out
}

// podEvent passes a pod's change to every subscriber, for a node still
// wanted: the wide watch sees every node's pods, and those of nodes not
// in trouble change nothing the controllers do.
func (s *Scoped) podEvent(pod *corev1.Pod, pass func(predicate.TypedPredicate[*corev1.Pod]) bool) {
	if pod.Spec.NodeName == "" {
		return
	}
	s.mu.Lock()
	_, ok := s.wanted[pod.Spec.NodeName]
	var subs []*subscriber
	if ok {
		subs = s.subscribers()
	}
	s.mu.Unlock()
	for _, sub := range subs {
		if sub.passes(pass) {
			sub.queue.Add(reconcile.Request{NamespacedName: nodeKey(pod.Spec.NodeName)})
		}
	}
}

// subscriber is a controller's queue and the predicates its pod events
// must pass.
type subscriber struct {
	queue queue
	preds []predicate.TypedPredicate[*corev1.Pod]
}

// passes reports whether the event passes every predicate, as pass asks
// each.
func (sub *subscriber) passes(pass func(predicate.TypedPredicate[*corev1.Pod]) bool) bool {
	for _, p := range sub.preds {
		if !pass(p) {
			return false
		}
	}
	return true
}
