package nodehealth

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// newQueue returns a work queue that is shut down when the test ends.
func newQueue(t *testing.T) queue {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	return q
}

// drain returns the names queued, in order, and empties q.
func drain(q queue) []string {
	var names []string
	for q.Len() > 0 {
		r, _ := q.Get()
		names = append(names, r.Name)
		q.Done(r)
		q.Forget(r)
	}
	return names
}

// TestLeaseHeartbeats: a healthy node's renewal is heard and queues
// nothing; a Lease added is heard and queued; an update that changes
// nothing of the spec is not a heartbeat; a deletion, also as a tombstone,
// queues the node; a Lease outside kube-node-lease queues nothing.
func TestLeaseHeartbeats(t *testing.T) {
	f := newFixture(t, []client.Object{readyNode(), nodeLease(t0)}, nil, nil)
	f.reconcile(t)
	q := newQueue(t)
	h := f.r.leaseHeartbeats(q)

	f.clock.Step(10 * time.Second)
	h.OnUpdate(nodeLease(t0), nodeLease(f.clock.Now()))
	if got := drain(q); len(got) != 0 {
		t.Errorf("a healthy node's renewal queued %v, want nothing", got)
	}
	if d, _ := f.r.d.Model.Deadline("n1"); !d.Equal(f.clock.Now().Add(grace.Monitor)) {
		t.Errorf("deadline %v after the renewal, want %v", d, f.clock.Now().Add(grace.Monitor))
	}

	renewed := f.clock.Now()
	f.clock.Step(10 * time.Second)
	relabelled := nodeLease(renewed)
	relabelled.Labels = map[string]string{"a": "b"}
	if leaseSpecChanged(nodeLease(renewed), relabelled) {
		t.Error("a relabelled Lease is taken for a heartbeat")
	}
	h.OnUpdate(nodeLease(renewed), relabelled)
	if d, _ := f.r.d.Model.Deadline("n1"); !d.Equal(renewed.Add(grace.Monitor)) {
		t.Errorf("deadline %v after an update that renews nothing, want %v", d, renewed.Add(grace.Monitor))
	}

	h.OnAdd(nodeLease(f.clock.Now()), false)
	h.OnDelete(nodeLease(f.clock.Now()))
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: LeaseNamespace + "/n1", Obj: nodeLease(f.clock.Now())})
	if got := drain(q); len(got) != 1 || got[0] != "n1" {
		// The queue holds a request once until it is taken.
		t.Errorf("add and deletions queued %v, want n1", got)
	}
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Key: LeaseNamespace + "/n1", Obj: nodeLease(f.clock.Now())})
	if got := drain(q); len(got) != 1 || got[0] != "n1" {
		t.Errorf("a deletion seen as a tombstone queued %v, want n1", got)
	}

	other := nodeLease(f.clock.Now())
	other.Namespace = "kube-system"
	h.OnAdd(other, false)
	h.OnDelete(other)
	if got := drain(q); len(got) != 0 {
		t.Errorf("a Lease outside %s queued %v, want nothing", LeaseNamespace, got)
	}
}

// TestNodeHeartbeatsLeaveAdditionsToFor: a Node added is heard but not
// queued, which the controller's For does; a deletion is no heartbeat.
func TestNodeHeartbeatsLeaveAdditionsToFor(t *testing.T) {
	f := newFixture(t, []client.Object{readyNode(), nodeLease(t0)}, nil, nil)
	f.reconcile(t)
	q := newQueue(t)
	h := f.r.nodeHeartbeats(q)
	f.clock.Step(40 * time.Second)
	n := f.node(t)
	n.Status.Conditions[0].LastHeartbeatTime.Time = f.clock.Now()
	h.OnAdd(n, false)
	h.OnDelete(n)
	if got := drain(q); len(got) != 0 {
		t.Errorf("queued %v, want nothing", got)
	}
	if d, _ := f.r.d.Model.Deadline("n1"); !d.Equal(f.clock.Now().Add(grace.Monitor)) {
		t.Errorf("deadline %v, want %v: the added Node's heartbeat was not heard", d, f.clock.Now().Add(grace.Monitor))
	}
}

// TestHeartbeatSourceWaitsForTheFirstList: the controller's workers wait
// until the handler has heard the informer's first list, so that no node
// is judged before its heartbeats are known; the handler then hears every
// change.
func TestHeartbeatSourceWaitsForTheFirstList(t *testing.T) {
	informer := controllertest.NewFakeInformer()
	informers := &informertest.FakeInformers{
		Scheme: clientgoscheme.Scheme,
		InformersByGVK: map[schema.GroupVersionKind]toolscache.SharedIndexInformer{
			coordinationv1.SchemeGroupVersion.WithKind("Lease"): informer,
		},
	}
	f := newFixture(t, []client.Object{readyNode(), nodeLease(t0)}, nil, nil)
	f.reconcile(t)
	s := &heartbeatSource{cache: informers, obj: &coordinationv1.Lease{}, handler: f.r.leaseHeartbeats}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := newQueue(t)
	if err := s.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	// The informer never lists until told to: the wait can only end with
	// its context.
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	if err := s.WaitForSync(short); err == nil {
		t.Fatal("WaitForSync returned before the informer listed")
	}
	informer.Synced()
	if err := s.WaitForSync(ctx); err != nil {
		t.Fatalf("WaitForSync: %v", err)
	}

	f.clock.Step(10 * time.Second)
	informer.Update(nodeLease(t0), nodeLease(f.clock.Now()))
	if d, _ := f.r.d.Model.Deadline("n1"); !d.Equal(f.clock.Now().Add(grace.Monitor)) {
		t.Errorf("deadline %v, want %v: the renewal was not heard through the source", d, f.clock.Now().Add(grace.Monitor))
	}
	informer.Delete(nodeLease(f.clock.Now()))
	if got := drain(q); len(got) != 1 || got[0] != "n1" {
		t.Errorf("the Lease's deletion queued %v, want n1", got)
	}
}
