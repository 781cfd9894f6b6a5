package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
)

// upstreamEvents records events the way kube-controller-manager's node
// lifecycle and taint eviction controllers do: core/v1 Events whose source
// and reporting controller are the component's name. controller-runtime's
// recorder writes events.k8s.io Events, which carry the reporting controller
// but no source, so `kubectl get events --field-selector source=node-controller`
// and the alerts built on that filter would find nothing. The event's
// action, which only events.k8s.io has, is dropped, as upstream has none.
type upstreamEvents struct {
	scheme      *runtime.Scheme
	broadcaster record.EventBroadcaster
}

// newUpstreamEvents starts a broadcaster that writes to the apiserver mgr
// talks to, and stops it when the manager stops.
func newUpstreamEvents(mgr ctrl.Manager) (*upstreamEvents, error) {
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("create event client: %w", err)
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	log := mgr.GetLogger().WithName("events")
	b.StartEventWatcher(func(e *corev1.Event) {
		log.V(1).Info("Event occurred", "object", e.InvolvedObject.Name, "kind", e.InvolvedObject.Kind,
			"type", e.Type, "reason", e.Reason, "source", e.Source.Component, "message", e.Message)
	})
	if err := mgr.Add(broadcasterStopper{b}); err != nil {
		b.Shutdown()
		return nil, fmt.Errorf("add event broadcaster: %w", err)
	}
	return &upstreamEvents{scheme: mgr.GetScheme(), broadcaster: b}, nil
}

// For returns a recorder whose events come from component.
func (u *upstreamEvents) For(component string) events.EventRecorder {
	return record.NewEventRecorderAdapter(u.broadcaster.NewRecorder(u.scheme, corev1.EventSource{Component: component}))
}

// broadcasterStopper shuts the broadcaster down when the manager stops. Every
// replica runs it, leader or not: it only waits.
type broadcasterStopper struct{ b record.EventBroadcaster }

// Start waits for the manager to stop, then stops the broadcaster.
func (s broadcasterStopper) Start(ctx context.Context) error {
	<-ctx.Done()
	s.b.Shutdown()
	return nil
}

// NeedLeaderElection is false: the broadcaster must stop whether or not
// this replica led.
func (broadcasterStopper) NeedLeaderElection() bool { return false }
