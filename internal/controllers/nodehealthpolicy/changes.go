package nodehealthpolicy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
)

// Nodes subscribes a controller to policy changes: after each, once the set
// is refreshed, the returned source queues the nodes keep accepts (every
// node when keep is nil). Call it before Start.
func (s *Source) Nodes(keep func(*corev1.Node) bool) source.TypedSource[reconcile.Request] {
	ch := make(chan event.TypedGenericEvent[*corev1.Node])
	s.nodeSubs = append(s.nodeSubs, nodeSub{keep: keep, events: ch})
	return source.Channel(ch, &handler.TypedEnqueueRequestForObject[*corev1.Node]{})
}

// Policies subscribes a controller to policy changes: after each, once the
// set is refreshed, the returned source queues every policy. Call it before
// Start.
func (s *Source) Policies() source.TypedSource[reconcile.Request] {
	ch := make(chan event.TypedGenericEvent[*v1alpha1.NodeHealthPolicy])
	s.policySubs = append(s.policySubs, ch)
	return source.Channel(ch, &handler.TypedEnqueueRequestForObject[*v1alpha1.NodeHealthPolicy]{})
}

// Start follows the NodeHealthPolicy informer until ctx ends: a policy
// created, deleted or given a new spec refreshes the set, and queues what
// the change affects in every subscriber. A status write changes no spec
// and queues nothing.
func (s *Source) Start(ctx context.Context) error {
	s.changed = make(chan struct{}, 1)
	inf, err := s.Informers.GetInformer(ctx, &v1alpha1.NodeHealthPolicy{})
	if err != nil {
		return fmt.Errorf("NodeHealthPolicy informer: %w", err)
	}
	signal := func() {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal() },
		UpdateFunc: func(any, any) { signal() },
		DeleteFunc: func(any) { signal() },
	})
	if err != nil {
		return fmt.Errorf("follow NodeHealthPolicies: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	log := ctrl.LoggerFrom(ctx).WithName("nodehealthpolicy-source")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.changed:
		}
		changed, policies, err := s.refresh(ctx)
		if err != nil {
			// The next event tries again; until then the set in force
			// stays.
			log.Error(err, "Reading NodeHealthPolicies failed")
			continue
		}
		if changed {
			s.notify(ctx, policies)
		}
	}
}

// notify queues, in every subscriber, what a change to policies affects.
func (s *Source) notify(ctx context.Context, policies []v1alpha1.NodeHealthPolicy) {
	if len(s.nodeSubs) > 0 {
		// Read only: keep reads them, and the subscribers' queues take
		// their names. A deep copy of every Node would come at every
		// policy change.
		nodes := &corev1.NodeList{}
		if err := s.Reader.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing nodes after a policy change failed")
		}
		for _, sub := range s.nodeSubs {
			for i := range nodes.Items {
				n := &nodes.Items[i]
				if sub.keep != nil && !sub.keep(n) {
					continue
				}
				if !send(ctx, sub.events, n) {
					return
				}
			}
		}
	}
	for _, ch := range s.policySubs {
		for i := range policies {
			if !send(ctx, ch, &policies[i]) {
				return
			}
		}
	}
}

// send queues one object; false when ctx ended first.
func send[T any](ctx context.Context, ch chan event.TypedGenericEvent[T], obj T) bool {
	select {
	case ch <- event.TypedGenericEvent[T]{Object: obj}:
		return true
	case <-ctx.Done():
		return false
	}
}
