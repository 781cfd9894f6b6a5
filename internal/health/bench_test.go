package health

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

// BenchmarkHeartbeat is the per-heartbeat path: read the pulse of a renewed
// Lease, observe it, judge the node.
func BenchmarkHeartbeat(b *testing.B) {
	const nodes = 5000
	tr, node, lease, names := trackedFleet(nodes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		lease.Spec.RenewTime.Time = now
		name := names[i%nodes]
		obs := tr.Observe(name, types.UID(name), PulseOf(node, lease), now)
		_ = Judge(node, obs.LastHeartbeat, grace, now)
	}
}

// BenchmarkHeardLease is what the controller does for most events of a
// cluster, the renewal of a healthy node's Lease: hear it, and find the node
// needs no reconcile.
func BenchmarkHeardLease(b *testing.B) {
	const nodes = 5000
	tr, _, lease, names := trackedFleet(nodes)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		now := t0.Add(time.Duration(i+1) * time.Millisecond)
		lease.Spec.RenewTime.Time = now
		name := names[i%nodes]
		if tr.HeardLease(name, lease, now) != OnTime {
			b.Fatalf("renewal of healthy %s not heard as a heartbeat", name)
		}
	}
}

// trackedFleet returns a tracker that has observed and judged n healthy
// nodes, which share one Node and one Lease object, and the nodes' names.
func trackedFleet(n int) (*Tracker, *corev1.Node, *coordinationv1.Lease, []string) {
	tr := NewTracker()
	node := testobj.Node("n1", testobj.Ready(corev1.ConditionTrue))
	lease := (&leaseState{renew: t0}).object()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprint("node-", i)
		obs := tr.Observe(names[i], types.UID(names[i]), PulseOf(node, lease), t0)
		tr.Judged(names[i], Judge(node, obs.LastHeartbeat, grace, t0))
	}
	return tr, node, lease, names
}

// BenchmarkJudge is the verdict alone, which the controller gives a node
// when its Node changes, when its deadline comes and at each resync: for a
// node within its grace, one past its deadline, and one that never posted a
// Ready condition.
func BenchmarkJudge(b *testing.B) {
	cases := []struct {
		name string
		node *corev1.Node
		now  time.Time
	}{
		{"healthy", testobj.Node("n1", testobj.Ready(corev1.ConditionTrue)), t0.Add(10 * time.Second)},
		{"expired", testobj.Node("n1", testobj.Ready(corev1.ConditionTrue)), t0.Add(time.Minute)},
		{"never reported", testobj.Node("n1"), t0.Add(30 * time.Second)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Judge(c.node, t0, grace, c.now)
			}
		})
	}
}
