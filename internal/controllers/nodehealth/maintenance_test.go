package nodehealth

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// setCondition sets a condition on the node in the fake cluster, as an
// administrator would.
func setCondition(t *testing.T, f *fixture, name string, c corev1.NodeCondition) {
	t.Helper()
	n := nodeNamed(t, f, name)
	conds := []corev1.NodeCondition{c}
	for _, old := range n.Status.Conditions {
		if old.Type != c.Type {
			conds = append(conds, old)
		}
	}
	n.Status.Conditions = conds
	if err := f.cached.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// TestMaintenanceHoldsTheNoExecuteTaintForItsGrace: a node in maintenance
// that goes silent is marked and tainted NoSchedule, its pods marked
// NotReady, but its NoExecute taint waits for the maintenance grace; a node
// whose maintenance never ends is then tainted as any other.
func TestMaintenanceHoldsTheNoExecuteTaintForItsGrace(t *testing.T) {
	n1 := readyNode()
	n1.Status.Conditions = append(n1.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeMaintenanceInProgress,
		Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute))})
	f := newFixture(t, []client.Object{n1, healthyNode("n3"), readyPod("p1", "n1")}, nil, nil)
	f.r.d.MaintenanceGrace = 10 * time.Minute
	r3 := ctrl.Request{NamespacedName: client.ObjectKey{Name: "n3"}}
	f.reconcile(t)
	if _, err := f.r.Reconcile(context.Background(), r3); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(grace.Monitor)
	res := f.reconcile(t)
	n := f.node(t)
	if readyOf(n).Status != corev1.ConditionUnknown || !hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) {
		t.Fatalf("a silent node in maintenance was not marked: %+v, %v", readyOf(n), n.Spec.Taints)
	}
	if hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) {
		t.Fatal("a silent node in maintenance was tainted NoExecute at once")
	}
	p := &corev1.Pod{}
	if err := f.cached.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "p1"}, p); err != nil {
		t.Fatal(err)
	}
	if p.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Fatal("the pods of a silent node in maintenance were not marked NotReady")
	}
	if res.RequeueAfter != 10*time.Minute {
		t.Fatalf("next look in %v, want at the end of the maintenance grace, 10m", res.RequeueAfter)
	}
	evs := strings.Join(f.drainEvents(), "\n")
	if !strings.Contains(evs, ReasonMaintenanceHold) {
		t.Fatalf("no %s event in %q", ReasonMaintenanceHold, evs)
	}
	// Looking again holds and tells nothing new.
	f.clock.Step(time.Minute)
	f.reconcile(t)
	if evs := f.drainEvents(); len(evs) != 0 {
		t.Fatalf("a second look emitted %v", evs)
	}

	// The maintenance never ends: at its grace's end the node is tainted.
	f.clock.Step(9 * time.Minute)
	f.reconcile(t)
	if !hasTaint(f.node(t), corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) {
		t.Fatal("not tainted NoExecute once the maintenance grace ran out")
	}
	if evs := strings.Join(f.drainEvents(), "\n"); !strings.Contains(evs, ReasonMaintenanceHoldEnded) {
		t.Fatalf("no %s event in %q", ReasonMaintenanceHoldEnded, evs)
	}
}

// TestMaintenanceClearedResumesTheNormalTimeline: a node whose maintenance
// condition clears while it is still silent is tainted from that moment.
func TestMaintenanceClearedResumesTheNormalTimeline(t *testing.T) {
	f := newFixture(t, []client.Object{readyNode(), healthyNode("n3")}, nil, nil)
	f.r.d.MaintenanceGrace = time.Hour
	f.reconcile(t)
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "n3"}}); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(grace.Monitor)
	// Declared after the node went silent: the hold counts from then.
	setCondition(t, f, "n1", corev1.NodeCondition{Type: corev1.NodeGracefulNodeShutdownInProgress,
		Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(f.clock.Now())})
	f.reconcile(t)
	if hasTaint(f.node(t), corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) {
		t.Fatal("tainted NoExecute during maintenance")
	}
	f.clock.Step(5 * time.Minute)
	setCondition(t, f, "n1", corev1.NodeCondition{Type: corev1.NodeGracefulNodeShutdownInProgress,
		Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(f.clock.Now())})
	f.reconcile(t)
	n := f.node(t)
	var added *metav1.Time
	for _, taint := range n.Spec.Taints {
		if taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute {
			added = taint.TimeAdded
		}
	}
	if added == nil || !added.Time.Equal(f.clock.Now()) {
		t.Fatalf("after the maintenance ended: NoExecute taint added %v, want now %v", added, f.clock.Now())
	}
	if evs := strings.Join(f.drainEvents(), "\n"); !strings.Contains(evs, "no longer in maintenance") {
		t.Fatalf("no event for the maintenance ending in %q", evs)
	}
}

// TestMaintenanceOffJudgesAsUpstream: with the grace at 0 the conditions are
// ignored, as kube-controller-manager ignores them.
func TestMaintenanceOffJudgesAsUpstream(t *testing.T) {
	n1 := readyNode()
	n1.Status.Conditions = append(n1.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeDrained,
		Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)})
	f := newFixture(t, []client.Object{n1, healthyNode("n3")}, nil, nil)
	f.reconcile(t)
	if _, err := f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "n3"}}); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(grace.Monitor)
	f.reconcile(t)
	if !hasTaint(f.node(t), corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) {
		t.Fatal("with the maintenance grace at 0, a drained node was not tainted NoExecute")
	}
}
