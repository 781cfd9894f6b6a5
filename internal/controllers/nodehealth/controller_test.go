package nodehealth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/index"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/readback"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety/act"
)

var (
	t0    = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	grace = health.Grace{Monitor: 50 * time.Second, Startup: time.Minute}
	req   = ctrl.Request{NamespacedName: client.ObjectKey{Name: "n1"}}
)

func readyNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-1", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.NewTime(t0.Add(-time.Hour)),
		}}},
	}
}

func nodeLease(renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: LeaseNamespace, Name: "n1"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("n1"), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: &metav1.MicroTime{Time: renew},
		},
	}
}

type fixture struct {
	r      *Reconciler
	clock  *clocktesting.FakeClock
	events *events.FakeRecorder
	cached client.Client
	// tracker and guard are the model's parts, for the tests to set up
	// and read what no look shows.
	tracker *health.Tracker
	guard   *disruption.Guard
	// holdPods leaves the nodes queued for their pods' turn to the test.
	holdPods bool
}

// newFixture builds a reconciler whose cache and live reads may disagree:
// cached serves reads and takes writes, live answers the verification reads.
func newFixture(t *testing.T, cached []client.Object, live client.Reader, funcs *interceptor.Funcs) *fixture {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithStatusSubresource(&corev1.Node{}, &corev1.Pod{}).WithObjects(cached...).
		WithIndex(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameFunc())
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	c := b.Build()
	if live == nil {
		live = c
	}
	f := &fixture{clock: clocktesting.NewFakeClock(t0), events: events.NewFakeRecorder(20), cached: c,
		tracker: health.NewTracker(),
		guard:   disruption.NewGuard(disruption.Config{Rates: disruption.Rates{Normal: 0.1}, UnhealthyZoneThreshold: 0.55})}
	f.r = New(Deps{Client: c, APIReader: live, Clock: f.clock, Recorder: f.events, Grace: grace,
		Model: safety.New(f.tracker, f.guard, grace.Monitor)})
	// Started at no time: every node is announced as registered.
	f.r.told.started = time.Time{}
	return f
}

// reconcile reconciles n1, as the work queue would: again while its wake
// is due at once, as it is after a mark, which leaves the rest of the look
// to the node's next turn. Its result's RequeueAfter tells when the node
// is looked at next: its wake.
func (f *fixture) reconcile(t *testing.T) ctrl.Result {
	t.Helper()
	return f.reconcileNode(t, req)
}

// reconcileNode is reconcile for any node.
func (f *fixture) reconcileNode(t *testing.T, req ctrl.Request) ctrl.Result {
	t.Helper()
	res, err := f.r.Reconcile(context.Background(), req)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	for turns := 1; ; turns++ {
		at, ok := f.r.world.wakes.when(req.Name)
		if !ok || at.After(f.clock.Now()) {
			break
		}
		if turns == 3 {
			t.Fatalf("n1 is looked at again and again at %v", at)
		}
		f.r.world.wakes.clear(req.Name)
		if res, err = f.r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
	}
	f.markPods(t)
	if at, ok := f.r.world.wakes.when(req.Name); ok {
		if d := at.Sub(f.clock.Now()); res.RequeueAfter == 0 || d < res.RequeueAfter {
			res.RequeueAfter = d
		}
	}
	return res
}

// markPods gives the pods' workers their turn at the nodes the looks
// queued, as they would take them.
func (f *fixture) markPods(t *testing.T) {
	t.Helper()
	for !f.holdPods && f.r.world.podMarks.queue.Len() > 0 {
		name, _ := f.r.world.podMarks.queue.Get()
		err := f.r.world.podMarks.mark(context.Background(), name)
		f.r.world.podMarks.queue.Done(name)
		if err != nil {
			t.Fatalf("mark the pods of %s: %v", name, err)
		}
	}
}

func (f *fixture) node(t *testing.T) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := f.cached.Get(context.Background(), req.NamespacedName, n); err != nil {
		t.Fatalf("get node: %v", err)
	}
	return n
}

func (f *fixture) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func readyOf(n *corev1.Node) corev1.NodeCondition { return *health.ReadyCondition(n) }

