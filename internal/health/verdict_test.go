package health

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

var (
	t0    = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	grace = Grace{Monitor: 50 * time.Second, Startup: time.Minute}
)

func TestJudge(t *testing.T) {
	tests := []struct {
		name          string
		node          *corev1.Node
		lastHeartbeat time.Time
		now           time.Time
		wantState     State
		wantDeadline  time.Time
		wantExpired   bool
	}{
		{"ready and fresh", testobj.Node("n1", testobj.Ready(corev1.ConditionTrue)), t0, t0.Add(10 * time.Second),
			StateHealthy, t0.Add(50 * time.Second), false},
		{"one nanosecond before the deadline", testobj.Node("n1", testobj.Ready(corev1.ConditionTrue)), t0, t0.Add(50*time.Second - 1),
			StateHealthy, t0.Add(50 * time.Second), false},
		{"exactly at the deadline", testobj.Node("n1", testobj.Ready(corev1.ConditionTrue)), t0, t0.Add(50 * time.Second),
			StateUnreachable, t0.Add(50 * time.Second), true},
		{"past the deadline", testobj.Node("n1", testobj.Ready(corev1.ConditionTrue)), t0, t0.Add(time.Hour),
			StateUnreachable, t0.Add(50 * time.Second), true},
		{"kubelet says not ready", testobj.Node("n1", testobj.Ready(corev1.ConditionFalse)), t0, t0,
			StateNotReady, t0.Add(50 * time.Second), false},
		{"not ready and silent", testobj.Node("n1", testobj.Ready(corev1.ConditionFalse)), t0, t0.Add(51 * time.Second),
			StateUnreachable, t0.Add(50 * time.Second), true},
		{"unknown within grace stays unreachable until the kubelet reports", testobj.Node("n1", testobj.Ready(corev1.ConditionUnknown)),
			t0, t0.Add(time.Second), StateUnreachable, t0.Add(50 * time.Second), false},
		{"a status no API version defines is not ready", testobj.Node("n1", testobj.Ready("Maybe")), t0, t0,
			StateUnreachable, t0.Add(50 * time.Second), false},
		{"never reported gets the startup grace", testobj.Node("n1"), t0, t0.Add(55 * time.Second),
			StateNeverReported, t0.Add(time.Minute), false},
		{"never reported past the startup grace", testobj.Node("n1"), t0, t0.Add(time.Minute),
			StateUnreachable, t0.Add(time.Minute), true},
		{"marked never updated keeps the startup grace",
			testobj.Node("n1", testobj.Conditions(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: ReasonNeverUpdated})),
			t0, t0.Add(55 * time.Second),
			StateUnreachable, t0.Add(time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.node, tt.lastHeartbeat, grace, tt.now)
			if v.State != tt.wantState || !v.Deadline.Equal(tt.wantDeadline) || v.Expired != tt.wantExpired {
				t.Errorf("got %s deadline=%v expired=%v, want %s deadline=%v expired=%v",
					v.State, v.Deadline, v.Expired, tt.wantState, tt.wantDeadline, tt.wantExpired)
			}
		})
	}
}

// TestJudgeFromHeartbeats runs the tracker and the verdict together over the
// heartbeat sequences that matter: either heartbeat keeps a node alive.
func TestJudgeFromHeartbeats(t *testing.T) {
	type step struct {
		at        time.Duration // after t0
		leaseRenw *time.Duration
		readyHB   *time.Duration
		wantState State
	}
	d := func(x time.Duration) *time.Duration { return &x }
	tests := []struct {
		name     string
		hasLease bool
		steps    []step
	}{
		{"lease fresh, status stale stays healthy", true, []step{
			{0, d(0), d(0), StateHealthy},
			{40 * time.Second, d(40 * time.Second), nil, StateHealthy},
			{80 * time.Second, d(80 * time.Second), nil, StateHealthy},
			{120 * time.Second, d(120 * time.Second), nil, StateHealthy},
		}},
		{"status fresh, no lease stays healthy", false, []step{
			{0, nil, d(0), StateHealthy},
			{40 * time.Second, nil, d(40 * time.Second), StateHealthy},
			{80 * time.Second, nil, d(80 * time.Second), StateHealthy},
		}},
		{"both stop", true, []step{
			{0, d(0), d(0), StateHealthy},
			{49 * time.Second, nil, nil, StateHealthy},
			{50 * time.Second, nil, nil, StateUnreachable},
		}},
		{"renewTime jumping backwards is a heartbeat", true, []step{
			{0, d(0), d(0), StateHealthy},
			{40 * time.Second, d(-time.Hour), nil, StateHealthy},
			{80 * time.Second, d(-2 * time.Hour), nil, StateHealthy},
			{129 * time.Second, nil, nil, StateHealthy},
			{130 * time.Second, nil, nil, StateUnreachable},
		}},
		{"recovery after the deadline", true, []step{
			{0, d(0), d(0), StateHealthy},
			{60 * time.Second, nil, nil, StateUnreachable},
			{70 * time.Second, d(70 * time.Second), d(70 * time.Second), StateHealthy},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker()
			node := testobj.Node("n1", testobj.Ready(corev1.ConditionTrue))
			var lease *leaseState
			if tt.hasLease {
				lease = &leaseState{}
			}
			for _, s := range tt.steps {
				now := t0.Add(s.at)
				if s.readyHB != nil {
					node.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(*s.readyHB))
				}
				if s.leaseRenw != nil {
					lease.renew = t0.Add(*s.leaseRenw)
				}
				obs := tr.Observe("n1", "uid", PulseOf(node, lease.object()), now)
				v := Judge(node, obs.LastHeartbeat, grace, now)
				if v.State != s.wantState {
					t.Fatalf("at %v: got %s, want %s", s.at, v.State, s.wantState)
				}
			}
		})
	}
}
