package nodehealth

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
)

// A new leader, or a restarted controller, whose workers take a node of a
// dead zone first must not find every zone down and lift its NoExecute
// taint: putting it back later restarts its pods' eviction deadlines.
func TestNewLeaderKeepsTheTaintOfADeadZoneItLooksAtFirst(t *testing.T) {
	dead := readyNode()
	dead.Labels = map[string]string{corev1.LabelTopologyRegion: "r", corev1.LabelTopologyZone: "a"}
	dead.Status.Conditions[0].Status = corev1.ConditionUnknown
	dead.Status.Conditions[0].Reason = "NodeStatusUnknown"
	added := metav1.NewTime(t0.Add(-10 * time.Second))
	dead.Spec.Taints = []corev1.Taint{
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &added},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added},
	}
	live := readyNode()
	live.Name, live.UID = "n2", "uid-2"
	live.Labels = map[string]string{corev1.LabelTopologyRegion: "r", corev1.LabelTopologyZone: "b"}
	f := newFixture(t, []client.Object{dead, live, nodeLease(t0)}, nil, nil)

	f.reconcile(t) // n1, before the healthy zone's n2
	if f.guard.Snapshot().Halted {
		t.Error("the guard finds every zone down with a healthy zone in the cache")
	}
	if !safety.HasNoExecute(f.node(t), corev1.TaintNodeUnreachable) {
		t.Fatalf("the NoExecute taint of a dead node was lifted: %+v", f.node(t).Spec.Taints)
	}
}

// A node deleted after the guard was seeded, before its first reconcile,
// leaves no ghost in its zone: a fully disrupted zone must not look partly
// ready for a node that no longer exists.
func TestANodeDeletedBeforeItsFirstReconcileLeavesNoGhost(t *testing.T) {
	zone := map[string]string{corev1.LabelTopologyRegion: "r", corev1.LabelTopologyZone: "a"}
	dead := readyNode()
	dead.Labels = zone
	dead.Status.Conditions[0].Status = corev1.ConditionUnknown
	dead.Status.Conditions[0].Reason = "NodeStatusUnknown"
	ghost := readyNode()
	ghost.Name, ghost.UID, ghost.Labels = "n2", "uid-2", zone
	f := newFixture(t, []client.Object{dead, ghost}, nil, nil)

	f.reconcile(t) // seeds the guard with both, judges n1
	id := disruptionZone(dead)
	if got := f.guard.Snapshot().Zones[id]; got.Ready != 1 || got.NotReady != 1 {
		t.Fatalf("zone after seeding: %+v", got)
	}
	if err := f.cached.Delete(t.Context(), ghost); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "n2"}}); err != nil {
		t.Fatal(err)
	}
	if got := f.guard.Snapshot().Zones[id]; got.Ready != 0 || got.NotReady != 1 || got.State != disruption.ZoneFullDisruption {
		t.Fatalf("zone after the deletion: %+v; want one not-ready node, fully disrupted", got)
	}
	if !f.guard.Snapshot().Halted {
		t.Fatal("every zone is down, but the guard does not halt")
	}
}

func disruptionZone(n *corev1.Node) disruption.ZoneID {
	return disruption.ZoneID{Zone: disruption.ZoneKey(n)}
}
