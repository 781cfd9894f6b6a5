package nodehealth

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podReadyOf returns the Ready status of the named pod as the cache holds it.
func (f *fixture) podReadyOf(t *testing.T, name string) corev1.ConditionStatus {
	t.Helper()
	p := &corev1.Pod{}
	if err := f.cached.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p.Status.Conditions[0].Status
}

// silentNodeWithAPod returns a fixture whose node n1, with its pod p1, has
// gone silent past its grace and been looked at, with pod workers of its
// own.
func silentNodeWithAPod(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, []client.Object{readyNode(), readyPod("p1", "n1")}, nil, nil)
	f.holdPods = true
	f.reconcile(t)
	f.clock.Step(grace.Monitor)
	f.reconcile(t)
	return f
}

// TestPodsAreMarkedOffTheLook: the look that finds a node silent only
// queues its pods; the pod workers mark them, so that no other node's look
// waits behind them.
func TestPodsAreMarkedOffTheLook(t *testing.T) {
	f := silentNodeWithAPod(t)
	if got := f.podReadyOf(t, "p1"); got != corev1.ConditionTrue {
		t.Fatalf("pod Ready = %s after the look: the look wrote it", got)
	}
	if n := f.r.world.podMarks.queue.Len(); n != 1 {
		t.Fatalf("%d nodes queued for their pods, want 1", n)
	}
	f.r.world.podMarks.next(context.Background())
	if got := f.podReadyOf(t, "p1"); got != corev1.ConditionFalse {
		t.Fatalf("pod Ready = %s after its turn, want False", got)
	}
}

// TestANodeBackByItsPodsTurnKeepsThem: a node that reported Ready again
// between its look and its pods' turn keeps its pods' readiness.
func TestANodeBackByItsPodsTurnKeepsThem(t *testing.T) {
	f := silentNodeWithAPod(t)
	n := f.node(t)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.NewTime(f.clock.Now())}}
	if err := f.cached.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	f.r.world.podMarks.next(context.Background())
	if got := f.podReadyOf(t, "p1"); got != corev1.ConditionTrue {
		t.Fatalf("pod Ready = %s: marked NotReady on a node back since its look", got)
	}
}

// TestPodWritesShareTheirSlots: however many nodes' pods are marked at
// once, no more than podWrites writes are in flight; one more waits for a
// slot, and gives up when its context ends.
func TestPodWritesShareTheirSlots(t *testing.T) {
	p := newPodMarks(nil)
	ctx := context.Background()
	var running atomic.Int32
	release := make(chan struct{})
	done := make(chan error, podWrites)
	for range podWrites {
		go func() {
			done <- p.write(ctx, func() error {
				running.Add(1)
				<-release
				return nil
			})
		}()
	}
	for running.Load() < podWrites {
		select {
		case err := <-done:
			t.Fatalf("a write ended before any was released: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	// With every slot taken, one more write waits, until its context ends.
	waiting, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	sent := false
	if err := p.write(waiting, func() error { sent = true; return nil }); !errors.Is(err, context.DeadlineExceeded) || sent {
		t.Fatalf("a write beyond the slots: sent %v, err %v; want it held back until its context ended", sent, err)
	}
	close(release)
	for range podWrites {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := p.write(ctx, func() error { sent = true; return nil }); err != nil || !sent {
		t.Fatalf("a write with slots free: sent %v, err %v", sent, err)
	}
}
