package nodehealth

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	if f.r.Guard.Halted() {
		t.Error("the guard finds every zone down with a healthy zone in the cache")
	}
	if !hasNoExecute(f.node(t), corev1.TaintNodeUnreachable) {
		t.Fatalf("the NoExecute taint of a dead node was lifted: %+v", f.node(t).Spec.Taints)
	}
}