func TestRequeuesAtTheDeadlineAndMarksThere(t *testing.T) {
	f := newFixture(t, []client.Object{readyNode(), nodeLease(t0)}, nil, nil)

	if res := f.reconcile(t); res.RequeueAfter != grace.Monitor {
		t.Fatalf("first look: RequeueAfter = %v, want the full grace %v", res.RequeueAfter, grace.Monitor)
	}
	f.clock.Step(30 * time.Second)
	if res := f.reconcile(t); res.RequeueAfter != 20*time.Second {
		t.Fatalf("30s later: RequeueAfter = %v, want 20s", res.RequeueAfter)
	}
	if got := readyOf(f.node(t)).Status; got != corev1.ConditionTrue {
		t.Fatalf("marked before the deadline: %s", got)
	}

	f.clock.Step(20 * time.Second)
	if res := f.reconcile(t); res.RequeueAfter != 0 {
		t.Fatalf("after marking: RequeueAfter = %v, want none", res.RequeueAfter)
	}
	n := f.node(t)
	ready := readyOf(n)
	if ready.Status != corev1.ConditionUnknown || ready.Reason != health.ReasonUnknown ||
		!ready.LastTransitionTime.Time.Equal(t0.Add(50*time.Second)) {
		t.Fatalf("Ready after the deadline: %+v", ready)
	}
	// A lone node that goes silent is a cluster with every zone down: it
	// gets the NoSchedule taint but no NoExecute one.
	if len(n.Spec.Taints) != 1 || !hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) {
		t.Fatalf("taints: %v", n.Spec.Taints)
	}
	evs := strings.Join(f.drainEvents(), "\n")
	for _, want := range []string{ReasonRegisteredNode, ReasonNodeNotReady} {
		if !strings.Contains(evs, want) {
			t.Errorf("no %s event in %q", want, evs)
		}
	}

	// Looking again changes nothing and emits nothing.
	f.clock.Step(time.Minute)
	f.reconcile(t)
	if evs := f.drainEvents(); len(evs) != 0 {
		t.Errorf("second look emitted %v", evs)
	}
}

func TestLiveReadCancelsAVerdictFromALaggingCache(t *testing.T) {
	// The cache still holds the first renewal; the apiserver has a later one.
	liveClient := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithObjects(readyNode(), nodeLease(t0.Add(45*time.Second))).Build()
	f := newFixture(t, []client.Object{readyNode(), nodeLease(t0)}, liveClient, nil)

	f.reconcile(t)
	f.clock.Step(50 * time.Second)
	res := f.reconcile(t)
	if got := readyOf(f.node(t)).Status; got != corev1.ConditionTrue {
		t.Fatalf("a live node was marked %s", got)
	}
	if res.RequeueAfter != grace.Monitor {
		t.Fatalf("RequeueAfter = %v, want a fresh grace period %v from the live heartbeat", res.RequeueAfter, grace.Monitor)
	}
	// When the cache catches up with what was read live, that is no new
	// heartbeat: the node is marked at the new deadline.
	if err := f.cached.Update(context.Background(), withRenew(t, f.cached, t0.Add(45*time.Second))); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(grace.Monitor)
	f.reconcile(t)
	if got := readyOf(f.node(t)).Status; got != corev1.ConditionUnknown {
		t.Fatalf("not marked at the new deadline: %s", got)
	}
}

func withRenew(t *testing.T, c client.Client, at time.Time) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: LeaseNamespace, Name: "n1"}, l); err != nil {
		t.Fatal(err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: at}
	return l
}

func TestNeverReportedNodeGetsTheStartupGrace(t *testing.T) {
	n := readyNode()
	n.Status.Conditions = nil
	f := newFixture(t, []client.Object{n}, nil, nil)
	if res := f.reconcile(t); res.RequeueAfter != grace.Startup {
		t.Fatalf("RequeueAfter = %v, want the startup grace", res.RequeueAfter)
	}
	f.clock.Step(grace.Startup)
	f.reconcile(t)
	ready := readyOf(f.node(t))
	if ready.Reason != health.ReasonNeverUpdated || !ready.LastHeartbeatTime.Equal(&n.CreationTimestamp) {
		t.Fatalf("Ready = %+v", ready)
	}
}

func TestALostWriteRaceIsRetriedShortly(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", nil)
	f := newFixture(t, []client.Object{readyNode()}, nil, &interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return conflict
		},
	})
	f.reconcile(t)
	f.clock.Step(grace.Monitor)
	f.r.world.wakes.clear(req.Name) // the deadline's wake came, and queued this reconcile
	if _, err := f.r.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("want no error, got %v", err)
	}
	// The look that found the node silent also ended the wait after start,
	// which looks at every node at once: no later than the retry.
	if at, ok := f.r.world.wakes.when(req.Name); !ok || at.Sub(f.clock.Now()) > act.ConflictRetry {
		t.Fatalf("next look at %v, %v; want within %v", at, ok, act.ConflictRetry)
	}
}

