package main

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// The time a write rate allows a dead zone is bound by the deadlines when
// the pods are few, and by the pods due after a deadline when they are
// many; the zone's own time runs from its first deadline to its last pod.
func TestZoneTimes(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	node := func(deadline, podsDelay float64, pods int) stoppedNode {
		return stoppedNode{Deadline: t0.Add(time.Duration(deadline * float64(time.Second))), Pods: pods, PodsNotReady: pods,
			PodsDelay: seconds(time.Duration(podsDelay * float64(time.Second)))}
	}
	for _, tc := range []struct {
		name        string
		nodes       []stoppedNode
		rate        float64
		took, bound time.Duration
	}{
		// 100 pods a second: 30 pods take 0.3s, after the last deadline.
		{"few pods", []stoppedNode{node(0, 0.5, 10), node(10, 1, 10), node(5, 0.5, 10)}, 100, 11 * time.Second, 10*time.Second + 100*time.Millisecond},
		// 10 pods a second: the 30 pods take 3s from the first deadline,
		// the 20 due from 1s on 2s from there.
		{"many pods", []stoppedNode{node(0, 4, 10), node(1, 2, 10), node(1, 3, 10)}, 10, 4 * time.Second, 3 * time.Second},
		{"a node without pods", []stoppedNode{node(0, 1, 10), {Deadline: t0.Add(20 * time.Second)}}, 10, time.Second, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			took, bound, ok := zoneTimes(tc.nodes, tc.rate)
			if !ok || took != tc.took || bound != tc.bound {
				t.Errorf("zoneTimes = %v, %v, %v; want %v, %v, true", took, bound, ok, tc.took, tc.bound)
			}
		})
	}
	notDone := node(0, 1, 10)
	notDone.PodsDelay = nil
	if _, _, ok := zoneTimes([]stoppedNode{notDone}, 10); ok {
		t.Error("a node whose pods were not all seen NotReady gives a time")
	}
	if _, _, ok := zoneTimes([]stoppedNode{node(0, 1, 10)}, 0); ok {
		t.Error("no write rate gives a bound")
	}
}

// The write is the controller's mark of a pod: its Ready condition False
// with a new transition time, its other conditions as they were, bound
// to its UID.
func TestNotReadyPatch(t *testing.T) {
	was := metav1.NewTime(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: was},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: was},
	}}}
	original, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	at := was.Add(3 * time.Minute)
	patched, err := strategicpatch.StrategicMergePatch(original, notReadyPatch("u1", at), corev1.Pod{})
	if err != nil {
		t.Fatalf("apply the patch: %v", err)
	}
	var got corev1.Pod
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	c := got.Status.Conditions
	if got.UID != "u1" || len(c) != 2 || c[0].Type != corev1.PodScheduled || !c[0].LastTransitionTime.Equal(&was) || c[1].Type != corev1.PodReady ||
		c[1].Status != corev1.ConditionFalse || !c[1].LastTransitionTime.Time.Equal(at) {
		t.Errorf("patched pod = %+v, want Ready False at %v beside the scheduled condition, UID u1", got, at)
	}
}
