package safety

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
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

// Seeding reads every node's settings before it takes the model's turn:
// the policy source, read for the first time then, gives the model its
// pools, which takes the turn too. Read under the turn, the first look of
// a controller that started with policies would never end, nor would any
// look after it.
func TestSeedReadsSettingsOutsideTheTurn(t *testing.T) {
	m := newModel()
	loaded := false
	settingsOf := func(*corev1.Node) policy.Settings {
		if !loaded {
			loaded = true
			m.SetPool("gpu", &disruption.Pool{UnhealthyZoneThreshold: 0.55}, t0)
		}
		return settings
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Seed([]*corev1.Node{node("n-0", corev1.ConditionTrue, t0)}, settingsOf, Kept{}, t0, t0)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Seed has not returned within a minute: it waits for its own turn")
	}
	if !m.Seeded() {
		t.Error("the model is not seeded")
	}
}
