package status

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
)

var (
	t0       = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	defaults = policy.Settings{
		Grace:              health.Grace{Monitor: 50 * time.Second, Startup: time.Minute},
		PodEvictionTimeout: 5 * time.Minute,
		Disruption:         disruption.Pool{Rates: disruption.Rates{Normal: 0.1}, UnhealthyZoneThreshold: 0.55},
	}
)

func testNode(name, zone string, ready corev1.ConditionStatus, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: ready, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.",
			LastHeartbeatTime: metav1.NewTime(t0.Add(-2 * time.Minute)), LastTransitionTime: metav1.NewTime(t0.Add(-70 * time.Second)),
		}}},
	}
}

func testPod(name, node string, tolerations ...corev1.Toleration) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: tolerations}}
}

func storyInput() Input {
	added := metav1.NewTime(t0.Add(-60 * time.Second))
	dead := testNode("dead", "a", corev1.ConditionUnknown,
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &added},
		corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
	return Input{
		Now:   t0,
		Nodes: []corev1.Node{testNode("ok", "a", corev1.ConditionTrue), dead, testNode("ok2", "b", corev1.ConditionTrue)},
		Leases: []coordinationv1.Lease{{ObjectMeta: metav1.ObjectMeta{Name: "dead"},
			Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: t0.Add(-100 * time.Second)}}}},
		Pods: []corev1.Pod{
			testPod("plain", "dead"),
			testPod("tolerant", "dead", corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}),
			testPod("elsewhere", "ok"),
		},
		Policies: policy.NewSet(defaults, nil),
	}
}

func TestReportTellsTheStoryOfADeadNode(t *testing.T) {
	r := Build(storyInput())
	if len(r.Zones) != 2 || r.Zones[0].Name != "/a" || r.Zones[0].NotReady != 1 || r.Zones[0].State != "Normal" ||
		r.Zones[1].State != "Normal" || r.AllZonesDown || r.PartitionFreeze != nil {
		t.Fatalf("zones: %+v", r)
	}
	if len(r.Unhealthy) != 1 {
		t.Fatalf("unhealthy: %+v", r.Unhealthy)
	}
	n := r.Unhealthy[0]
	if n.Name != "dead" || n.Verdict != "Unreachable" || n.Reason != "NodeStatusUnknown" || n.Held != "" {
		t.Fatalf("node: %+v", n)
	}
	// The Lease renewed 100s ago is the later heartbeat.
	if n.HeartbeatAge == nil || time.Duration(*n.HeartbeatAge) != 100*time.Second {
		t.Fatalf("heartbeat age: %v", n.HeartbeatAge)
	}
	want := map[string]struct {
		left time.Duration
		by   string
	}{
		"plain":    {4 * time.Minute, "PodEvictionTimeout"}, // 5m from a taint added 60s ago
		"tolerant": {-30 * time.Second, "TolerationSeconds"},
	}
	if len(n.Pods) != 2 {
		t.Fatalf("pods: %+v", n.Pods)
	}
	for _, p := range n.Pods {
		w := want[p.Name]
		if p.TimeLeft == nil || time.Duration(*p.TimeLeft) != w.left || p.DecidedBy != w.by || p.Taint != corev1.TaintNodeUnreachable {
			t.Errorf("pod %s: left %v by %s (%s), want %v by %s", p.Name, p.TimeLeft, p.DecidedBy, p.Taint, w.left, w.by)
		}
	}

	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"Node dead (zone /a)",
		"Verdict:    Unreachable (NodeStatusUnknown: Kubelet stopped posting node status.) since 11:58:50Z",
		"Heartbeat:  1m40s ago",
		"node.kubernetes.io/unreachable:NoExecute (added 11:59:00Z)",
		"in 4m0s (12:04:00Z)",
		"due now (11:59:30Z)",
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text output lacks %q:\n%s", line, text.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !strings.Contains(js.String(), `"timeLeft": "4m0s"`) {
		t.Fatalf("json: %v\n%s", err, js.String())
	}
}

func TestReportSaysWhatHoldsEvictionBack(t *testing.T) {
	t.Run("freeze", func(t *testing.T) {
		in := storyInput()
		in.FrozenSince = t0.Add(-time.Minute)
		if n := Build(in).Unhealthy[0]; n.Held != HeldFreeze {
			t.Fatalf("held %q", n.Held)
		}
	})
	t.Run("every zone down", func(t *testing.T) {
		in := storyInput()
		in.Nodes = in.Nodes[1:2]
		if r := Build(in); !r.AllZonesDown || r.Unhealthy[0].Held != HeldAllDown {
			t.Fatalf("report %+v", r)
		}
	})
	t.Run("policy breaker", func(t *testing.T) {
		in := storyInput()
		p := v1alpha1.NodeHealthPolicy{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
		p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionEvictionAllowed, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonTooManyUnhealthy, Message: "2 of 3 nodes are unhealthy"}}
		in.PolicyObjects = []v1alpha1.NodeHealthPolicy{p}
		in.Policies = policy.NewSet(defaults, in.PolicyObjects)
		n := Build(in).Unhealthy[0]
		if n.Pool != "pool" || !strings.Contains(n.Held, "TooManyUnhealthy") {
			t.Fatalf("node %+v", n)
		}
	})
	t.Run("policy not in force", func(t *testing.T) {
		in := storyInput()
		// Valid alone, but its grace is not below the flags' timeout.
		p := v1alpha1.NodeHealthPolicy{ObjectMeta: metav1.ObjectMeta{Name: "pool"},
			Spec: v1alpha1.NodeHealthPolicySpec{NodeMonitorGracePeriod: &metav1.Duration{Duration: time.Hour}}}
		in.PolicyObjects = []v1alpha1.NodeHealthPolicy{p}
		in.Policies = policy.NewSet(defaults, in.PolicyObjects)
		n := Build(in).Unhealthy[0]
		if n.Pool != "pool" || !strings.Contains(n.Held, "not in force") {
			t.Fatalf("node %+v", n)
		}
	})
}
