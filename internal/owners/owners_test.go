package owners

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

var at = metav1.NewTime(time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC))

// entry is a managed fields entry as the apiserver writes it.
func entry(manager, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: &at, FieldsType: "FieldsV1", Subresource: subresource, FieldsV1: metav1.NewFieldsV1(fields)}
}

// The kubelet keeps the Ready condition's type and heartbeat when another
// writer marks it Unknown; the writer takes its status, reason and message.
var (
	kubeletStatus = entry("kubelet", "status", `{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastHeartbeatTime":{},"f:type":{}}},"f:images":{}}}`)
	kcmMark       = entry("kube-controller-manager", "status", `{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{}}}}}`)
	kcmTaints     = entry("kube-controller-manager", "", `{"f:spec":{"f:taints":{}}}`)
	labels        = entry("kubectl-label", "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`)
)

func TestTrimKeepsOnlyWhoWroteTheLifecycleStateOfANodeInTrouble(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{kubeletStatus, kcmMark, kcmTaints, labels}
	if got := Trim(testobj.Node("n1", testobj.Ready(corev1.ConditionTrue)), managed); got != nil {
		t.Fatalf("a healthy node keeps %v, want nothing", got)
	}
	trimmed := Trim(testobj.Node("n1", testobj.Ready(corev1.ConditionUnknown), testobj.Taints(corev1.TaintEffectNoExecute, corev1.TaintNodeUnreachable)), managed)
	if len(trimmed) != 2 {
		t.Fatalf("kept %d entries, want kube-controller-manager's two: %v", len(trimmed), trimmed)
	}
	got := Of(trimmed)
	if len(got) != 2 || got[0].Manager != "kube-controller-manager" || !slices.Equal(got[0].Holds, []What{Mark}) ||
		!slices.Equal(got[1].Holds, []What{Taints}) || !got[0].Time.Equal(&at) {
		t.Fatalf("Of(trimmed) = %+v, want kube-controller-manager holding the mark, then the taints", got)
	}
	// Trimmed entries read the same as whole ones.
	if whole := Of(managed); len(whole) != 2 || !slices.Equal(whole[0].Holds, got[0].Holds) {
		t.Fatalf("Of(whole) = %+v, want what Of(trimmed) says", whole)
	}
}

func TestInTrouble(t *testing.T) {
	for _, tc := range []struct {
		node *corev1.Node
		want bool
	}{
		{testobj.Node("n1", testobj.Ready(corev1.ConditionTrue)), false},
		{testobj.Node("n1", testobj.Ready(corev1.ConditionFalse)), false},
		{testobj.Node("n1", testobj.Ready(corev1.ConditionUnknown)), true},
		{testobj.Node("n1", testobj.Ready(corev1.ConditionTrue), testobj.Taints(corev1.TaintEffectNoExecute, corev1.TaintNodeNotReady)), true},
		{testobj.Node("n1", testobj.Ready(corev1.ConditionTrue), testobj.Taints(corev1.TaintEffectNoExecute, "example.com/dedicated")), false},
	} {
		if got := InTrouble(tc.node); got != tc.want {
			t.Errorf("InTrouble(Ready=%s, taints %v) = %v, want %v", tc.node.Status.Conditions[0].Status, tc.node.Spec.Taints, got, tc.want)
		}
	}
}

func TestManagerOfIsWhatTheApiserverRecords(t *testing.T) {
	for ua, want := range map[string]string{
		"node-lifecycle-controller/v0.1.0 (linux/amd64)":                  "node-lifecycle-controller",
		"kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abcdef": "kube-controller-manager",
		"no-slash": "no-slash",
	} {
		if got := ManagerOf(ua); got != want {
			t.Errorf("ManagerOf(%q) = %q, want %q", ua, got, want)
		}
	}
	if got := ManagerOf(""); got == "" {
		t.Error("ManagerOf(\"\") is empty, want client-go's default agent's name")
	}
}
