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
// is made of, over the nodes seen marked.
func TestMarkRequestsCountsTheMarksRequestsPerMarkedNode(t *testing.T) {
	d := 1.0
	r := &turn{
		Stopped: []stoppedNode{{Node: "a", MarkDelay: &d}, {Node: "b", MarkDelay: &d}, {Node: "c"}},
		Requests: map[string]requestCount{"failure": {ByKind: map[string]int{
			"patch nodes/status": 2, "get leases": 3, "patch nodes": 2, "patch pods/status": 20,
		}}},
	}
	if got := markRequests(r); got != 2.5 {
		t.Fatalf("markRequests = %v, want 2.5", got)
	}
}