func TestADeletedNodeIsForgotten(t *testing.T) {
	f := newFixture(t, []client.Object{readyNode()}, nil, nil)
	f.reconcile(t)
	if err := f.cached.Delete(context.Background(), readyNode()); err != nil {
		t.Fatal(err)
	}
	f.drainEvents()
	f.reconcile(t)
	if f.tracker.Len() != 0 {
		t.Fatal("deleted node still tracked")
	}
	if evs := f.drainEvents(); len(evs) != 1 || !strings.Contains(evs[0], ReasonRemovingNode) {
		t.Fatalf("events = %v", evs)
	}
	// A name that never existed is no error and no event.
	f.reconcile(t)
	if evs := f.drainEvents(); len(evs) != 0 {
		t.Fatalf("events for an unknown node: %v", evs)
	}
}

func TestNodeDeletedBeforeItsMark(t *testing.T) {
	// The apiserver has neither the node nor its Lease any more; the
	// cache has not heard of it yet.
	live := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	f := newFixture(t, []client.Object{readyNode()}, live, &interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return apierrors.NewNotFound(corev1.Resource("nodes"), "n1")
		},
	})
	f.reconcile(t)
	f.clock.Step(grace.Monitor)
	if res := f.reconcile(t); res.RequeueAfter != 0 {
		t.Fatalf("RequeueAfter = %v", res.RequeueAfter)
	}
	if f.tracker.Len() != 0 {
		t.Fatal("node gone from the apiserver still tracked")
	}
}

func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

func readyPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func TestAHeartbeatCountsWhenHeardNotWhenReconciled(t *testing.T) {
	f := newFixture(t, []client.Object{readyNode(), nodeLease(t0)}, nil, nil)
	f.reconcile(t)

	// A renewal arrives at t0+40s; the work queue is long, and the node's
	// turn comes at t0+60s, past the deadline the old renewal set.
	f.clock.Step(40 * time.Second)
	renewed := nodeLease(t0.Add(40 * time.Second))
	q := newQueue(t)
	f.r.leaseHeartbeats(q).OnUpdate(nodeLease(t0), renewed)
	if q.Len() != 0 {
		t.Fatalf("a healthy node's renewal queued %d requests, want none", q.Len())
	}
	lease := &coordinationv1.Lease{}
	if err := f.cached.Get(context.Background(), client.ObjectKeyFromObject(renewed), lease); err != nil {
		t.Fatal(err)
	}
	lease.Spec = renewed.Spec
	if err := f.cached.Update(context.Background(), lease); err != nil {
		t.Fatal(err)
	}

	f.clock.Step(20 * time.Second)
	res := f.reconcile(t)
	if got := readyOf(f.node(t)).Status; got != corev1.ConditionTrue {
		t.Fatalf("marked %s although a heartbeat was heard 20s ago", got)
	}
	// The deadline runs from when the renewal was heard: t0+40s+50s.
	if res.RequeueAfter != 30*time.Second {
		t.Fatalf("RequeueAfter = %v, want 30s (the grace from the heard renewal)", res.RequeueAfter)
	}
}

