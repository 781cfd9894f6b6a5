package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

// benchPod is a pod of node n1.
func benchPod(name string, ready corev1.ConditionStatus) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fleet.PodLabel: "n1"}},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
	}
}

// TestPodsNotReadyAreTimedOnce: a stopped node's pods count from the first
// list, each is timed when first seen not Ready, and the node is done only
// once every one of them has been.
func TestPodsNotReadyAreTimedOnce(t *testing.T) {
	o := &observer{nodes: map[string]*nodeSeen{}}
	o.beginRun()
	o.stopping([]string{"n1"})
	o.sawPod(benchPod("a", corev1.ConditionTrue))
	o.sawPod(benchPod("b", corev1.ConditionTrue))
	o.rec.marked["n1"] = time.Now()
	if o.allPodsNotReady() {
		t.Fatal("done with both pods Ready")
	}
	o.sawPod(benchPod("a", corev1.ConditionFalse))
	first := o.rec.pods["n1"]["a"]
	o.sawPod(benchPod("a", corev1.ConditionTrue))
	o.sawPod(benchPod("a", corev1.ConditionFalse))
	if got := o.rec.pods["n1"]["a"]; !got.Equal(first) || first.IsZero() {
		t.Fatalf("pod a timed at %v, then %v: want its first time kept", first, got)
	}
	if _, all := o.rec.lastPodNotReady("n1"); all || o.allPodsNotReady() {
		t.Fatal("done with pod b Ready")
	}
	o.sawPod(benchPod("b", corev1.ConditionFalse))
	last, all := o.rec.lastPodNotReady("n1")
	if !all || !last.Equal(o.rec.pods["n1"]["b"]) || !o.allPodsNotReady() {
		t.Fatalf("lastPodNotReady = %v, %v; want pod b's time, and done", last, all)
	}
}

// TestMarkRequestsCountsTheMarksRequestsPerMarkedNode: the requests a mark
// is made of, up to each node's status write, apart from the reads after
// it, over the nodes seen marked.
func TestMarkRequestsCountsTheMarksRequestsPerMarkedNode(t *testing.T) {
	d := 1.0
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	requests := []request{
		{user: "ours", kind: "get leases", name: "a", at: at(1)},
		{user: "ours", kind: "patch nodes/status", name: "a", at: at(2)},
		{user: "ours", kind: "patch nodes", name: "a", at: at(3)},
		{user: "ours", kind: "get leases", name: "a", at: at(10)},
		{user: "ours", kind: "get nodes", name: "a", at: at(10)},
		{user: "ours", kind: "get leases", name: "b", at: at(1)},
		{user: "ours", kind: "update nodes/status", name: "b", at: at(2)},
		{user: "ours", kind: "get leases", name: "live", at: at(2)},
		{user: "other", kind: "get leases", name: "b", at: at(2)},
		{user: "ours", kind: "get leases", name: "b", at: at(99)},
	}
	r := &turn{Stopped: []stoppedNode{{Node: "a", MarkDelay: &d}, {Node: "b", MarkDelay: &d}, {Node: "c"}}}
	r.MarkRequests, r.RereadRequests = markSplit(requests, "ours", t0, at(50), []string{"a", "b", "c"})
	if r.MarkRequests != 4 || r.RereadRequests != 2 {
		t.Fatalf("markSplit = %d, %d; want 4 at the marks, 2 after", r.MarkRequests, r.RereadRequests)
	}
	if got := markRequests(r); got != 2 {
		t.Errorf("markRequests = %v, want 2", got)
	}
	if got := rereadRequests(r); got != 1 {
		t.Errorf("rereadRequests = %v, want 1", got)
	}
}
