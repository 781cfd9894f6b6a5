package nodehealth

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestNodeNotReadyEventOnlyWhenReadyIsLost: as with kube-controller-manager,
// marking a node Unknown announces NodeNotReady only when it takes the Ready
// condition from True; a node already not ready, or never ready, lost no
// readiness by the mark.
func TestNodeNotReadyEventOnlyWhenReadyIsLost(t *testing.T) {
	for _, c := range []struct {
		name  string
		ready corev1.ConditionStatus // "": no Ready condition at all
		want  bool
	}{
		{name: "True to Unknown", ready: corev1.ConditionTrue, want: true},
		{name: "False to Unknown", ready: corev1.ConditionFalse, want: false},
		{name: "never reported", ready: "", want: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := readyNode()
			if c.ready == "" {
				n.Status.Conditions = nil
			} else {
				n.Status.Conditions[0].Status = c.ready
			}
			f := newFixture(t, []client.Object{n}, nil, nil)
			f.reconcile(t)
			f.drainEvents()

			f.clock.Step(max(grace.Monitor, grace.Startup))
			f.reconcile(t)
			if got := readyOf(f.node(t)).Status; got != corev1.ConditionUnknown {
				t.Fatalf("Ready = %s after the deadline, want Unknown", got)
			}
			evs := f.drainEvents()
			got := slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, ReasonNodeNotReady) })
			if got != c.want {
				t.Fatalf("NodeNotReady event = %v, want %v; events: %q", got, c.want, evs)
			}
		})
	}
}