// TestAStatusHeartbeatOfAHealthyNodeIsHeardNotQueued: a status report that
// only renews the heartbeat times moves a healthy node's deadline and queues
// nothing; the same report from a node not judged healthy is queued, and a
// report that changes a condition's status is queued by For.
func TestAStatusHeartbeatOfAHealthyNodeIsHeardNotQueued(t *testing.T) {
	reported := func(old *corev1.Node, at time.Time, status corev1.ConditionStatus) *corev1.Node {
		n := old.DeepCopy()
		n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(at)
		if status != n.Status.Conditions[0].Status {
			n.Status.Conditions[0].Status = status
			n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at)
		}
		return n
	}
	queued := func(t *testing.T, f *fixture, old, n *corev1.Node) int {
		t.Helper()
		q := newQueue(t)
		f.r.nodeHeartbeats(q).OnUpdate(old, n)
		return q.Len()
	}

	t.Run("healthy", func(t *testing.T) {
		f := newFixture(t, []client.Object{readyNode(), nodeLease(t0)}, nil, nil)
		f.reconcile(t)
		f.clock.Step(40 * time.Second)
		old := f.node(t)
		n := reported(old, f.clock.Now(), corev1.ConditionTrue)
		if nodeUpdateMatters(event.UpdateEvent{ObjectOld: old, ObjectNew: n}) {
			t.Error("For queues a report that only renews the heartbeat times")
		}
		if got := queued(t, f, old, n); got != 0 {
			t.Errorf("queued %d for a healthy node's heartbeat, want 0", got)
		}
		if d, _ := f.r.d.Model.Deadline("n1"); !d.Equal(f.clock.Now().Add(grace.Monitor)) {
			t.Errorf("deadline %v, want %v: the heartbeat was not heard", d, f.clock.Now().Add(grace.Monitor))
		}
	})
	t.Run("not ready", func(t *testing.T) {
		notReady := readyNode()
		notReady.Status.Conditions[0].Status = corev1.ConditionFalse
		f := newFixture(t, []client.Object{notReady, nodeLease(t0)}, nil, nil)
		f.reconcile(t)
		f.clock.Step(10 * time.Second)
		old := f.node(t)
		if got := queued(t, f, old, reported(old, f.clock.Now(), corev1.ConditionFalse)); got != 1 {
			t.Errorf("queued %d for a NotReady node's heartbeat, want 1", got)
		}
	})
	t.Run("status changes", func(t *testing.T) {
		old := readyNode()
		n := reported(old, t0, corev1.ConditionFalse)
		if !nodeUpdateMatters(event.UpdateEvent{ObjectOld: old, ObjectNew: n}) {
			t.Error("For does not queue a report that turns Ready False")
		}
		n = reported(old, t0, corev1.ConditionTrue)
		n.Status.Conditions[0].Message = "kubelet is posting ready status"
		if !nodeUpdateMatters(event.UpdateEvent{ObjectOld: old, ObjectNew: n}) {
			t.Error("For does not queue a report that changes a condition's message")
		}
		n = reported(old, t0, corev1.ConditionTrue)
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse})
		if !nodeUpdateMatters(event.UpdateEvent{ObjectOld: old, ObjectNew: n}) {
			t.Error("For does not queue a report that adds a condition")
		}
	})
}

// TestRegisteredSince: a node is announced when it was created in or after
// the second the controller started, by its whole-second creationTimestamp.
func TestRegisteredSince(t *testing.T) {
	start := t0.Add(1500 * time.Millisecond)
	for _, c := range []struct {
		created time.Time
		want    bool
	}{
		{t0, false},
		{t0.Add(time.Second), true},
		{t0.Add(2 * time.Second), true},
		{t0.Add(-time.Hour), false},
	} {
		node := &corev1.Node{}
		node.CreationTimestamp = metav1.NewTime(c.created)
		if got := registeredSince(node, start); got != c.want {
			t.Errorf("created %v, started %v: registeredSince = %v, want %v", c.created, start, got, c.want)
		}
	}
}

// TestAMarkCostsTheLeaseReadAndThePatch: with nothing changed since the
// cache saw the node, a mark reads the Lease live and patches the node's
// status, locked to the cached resourceVersion; the Node is not read live.
func TestAMarkCostsTheLeaseReadAndThePatch(t *testing.T) {
	var mu sync.Mutex
	var reads []string
	var patches []string
	base := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(readyNode(), nodeLease(t0)).Build()
	live := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			mu.Lock()
			reads = append(reads, fmt.Sprintf("%T", obj))
			mu.Unlock()
			return c.Get(ctx, key, obj, opts...)
		},
	})
	f := newFixture(t, []client.Object{readyNode(), nodeLease(t0)}, live, &interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			data, err := p.Data(obj)
			if err != nil {
				return err
			}
			patches = append(patches, string(data))
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	cachedVersion := f.node(t).ResourceVersion
	f.reconcile(t)
	f.clock.Step(grace.Monitor)
	f.reconcile(t)

	if got := readyOf(f.node(t)).Status; got != corev1.ConditionUnknown {
		t.Fatalf("not marked: %s", got)
	}
	// The seed reads the freeze kept in the cluster, once a process.
	if want := []string{"*v1.Namespace", "*v1.Lease"}; !slices.Equal(reads, want) {
		t.Fatalf("live reads %v, want %v", reads, want)
	}
	if len(patches) != 1 || !strings.Contains(patches[0], `"resourceVersion":"`+cachedVersion+`"`) {
		t.Fatalf("patches %v, want one locked to resourceVersion %s", patches, cachedVersion)
	}
}

