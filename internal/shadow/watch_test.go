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

// deletingPod is a pod a taint eviction is deleting from node n1.
func deletingPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			DeletionTimestamp: &metav1.Time{Time: t0}},
		Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: disruptionReason},
		}},
	}
}

// A pod the dry run evicted too is counted on both sides: the dry run
// writes nothing, so the eviction seen in the cluster is the other's.
func TestObservePodCountsUpstreamAfterOurs(t *testing.T) {
	s := New(NewRecord(), clocktesting.NewFakeClock(t0), nil)
	pod := deletingPod("a")
	s.podDeleted(context.Background(), pod)
	s.observePod(context.Background(), pod, false)
	s.observePod(context.Background(), pod, false)
	es, _ := s.Record.Episodes(false)
	if len(es) != 1 || es[0].Ours.Evicted != 1 || es[0].Upstream.Evicted != 1 {
		t.Fatalf("episodes = %+v, want one with the pod evicted once by each side", es)
	}
}

// The other controller's eviction, stamped before the node's episode
// ended but seen only after (the node's return and the pod's deletion come
// by separate watches), is counted in that episode, and its later events
// open no other.
func TestObservePodCountsAStragglerInTheEpisodeItWasDecidedIn(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	s := New(NewRecord(), clk, nil)
	s.Record.Marked("n1", false, t0)
	clk.Step(5 * time.Second)
	s.Record.Recovered("n1", clk.Now())
	pod := deletingPod("a")
	pod.Status.Conditions[0].LastTransitionTime = metav1.NewTime(clk.Now().Add(-time.Second))
	clk.Step(time.Second)
	s.observePod(context.Background(), pod, false)
	s.observePod(context.Background(), pod, true)
	es, _ := s.Record.Episodes(false)
	if len(es) != 1 || es[0].Upstream.Evicted != 1 || es[0].Ended == nil {
		t.Fatalf("episodes = %+v, want the one ended episode, with the pod evicted once", es)
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

// The other controller's mark is stamped in whole seconds: seen within the
// second it is timed when seen, seen later (a restart's list) by its stamp.
func TestObserveNodeTimesAMarkAtTheApiserversResolution(t *testing.T) {
	stamp := t0.Truncate(time.Second)
	for _, tc := range []struct {
		name string
		seen time.Time
		want time.Time
	}{
		{"seen within its second", stamp.Add(900 * time.Millisecond), stamp.Add(900 * time.Millisecond)},
		{"seen at its stamp", stamp, stamp},
		{"listed long after", stamp.Add(time.Minute), stamp},
		{"stamped ahead of this clock", stamp.Add(-time.Second), stamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(NewRecord(), clocktesting.NewFakeClock(tc.seen), nil)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "u1"},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady,
					Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", LastTransitionTime: metav1.NewTime(stamp)}}}}
			s.observeNode(context.Background(), node)
			es, _ := s.Record.Episodes(false)
			if len(es) != 1 || es[0].Upstream.Marked == nil || !es[0].Upstream.Marked.Equal(tc.want) {
				t.Fatalf("episodes = %+v, want upstream's mark at %v", es, tc.want)
			}
		})
	}
}

// A pod the other controller evicts while the dry run's deadline for it is
// still ahead records that deadline; one whose eviction the dry run holds
// back records the hold alone.
func TestObservePodRecordsTheDeadlineAhead(t *testing.T) {
	s := New(NewRecord(), clocktesting.NewFakeClock(t0), nil)
	a, b := deletingPod("a"), deletingPod("b")
	s.EvictionDue(b, t0.Add(2*time.Minute))
	s.EvictionDue(a, t0.Add(time.Minute))
	s.observePod(context.Background(), a, false)
	s.observePod(context.Background(), b, true)
	es, _ := s.Record.Episodes(false)
	if len(es) != 1 || es[0].EvictionsDue == nil || !es[0].EvictionsDue.Equal(t0.Add(time.Minute)) {
		t.Fatalf("episodes = %+v, want the earliest deadline ahead, %v", es, t0.Add(time.Minute))
	}

	held := New(NewRecord(), clocktesting.NewFakeClock(t0), nil)
	held.Holds = holding{}
	held.EvictionDue(a, t0.Add(time.Minute))
	held.observePod(context.Background(), a, false)
	es, _ = held.Record.Episodes(false)
	if len(es) != 1 || es[0].EvictionsDue != nil || es[0].EvictionsHeld == "" {
		t.Fatalf("episodes = %+v, want the hold and no deadline", es)
	}
}

// holding holds every node's taint and evictions back.
type holding struct{}

func (holding) Hold(string) string                          { return "partition freeze" }
func (holding) DestructiveAllowedFor(string) (bool, string) { return false, "partition freeze" }
