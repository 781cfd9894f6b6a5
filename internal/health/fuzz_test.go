package health

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzJudge checks the verdict's invariants for any Ready condition, any
// heartbeat time and any grace periods: it never panics, the deadline is the
// last heartbeat plus the grace that applies, the deadline itself belongs to
// the expired side, and an expired node is unreachable.
func FuzzJudge(f *testing.F) {
	f.Add(true, "True", "KubeletReady", int64(-30), int64(0), int64(50), int64(60))
	f.Add(true, "Unknown", ReasonNeverUpdated, int64(-61), int64(0), int64(50), int64(60))
	f.Add(false, "", "", int64(-60), int64(0), int64(50), int64(60))
	f.Add(true, "False", "KubeletNotReady", int64(-50), int64(50), int64(50), int64(60))
	f.Add(true, "Bogus", "", int64(1<<40), int64(-1<<40), int64(1), int64(1))
	f.Fuzz(func(t *testing.T, hasReady bool, status, reason string, heartbeatOffset, nowOffset, monitorSeconds, startupSeconds int64) {
		base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(base)}}
		if hasReady {
			node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady,
				Status: corev1.ConditionStatus(status), Reason: reason}}
		}
		grace := Grace{Monitor: time.Duration(monitorSeconds%1e6) * time.Second, Startup: time.Duration(startupSeconds%1e6) * time.Second}
		last := base.Add(time.Duration(heartbeatOffset%1e9) * time.Second)
		now := base.Add(time.Duration(nowOffset%1e9) * time.Second)

		v := Judge(node, last, grace, now)

		period := grace.Monitor
		if v.NeverReported {
			period = grace.Startup
		}
		if !v.Deadline.Equal(last.Add(period)) {
			t.Fatalf("deadline %v, want last heartbeat %v + %v", v.Deadline, last, period)
		}
		if v.Expired != !now.Before(v.Deadline) {
			t.Fatalf("expired %v at %v with deadline %v", v.Expired, now, v.Deadline)
		}
		if v.Expired && v.State != StateUnreachable {
			t.Fatalf("expired but %v", v.State)
		}
		if v.State == StateUnjudged {
			t.Fatal("a judged node is unjudged")
		}
		if v.State == StateHealthy && (!hasReady || status != string(corev1.ConditionTrue)) {
			t.Fatalf("healthy without Ready=True (ready %v, %q)", hasReady, status)
		}
	})
}