// TestAStatusHeartbeatTheCacheMissedFailsTheMark: the kubelet posted its
// status after the cache's copy, so the patch locked to that copy fails;
// the Node read live then shows the heartbeat, and the node is not marked.
func TestAStatusHeartbeatTheCacheMissedFailsTheMark(t *testing.T) {
	fresh := readyNode()
	fresh.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0.Add(45 * time.Second))
	live := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(fresh, nodeLease(t0)).Build()
	conflicts := 0
	f := newFixture(t, []client.Object{readyNode(), nodeLease(t0)}, live, &interceptor.Funcs{
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
			conflicts++
			return apierrors.NewConflict(corev1.Resource("nodes"), obj.GetName(), errors.New("the object has been modified"))
		},
	})
	f.reconcile(t)
	f.clock.Step(grace.Monitor)
	res := f.reconcile(t)
	if got := readyOf(f.node(t)).Status; got != corev1.ConditionTrue {
		t.Fatalf("a live node was marked %s", got)
	}
	if conflicts != 1 {
		t.Fatalf("%d patches refused, want the one locked to the cached copy", conflicts)
	}
	if res.RequeueAfter != grace.Monitor {
		t.Fatalf("RequeueAfter = %v, want a fresh grace period %v from the status heartbeat", res.RequeueAfter, grace.Monitor)
	}
}

// TestTheLookAfterAMarkReadsTheMark: the look a mark queues comes before
// the watch brings the mark back. It works from the node the mark wrote,
// not from the cache's older copy: it reads nothing live again, and its
// taint patch, locked to the mark's version, is not refused.
func TestTheLookAfterAMarkReadsTheMark(t *testing.T) {
	f := newFixture(t, []client.Object{readyNode(), nodeLease(t0)}, nil, nil)
	store := f.cached.(client.WithWatch)
	held := f.node(t)
	// The cache stays at the node as it was before the mark.
	lagging := interceptor.NewClient(store, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if n, ok := obj.(*corev1.Node); ok {
				*n = *held.DeepCopy()
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			err := c.Patch(ctx, obj, p, opts...)
			if apierrors.IsConflict(err) {
				t.Errorf("taint patch refused: %v", err)
			}
			return err
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			err := c.SubResource(sub).Patch(ctx, obj, p, opts...)
			if apierrors.IsConflict(err) {
				t.Errorf("status patch refused: %v", err)
			}
			return err
		},
	})
	var reads []string
	f.r.d.APIReader = interceptor.NewClient(store, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads = append(reads, fmt.Sprintf("%T", obj))
			return c.Get(ctx, key, obj, opts...)
		},
	})
	f.r.d.Client = readback.New[corev1.Node](lagging)

	f.reconcile(t)
	f.clock.Step(grace.Monitor)
	f.reconcile(t) // the mark, and the look it queues

	n := &corev1.Node{}
	if err := store.Get(context.Background(), req.NamespacedName, n); err != nil {
		t.Fatal(err)
	}
	if got := readyOf(n).Status; got != corev1.ConditionUnknown {
		t.Fatalf("not marked: %s", got)
	}
	if !hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) {
		t.Fatalf("taints after the look that followed the mark: %v", n.Spec.Taints)
	}
	// The seed reads the freeze kept in the cluster, once a process.
	if want := []string{"*v1.Namespace", "*v1.Lease"}; !slices.Equal(reads, want) {
		t.Fatalf("live reads %v, want only the seed's and the mark's %v", reads, want)
	}
}

// A look whose write fails keeps its own time to look again: a maintenance
// hold's end is looked at when it comes, not when the failed write's
// backoff lets the node be looked at again, which may be minutes later.
func TestAFailedWriteKeepsTheLooksWake(t *testing.T) {
	node := readyNode()
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: health.ReasonUnknown,
			LastHeartbeatTime: metav1.NewTime(t0.Add(-2 * time.Minute)), LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute))},
		{Type: corev1.NodeMaintenanceInProgress, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-10 * time.Second))},
	}
	node.Spec.Taints = []corev1.Taint{
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: ptr.To(metav1.NewTime(t0.Add(-time.Minute)))},
	}
	denied := apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("denied by an admission policy"))
	f := newFixture(t, []client.Object{node, nodeLease(t0.Add(-2 * time.Minute))}, nil, &interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return denied
		},
	})
	f.r.d.MaintenanceGrace = time.Hour
	if _, err := f.r.Reconcile(context.Background(), req); err == nil {
		t.Fatal("the hold's write was denied, yet the reconcile reports no error")
	}
	// The grace runs from the maintenance's start.
	end := t0.Add(-10 * time.Second).Add(time.Hour)
	if at, ok := f.r.world.wakes.when(req.Name); !ok || at.After(end) {
		t.Errorf("next look at %v (%v); want by the maintenance grace's end, %v", at, ok, end)
	}
}
