package taints

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cond(t corev1.NodeConditionType, s corev1.ConditionStatus) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: s}
}

func TestWantedNoSchedule(t *testing.T) {
	tests := []struct {
		name          string
		conds         []corev1.NodeCondition
		unschedulable bool
		want          []string
	}{
		{"ready", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue)}, false, nil},
		{"ready and cordoned", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue)}, true,
			[]string{corev1.TaintNodeUnschedulable}},
		{"not ready", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionFalse)}, false,
			[]string{corev1.TaintNodeNotReady}},
		{"unknown", []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown)}, false,
			[]string{corev1.TaintNodeUnreachable}},
		{"undefined status", []corev1.NodeCondition{cond(corev1.NodeReady, "Maybe")}, false,
			[]string{corev1.TaintNodeUnreachable}},
		{"no conditions at all", nil, false, []string{corev1.TaintNodeNotReady}},
		{"pressures", []corev1.NodeCondition{
			cond(corev1.NodeReady, corev1.ConditionTrue),
			cond(corev1.NodeMemoryPressure, corev1.ConditionTrue),
			cond(corev1.NodeDiskPressure, corev1.ConditionTrue),
			cond(corev1.NodePIDPressure, corev1.ConditionTrue),
			cond(corev1.NodeNetworkUnavailable, corev1.ConditionTrue),
		}, false, []string{corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure,
			corev1.TaintNodePIDPressure, corev1.TaintNodeNetworkUnavailable}},
		{"pressure conditions unknown add nothing", []corev1.NodeCondition{
			cond(corev1.NodeReady, corev1.ConditionTrue),
			cond(corev1.NodeMemoryPressure, corev1.ConditionUnknown),
			cond("VendorCondition", corev1.ConditionTrue),
		}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: tt.unschedulable}, Status: corev1.NodeStatus{Conditions: tt.conds}}
			got := WantedNoSchedule(n)
			if !slices.Equal(got, tt.want) && (len(got) != 0 || len(tt.want) != 0) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReconcileNoSchedule(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	n := &corev1.Node{
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &earlier},
			{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &earlier},
			{Key: corev1.TaintNodeDiskPressure, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &earlier},
		}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			cond(corev1.NodeReady, corev1.ConditionUnknown),
			cond(corev1.NodeDiskPressure, corev1.ConditionTrue),
		}},
	}
	got, changed := ReconcileNoSchedule(n, now)
	if !changed {
		t.Fatal("want changed")
	}
	want := []corev1.Taint{
		{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &earlier},
		{Key: corev1.TaintNodeDiskPressure, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &earlier},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].MatchTaint(&want[i]) || !got[i].TimeAdded.Equal(want[i].TimeAdded) {
			t.Errorf("taint %d: got %v, want %v", i, got[i].ToString(), want[i].ToString())
		}
	}

	n.Spec.Taints = got
	if _, changed := ReconcileNoSchedule(n, metav1.NewTime(now.Add(time.Minute))); changed {
		t.Fatal("a reconciled node changed again")
	}

	// Healthy again: the condition taints go, the user's taints stay.
	n.Status.Conditions = []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionTrue)}
	got, _ = ReconcileNoSchedule(n, now)
	if len(got) != 2 || got[0].Key != "dedicated" || got[1].Effect != corev1.TaintEffectNoExecute {
		t.Fatalf("after recovery: %v", got)
	}
}
