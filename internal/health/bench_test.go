package health

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkHeartbeat is the per-heartbeat path: read the pulse of a renewed
// Lease, observe it, judge the node.
func BenchmarkHeartbeat(b *testing.B) {
	const nodes = 5000
	tr := NewTracker()
	node := nodeWithReady(corev1.ConditionTrue, "KubeletReady")
	lease := (&leaseState{renew: t0}).object()
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprint("node-", i)
		tr.Observe(names[i], types.UID(names[i]), PulseOf(node, lease), t0)
	}
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
