package fleet

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func TestSetCondition(t *testing.T) {
	now := t0.Add(time.Hour)
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: at(0), LastTransitionTime: at(0)}
	maintenance := func(s corev1.ConditionStatus, hb, ltt metav1.Time) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeMaintenanceInProgress, Status: s, LastHeartbeatTime: hb, LastTransitionTime: ltt}
	}
	tests := []struct {
		name string
		prev []corev1.NodeCondition
		set  corev1.NodeCondition
		want []corev1.NodeCondition
	}{
		{
			name: "new condition is added, both times now",
			prev: []corev1.NodeCondition{ready},
			set:  maintenance(corev1.ConditionTrue, metav1.Time{}, metav1.Time{}),
			want: []corev1.NodeCondition{ready, maintenance(corev1.ConditionTrue, at(time.Hour), at(time.Hour))},
		},
		{
			name: "same status keeps the stored transition time",
			prev: []corev1.NodeCondition{maintenance(corev1.ConditionTrue, at(time.Minute), at(0)), ready},
			set:  maintenance(corev1.ConditionTrue, metav1.Time{}, metav1.Time{}),
			want: []corev1.NodeCondition{maintenance(corev1.ConditionTrue, at(time.Hour), at(0)), ready},
		},
		{
			name: "status change transitions now",
			prev: []corev1.NodeCondition{ready, maintenance(corev1.ConditionTrue, at(time.Minute), at(0))},
			set:  maintenance(corev1.ConditionFalse, metav1.Time{}, metav1.Time{}),
			want: []corev1.NodeCondition{ready, maintenance(corev1.ConditionFalse, at(time.Hour), at(time.Hour))},
		},
		{
			name: "given times are kept",
			prev: []corev1.NodeCondition{ready, maintenance(corev1.ConditionFalse, at(time.Minute), at(0))},
			set:  maintenance(corev1.ConditionTrue, at(-time.Hour), at(-2*time.Hour)),
			want: []corev1.NodeCondition{ready, maintenance(corev1.ConditionTrue, at(-time.Hour), at(-2*time.Hour))},
		},
		{
			name: "a second condition of the type goes",
			prev: []corev1.NodeCondition{
				maintenance(corev1.ConditionTrue, at(0), at(0)), ready, maintenance(corev1.ConditionFalse, at(0), at(0)),
			},
			set:  maintenance(corev1.ConditionTrue, metav1.Time{}, metav1.Time{}),
			want: []corev1.NodeCondition{maintenance(corev1.ConditionTrue, at(time.Hour), at(0)), ready},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := append([]corev1.NodeCondition(nil), tc.prev...)
			got := setCondition(prev, tc.set, now)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("conditions = %+v\nwant %+v", got, tc.want)
			}
			if !equality.Semantic.DeepEqual(prev, tc.prev) {
				t.Errorf("stored conditions modified: %+v, were %+v", prev, tc.prev)
			}
		})
	}
}

func TestClearCondition(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	drained := corev1.NodeCondition{Type: corev1.NodeDrained, Status: corev1.ConditionTrue}
	tests := []struct {
		name        string
		prev        []corev1.NodeCondition
		want        []corev1.NodeCondition
		wantChanged bool
	}{
		{name: "absent", prev: []corev1.NodeCondition{ready}, want: []corev1.NodeCondition{ready}},
		{name: "none at all"},
		{name: "present", prev: []corev1.NodeCondition{drained, ready}, want: []corev1.NodeCondition{ready}, wantChanged: true},
		{name: "twice", prev: []corev1.NodeCondition{drained, ready, drained}, want: []corev1.NodeCondition{ready}, wantChanged: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := clearCondition(tc.prev, corev1.NodeDrained)
			if changed != tc.wantChanged || !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("clearCondition = %+v, %v, want %+v, %v", got, changed, tc.want, tc.wantChanged)
			}
		})
	}
}

// TestConditionsOutliveReports sets MaintenanceInProgress on a running
// node, as a maintenance operator would before a reboot: the node's
// reporter, reporting every second, must keep the condition as it was
// written, times included, and must not bring it back once cleared.
func TestConditionsOutliveReports(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(20 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := t.Context()

	_, cfg := testenv.Start(t)
	f, err := Start(ctx, cfg, Options{
		Nodes:      2,
		NamePrefix: "conditions-",
		// Report at every sync, so that a report follows soon after the
		// write, and conflicts with it are likely.
		NodeStatusUpdateFrequency: time.Second,
		NodeStatusReportFrequency: time.Second,
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(f.Close)
	node, other := f.Nodes()[0], f.Nodes()[1]

	get := func(g Gomega, name string) *corev1.Node {
		n, err := f.Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}
	find := func(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == t {
				return &n.Status.Conditions[i]
			}
		}
		return nil
	}
	readyHeartbeat := func(g Gomega) time.Time {
		ready := find(get(g, node), corev1.NodeReady)
		g.Expect(ready).NotTo(BeNil())
		return ready.LastHeartbeatTime.Time
	}
	g.Eventually(readyHeartbeat).ShouldNot(BeZero())

	g.Expect(f.SetCondition(ctx, node, corev1.NodeCondition{
		Type: corev1.NodeMaintenanceInProgress, Status: corev1.ConditionTrue,
		Reason: "Reboot", Message: "kernel upgrade",
	})).To(Succeed())
	set := find(get(g, node), corev1.NodeMaintenanceInProgress)
	g.Expect(set).NotTo(BeNil())
	g.Expect(set.Status).To(Equal(corev1.ConditionTrue))
	g.Expect(set.LastHeartbeatTime.IsZero() || set.LastTransitionTime.IsZero()).To(BeFalse(), "times not filled in: %+v", set)

	// Times are stored in whole seconds, and a report stamps its time
	// after reading the Node, from the apiserver's cache: a Ready heartbeat
	// two seconds past the write is of a report whose read saw it.
	g.Eventually(readyHeartbeat).Should(BeTemporally(">=", set.LastHeartbeatTime.Add(2*time.Second)))
	got := find(get(g, node), corev1.NodeMaintenanceInProgress)
	g.Expect(got).NotTo(BeNil(), "MaintenanceInProgress lost to a report")
	g.Expect(got.LastHeartbeatTime.Equal(&set.LastHeartbeatTime)).To(BeTrue(),
		"lastHeartbeatTime %v, want %v as written", got.LastHeartbeatTime, set.LastHeartbeatTime)
	g.Expect(got.LastTransitionTime.Equal(&set.LastTransitionTime)).To(BeTrue(),
		"lastTransitionTime %v, want %v as written", got.LastTransitionTime, set.LastTransitionTime)
	g.Expect(equality.Semantic.DeepEqual(*got, *set)).To(BeTrue(), "MaintenanceInProgress = %+v, want %+v", got, set)
	g.Expect(find(get(g, other), corev1.NodeMaintenanceInProgress)).To(BeNil(), "condition set on the other node")

	g.Expect(f.ClearCondition(ctx, node, corev1.NodeMaintenanceInProgress)).To(Succeed())
	cleared := time.Now()
	g.Expect(find(get(g, node), corev1.NodeMaintenanceInProgress)).To(BeNil())
	g.Expect(f.ClearCondition(ctx, node, corev1.NodeMaintenanceInProgress)).To(Succeed(), "clearing an absent condition")
	g.Eventually(readyHeartbeat).Should(BeTemporally(">=", cleared.Truncate(time.Second).Add(2*time.Second)))
	g.Expect(find(get(g, node), corev1.NodeMaintenanceInProgress)).To(BeNil(), "MaintenanceInProgress back after a report")
}
