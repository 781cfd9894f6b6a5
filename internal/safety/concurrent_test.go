package safety

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
)

// Looks that workers make at once decide as the same looks made one after
// another: the zone's rate lets as many taints through, the zone counts the
// same, whatever looks, ticks, heartbeats and pools' settings interleave
// with them (and
// the race detector finds no unguarded state).
func TestConcurrentLooksDecideAsSequentialOnes(t *testing.T) {
	const workers, perWorker = 8, 2
	run := func(concurrent bool) (took int, zone disruption.ZoneSnapshot) {
		m := newModel()
		var nodes []*corev1.Node
		for i := range 40 {
			nodes = append(nodes, node(fmt.Sprint("n-", i), corev1.ConditionTrue, t0))
		}
		seed(t, m, nodes...)
		beat(m, marked, nodes[workers*perWorker:]...)
		var mu sync.Mutex
		lookAt := func(w int) {
			for j := range perWorker {
				d := look(m, node(fmt.Sprint("n-", w+j*workers), corev1.ConditionUnknown, marked), marked)
				look(m, nodes[workers*perWorker+w], marked)
				if d.Write != nil && d.Write.Took {
					mu.Lock()
					took++
					mu.Unlock()
				}
			}
		}
		if !concurrent {
			for w := range workers {
				lookAt(w)
			}
			return took, m.Snapshot().Zones[disruption.ZoneID{Zone: "/z"}]
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { lookAt(w) })
		}
		wg.Go(func() {
			for i := range 50 {
				m.Tick(marked, false)
				m.SetPool("other", &disruption.Pool{UnhealthyZoneThreshold: 0.55, Paused: i%2 == 0}, marked)
				beat(m, marked, nodes[workers*perWorker+i%(40-workers*perWorker)])
			}
		})
		wg.Wait()
		return took, m.Snapshot().Zones[disruption.ZoneID{Zone: "/z"}]
	}
	wantTook, wantZone := run(false)
	if wantTook == 0 || wantTook == workers*perWorker {
		t.Fatalf("sequential looks tainted %d of %d dead nodes: the zone's rate should let some, not all, through", wantTook, workers*perWorker)
	}
	for range 20 {
		if took, zone := run(true); took != wantTook || zone != wantZone {
			t.Fatalf("concurrent looks tainted %d and counted %+v; one after another, %d and %+v", took, zone, wantTook, wantZone)
		}
	}
}
