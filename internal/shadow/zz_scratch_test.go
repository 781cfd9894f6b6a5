package shadow

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func evictedPod(name string) *corev1.Pod {
	p := testPod(name, types.UID("uid-"+name), "n1")
	now := metav1.NewTime(t0)
	p.DeletionTimestamp = &now
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget,
		Status: corev1.ConditionTrue, Reason: disruptionReason})
	return p
}

func TestScratchPodReadyAfterKubeletRepost(t *testing.T) {
	v := NewView()
	pod := testPod("p1", "uid-p1", "n1")
	v.PodMarkedNotReady(pod, t0)
	later := pod.DeepCopy()
	later.Status.Conditions[1].LastTransitionTime = metav1.NewTime(t0.Add(10 * time.Minute))
	v.ShowPod(later)
	t.Logf("kubelet reposted Ready=True at t0+10m; shown: %s since %v", later.Status.Conditions[1].Status, later.Status.Conditions[1].LastTransitionTime)
}

func TestScratchRestoreDoubleCounts(t *testing.T) {
	s := New(NewRecord(), clocktesting.NewFakeClock(t0.Add(time.Hour)), nil)
	s.Record.Restore([]Episode{{Node: "n1", Upstream: Side{Evicted: 1, FirstEviction: ptr(t0), Pods: []string{"ns/a"}}}})
	s.observePod(t.Context(), evictedPod("a"), false)
	e := onlyEpisode(t, s.Record)
	t.Logf("after restart, the same terminating pod seen again: Upstream.Evicted=%d Pods=%v", e.Upstream.Evicted, e.Upstream.Pods)
}

func TestScratchBothEvictSamePod(t *testing.T) {
	s := New(NewRecord(), clocktesting.NewFakeClock(t0), nil)
	p := testPod("a", "uid-a", "n1")
	s.podDeleted(t.Context(), p)
	s.observePod(t.Context(), evictedPod("a"), false)
	s.observePod(t.Context(), evictedPod("a"), true)
	e := onlyEpisode(t, s.Record)
	t.Logf("ours evicted ns/a, then upstream evicted it: Ours.Evicted=%d Upstream.Evicted=%d; differences %q", e.Ours.Evicted, e.Upstream.Evicted, Differences(e))
}

func TestScratchUntimedUpstreamTaint(t *testing.T) {
	s := New(NewRecord(), clocktesting.NewFakeClock(t0.Add(time.Minute)), nil)
	n := kubeletNode("n1", "uid-1", t0)
	shown(s.View, n)
	s.Record.Marked("n1", true, t0)
	up := n.DeepCopy()
	up.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
	s.observeNode(t.Context(), up)
	e := onlyEpisode(t, s.Record)
	t.Logf("upstream NoExecuteAdded=%v start()=%v differences=%q", *e.Upstream.NoExecuteAdded, e.start(), Differences(e))
	e2 := Episode{Upstream: Side{NoExecuteAdded: ptr(time.Time{}), Marked: ptr(t0)}}
	t.Logf("order: upstream taint first: start=%v", e2.start())
}
