package syncinformer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

// recorder keeps what a handler was told, in order.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
}

func (r *recorder) events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func name(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	l := obj.(*coordinationv1.Lease)
	return l.Name + "/" + *l.Spec.HolderIdentity
}

func (r *recorder) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { r.add(fmt.Sprintf("add %s initial=%v", name(obj), initial)) },
		UpdateFunc: func(_, obj any) { r.add("update " + name(obj)) },
		DeleteFunc: func(obj any) { r.add("delete " + name(obj)) },
	}
}

// run starts the informer and waits for its first list.
func run(t *testing.T, i cache.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		i.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !cache.WaitForCacheSync(ctx.Done(), i.HasSynced) {
		t.Fatal("informer did not sync")
	}
}

// waitFor waits until the recorder has seen want, in order.
func waitFor(t *testing.T, r *recorder, want ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return len(r.events()) >= len(want), nil })
	got := r.events()
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("handler was told %q, want %q", got, want)
	}
}

func TestHandlersAddedBeforeAndAfterTheStartHearAlike(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	src.Add(testobj.Lease("a", "1", time.Time{}))
	i := New(src, &coordinationv1.Lease{}, 0, nil)
	early := &recorder{}
	reg, err := i.AddEventHandler(early.handler())
	if err != nil {
		t.Fatal(err)
	}
	run(t, i)
	if !reg.HasSynced() {
		t.Fatal("a handler added before the start has not synced with its informer")
	}

	late := &recorder{}
	if _, err := i.AddEventHandler(late.handler()); err != nil {
		t.Fatal(err)
	}
	// A handler added to a running informer is told of what it holds
	// before AddEventHandler returns.
	if got := late.events(); fmt.Sprint(got) != fmt.Sprint([]string{"add a/1 initial=true"}) {
		t.Fatalf("late handler was told %q on registration", got)
	}

	src.Modify(testobj.Lease("a", "2", time.Time{}))
	src.Add(testobj.Lease("b", "1", time.Time{}))
	src.Delete(testobj.Lease("a", "2", time.Time{}))
	waitFor(t, early, "add a/1 initial=true", "update a/2", "add b/1 initial=false", "delete a/2")
	waitFor(t, late, "add a/1 initial=true", "update a/2", "add b/1 initial=false", "delete a/2")
}

func TestARemovedHandlerHearsNoMore(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	i := New(src, &coordinationv1.Lease{}, 0, nil)
	kept, removed := &recorder{}, &recorder{}
	if _, err := i.AddEventHandler(kept.handler()); err != nil {
		t.Fatal(err)
	}
	reg, err := i.AddEventHandler(removed.handler())
	if err != nil {
		t.Fatal(err)
	}
	run(t, i)
	src.Add(testobj.Lease("a", "1", time.Time{}))
	waitFor(t, removed, "add a/1 initial=false")
	if err := i.RemoveEventHandler(reg); err != nil {
		t.Fatal(err)
	}
	src.Add(testobj.Lease("b", "1", time.Time{}))
	waitFor(t, kept, "add a/1 initial=false", "add b/1 initial=false")
	if got := removed.events(); len(got) != 1 {
		t.Fatalf("removed handler was told %q", got)
	}
}

func TestTransformIsAppliedAndFixedAtStart(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	src.Add(testobj.Lease("a", "1", time.Time{}))
	i := New(src, &coordinationv1.Lease{}, 0, nil)
	if err := i.SetTransform(func(obj any) (any, error) {
		l := obj.(*coordinationv1.Lease).DeepCopy()
		l.Labels = map[string]string{"transformed": "yes"}
		return l, nil
	}); err != nil {
		t.Fatal(err)
	}
	run(t, i)
	obj, ok, err := i.GetStore().GetByKey("kube-node-lease/a")
	if err != nil || !ok || obj.(*coordinationv1.Lease).Labels["transformed"] != "yes" {
		t.Fatalf("stored %v, %v, %v; want the transformed lease", obj, ok, err)
	}
	if err := i.SetTransform(nil); err == nil {
		t.Fatal("the transform changed after the start")
	}
}

func TestAStoppedInformerTakesNoHandler(t *testing.T) {
	i := New(fcache.NewFakeControllerSource(), &coordinationv1.Lease{}, 0, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	i.RunWithContext(ctx)
	if !i.IsStopped() {
		t.Fatal("informer not stopped after its context ended")
	}
	if _, err := i.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err == nil {
		t.Fatal("a stopped informer took a handler")
	}
}
