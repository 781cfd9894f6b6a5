package nodehealth

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// kicker sends nodes back through the controller's queue from outside a
// watch: the safety resync, and changes of zone or cluster state that alter
// what other nodes should carry. Kicking never blocks the caller; a
// goroutine of its own feeds the queue.
type kicker struct {
	mu      sync.Mutex
	pending map[string]struct{}
	signal  chan struct{}
	events  chan event.TypedGenericEvent[*corev1.Node]
}

func newKicker() *kicker {
	return &kicker{
		pending: make(map[string]struct{}),
		signal:  make(chan struct{}, 1),
		events:  make(chan event.TypedGenericEvent[*corev1.Node]),
	}
}

// kick queues the named nodes. A nil kicker, as in tests that call the
// reconciler directly, drops them.
func (k *kicker) kick(names ...string) {
	if k == nil || len(names) == 0 {
		return
	}
	k.mu.Lock()
	for _, n := range names {
		k.pending[n] = struct{}{}
	}
	k.mu.Unlock()
	select {
	case k.signal <- struct{}{}:
	default:
	}
}

// Start feeds kicked nodes to the controller until ctx ends.
func (k *kicker) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-k.signal:
		}
		k.mu.Lock()
		batch := k.pending
		k.pending = make(map[string]struct{})
		k.mu.Unlock()
		for name := range batch {
			n := &corev1.Node{}
			n.Name = name
			select {
			case k.events <- event.TypedGenericEvent[*corev1.Node]{Object: n}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}
