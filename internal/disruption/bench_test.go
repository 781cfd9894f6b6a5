package disruption

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkGuardUpdate is the guard's share of a heartbeat: a node whose
// status did not change, in a 5,000-node cluster over three zones.
func BenchmarkGuardUpdate(b *testing.B) {
	const nodes = 5000
	g := NewGuard(Config{Rates: Rates{Normal: 0.1, Secondary: 0.01, LargeClusterSizeThreshold: 50},
		UnhealthyZoneThreshold: 0.55, FreezeThreshold: 0.6, FreezeWindow: time.Minute, FreezeCooldown: time.Minute})
	names := make([]string, nodes)
	zones := []string{"z0", "z1", "z2"}
	for i := range names {
		names[i] = fmt.Sprint("node-", i)
		g.Update(names[i], NodeStatus{Zone: zones[i%3], Ready: true}, t0)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		n := i % nodes
		g.Update(names[n], NodeStatus{Zone: zones[n%3], Ready: true}, t0)
	}
}
