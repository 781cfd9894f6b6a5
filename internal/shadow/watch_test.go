package shadow

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// evictedPodOn is a pod a taint eviction is deleting from the node.
func evictedPodOn(node, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			DeletionTimestamp: &metav1.Time{Time: t0}},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: disruptionReason},
		}},
	}
}

// A pod the dry run evicted too is counted on both sides: the dry run
// writes nothing, so the eviction seen in the cluster is the other's.
func TestObservePodCountsUpstreamAfterOurs(t *testing.T) {
	s := New(NewRecord(), clocktesting.NewFakeClock(t0), nil)
	pod := evictedPodOn("n1", "a")
	s.podDeleted(context.Background(), pod)
	s.observePod(context.Background(), pod, false)
	s.observePod(context.Background(), pod, false)
	es, _ := s.Record.Episodes(false)
	if len(es) != 1 || es[0].Ours.Evicted != 1 || es[0].Upstream.Evicted != 1 {
		t.Fatalf("episodes = %+v, want one with the pod evicted once by each side", es)
	}
}

// An upstream NoExecute taint without timeAdded is timed when first seen,
// not at the zero time.
func TestObserveNodeTimesAnUntimedTaint(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	s := New(NewRecord(), clk, nil)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1"},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}}}
	s.observeNode(context.Background(), node)
	clk.Step(time.Minute)
	s.observeNode(context.Background(), node)
	es, _ := s.Record.Episodes(false)
	if len(es) != 1 || es[0].Upstream.NoExecuteAdded == nil || !es[0].Upstream.NoExecuteAdded.Equal(t0) {
		t.Fatalf("episodes = %+v, want the untimed taint timed at %v", es, t0)
	}
}
