package nodehealth

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/index"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// fleetRenewal is how often a kubelet renews its node's Lease: a quarter of
// the Lease's 40s duration.
const fleetRenewal = 10 * time.Second

// BenchmarkFleetHeartbeats is what a healthy fleet costs the controller
// while nothing happens to it: every Lease renewal, heard before the work
// queue; the deadline wakes that come due, find a newer heartbeat and set
// themselves again; and, every node monitor period, the resync's look for
// overdue nodes and the guard's tick. One op is one renewal; the fake clock
// moves on by fleetRenewal/N at each, so every node renews every 10s.
//
// A node's deadline wake, set at a heartbeat, comes 50s later, when a
// newer heartbeat has moved it on: the fleet's wakes come in a burst over
// one renewal round every 50s. The wakes' share of an op is thus its
// average only over whole 50s of fake time; -benchtime=1000000x covers two
// at 100,000 nodes, and many more at fewer.
//
// It reports, besides time and allocations per renewal, wakes/op, the
// deadline wakes that came due; queued/op, the nodes the renewals, the
// wakes and the resync sent to the work queue, none for a healthy fleet;
// B/node, the heap the controller keeps per node; and allocs/heartbeat,
// the allocations per renewal unrounded.
func BenchmarkFleetHeartbeats(b *testing.B) {
	for _, n := range []int{1000, 5000, 100000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchmarkFleet(b, n) })
	}
}

func benchmarkFleet(b *testing.B, n int) {
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())
	loadClientCaches(b)
	f := newFleet(n)
	nodes, leases := fleetObjects(n, f.start, f.every)
	f.leases = leases

	// B/node is the heap that populating the controller adds, over the
	// Nodes and Leases the benchmark holds and a reconciler that knows no
	// node: the tracker's entries and map, the guard's census with the
	// zone keys it builds and the names it was seeded with, and the wakes'
	// map and queue, with the room the queue grew to when the guard's
	// decision woke every node. The reconciler reads copies of the
	// benchmark's objects, whose strings it shares: the names and UIDs the
	// tracker keeps are not counted, though the controller keeps its own
	// once the informer has replaced the objects it first saw (some 60
	// bytes a node, with 36-character UIDs). The fake client is dropped
	// before the measure; an informer's cache, which the real controller
	// keeps too, is not counted.
	before := heapInUse()
	f.populate(ctx, b, nodes)
	f.warmUp(ctx, b)
	after := heapInUse()
	runtime.KeepAlive(nodes)

	woken := f.woken
	var queued []string
	total := 0
	beats := 0
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	mallocs := m.Mallocs
	b.ReportAllocs()
	for b.Loop() {
		queued = f.renew(ctx, queued[:0])
		total += len(queued)
		beats++
	}
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(beats), "ns/heartbeat")
	// allocs/op is a whole number; the wakes allocate on a fraction of
	// the renewals only.
	b.ReportMetric(float64(m.Mallocs-mallocs)/float64(beats), "allocs/heartbeat")
	b.ReportMetric(float64(f.woken-woken)/float64(beats), "wakes/op")
	b.ReportMetric(float64(total)/float64(beats), "queued/op")
	// Reported after the loop, which drops what was reported before it.
	b.ReportMetric(float64(after-before)/float64(n), "B/node")
}

// heapInUse returns the bytes of live heap objects. The second collection
// frees what sync.Pools kept through the first, such as the encoding
// buffers the fake client used.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// loadClientCaches has a fake client read a Node and a Lease, so that what
// the client and the scheme keep for good from their first use is on the
// heap before the fleet's is measured.
func loadClientCaches(b *testing.B) {
	nodes, leases := fleetObjects(1, t0, fleetRenewal)
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithStatusSubresource(&corev1.Node{}, &corev1.Pod{}).WithObjects(nodes[0], leases[0]).
		WithIndex(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameFunc()).Build()
	if err := c.List(context.Background(), &corev1.NodeList{}); err != nil {
		b.Fatal(err)
	}
	if _, err := getLease(context.Background(), c, nodes[0].Name); err != nil {
		b.Fatal(err)
	}
}

// fleet is a controller on a fake clock and the Leases of its nodes, which
// renew in turn.
type fleet struct {
	r     *Reconciler
	clock *clocktesting.FakeClock
	// start is when the first node is observed; every is the time between
	// two renewals of the fleet.
	start time.Time
	every time.Duration

	leases []*coordinationv1.Lease
	// beat is the fleet's last renewal; renewal i is node i%N's, at
	// start+i*every. The first N are the nodes' first observations.
	beat int

	resyncPeriod time.Duration
	nextResync   time.Time
	// woken counts the deadline wakes that came due.
	woken int
}

// newFleet returns a fleet of n nodes with a reconciler set up as Setup sets
// one up with the default options, with no policies and no apiserver
// clock, and no node known yet.
func newFleet(n int) *fleet {
	opts := options.Default()
	defaults := policy.Defaults(opts)
	f := &fleet{
		clock:        clocktesting.NewFakeClock(t0),
		start:        t0,
		every:        fleetRenewal / time.Duration(n),
		resyncPeriod: opts.NodeMonitorPeriod,
		nextResync:   t0.Add(opts.NodeMonitorPeriod),
	}
	model := safety.New(health.NewTracker(), disruption.NewGuard(disruption.Config{
		Rates:                  defaults.Disruption.Rates,
		UnhealthyZoneThreshold: defaults.Disruption.UnhealthyZoneThreshold,
		FreezeThreshold:        opts.PartitionFreezeThreshold,
		FreezeWindow:           opts.NodeMonitorGracePeriod,
		FreezeCooldown:         opts.FreezeCooldown(),
	}), defaults.Grace.Monitor)
	f.r = New(Deps{Clock: f.clock, Recorder: &events.FakeRecorder{}, Grace: defaults.Grace,
		MaintenanceGrace: defaults.MaintenanceGrace, Model: model})
	f.r.world.wakes = newWakes(f.clock, func(name string) (time.Time, bool) {
		f.woken++
		return model.Deadline(name)
	})
	return f
}

// fleetObjects returns n Ready nodes spread over three zones, created an
// hour before start, and their Leases, node i's renewed at start+i*every.
func fleetObjects(n int, start time.Time, every time.Duration) ([]*corev1.Node, []*coordinationv1.Lease) {
	nodes := make([]*corev1.Node, n)
	leases := make([]*coordinationv1.Lease, n)
	zones := []string{"region-1a", "region-1b", "region-1c"}
	posted := metav1.NewTime(start.Add(-time.Minute))
	for i := range nodes {
		name := fmt.Sprintf("node-%06d", i)
		nodes[i] = &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(start.Add(-time.Hour)),
				Labels: map[string]string{
					corev1.LabelHostname:       name,
					corev1.LabelTopologyRegion: "region-1",
					corev1.LabelTopologyZone:   zones[i%len(zones)],
				},
			},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: posted, LastTransitionTime: posted},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: posted, LastTransitionTime: posted},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: posted, LastTransitionTime: posted},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: posted, LastTransitionTime: posted},
			}},
		}
		leases[i] = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: LeaseNamespace, Name: name},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: &metav1.MicroTime{Time: start.Add(time.Duration(i) * every)},
			},
		}
	}
	return nodes, leases
}

// populate reconciles every node once, node i when its Lease renews at
// start+i*every, as a starting controller does that finds the fleet in
// its cache: the guard is seeded, the tracker observes each node, the
// guard counts it and its deadline wake is set. The reconciler reads as
// from an informer's cache that is up to date: a copy of the benchmark's
// own Node or Lease, as it now is. A fake client holding copies of the
// Nodes answers the rest, the seeding's list; it is dropped once the fleet
// is warmed up, as an informer's cache is not the controller's to count.
func (f *fleet) populate(ctx context.Context, b *testing.B, nodes []*corev1.Node) {
	objs := make([]client.Object, len(nodes))
	for i := range nodes {
		objs[i] = nodes[i].DeepCopy()
	}
	cached := func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		i, err := strconv.Atoi(strings.TrimPrefix(key.Name, "node-"))
		if err != nil || i < 0 || i >= len(nodes) || nodes[i].Name != key.Name {
			return c.Get(ctx, key, obj, opts...)
		}
		switch o := obj.(type) {
		case *corev1.Node:
			nodes[i].DeepCopyInto(o)
		case *coordinationv1.Lease:
			f.leases[i].DeepCopyInto(o)
		default:
			return c.Get(ctx, key, obj, opts...)
		}
		return nil
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithStatusSubresource(&corev1.Node{}, &corev1.Pod{}).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameFunc()).
		WithInterceptorFuncs(interceptor.Funcs{Get: cached}).Build()
	f.r.d.Client, f.r.d.APIReader = c, c
	for i := range nodes {
		if i > 0 {
			f.beat++
			f.clock.Step(f.every)
		}
		f.reconcile(ctx, b, nodes[i].Name)
		f.reconcile(ctx, b, f.passed(ctx, f.clock.Now(), nil)...)
	}
}

// warmUp renews every Lease twice, reconciling whatever that queues. The
// guard, seeded at the first reconcile, holds destructive work back until
// every node has been heard; the resync that finds them all heard queues
// every node, and those reconciles set the wakes the timed renewals run
// into. Then the client is dropped.
func (f *fleet) warmUp(ctx context.Context, b *testing.B) {
	queued := 0
	for range 2 * len(f.leases) {
		names := f.renew(ctx, nil)
		queued += len(names)
		f.reconcile(ctx, b, names...)
	}
	if queued != len(f.leases) {
		b.Fatalf("warming up queued %d nodes, want each of the %d once, when the guard decided", queued, len(f.leases))
	}
	f.r.d.Client, f.r.d.APIReader = nil, nil
}

// reconcile reconciles the named nodes.
func (f *fleet) reconcile(ctx context.Context, b *testing.B, names ...string) {
	for _, name := range names {
		if _, err := f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
			b.Fatalf("reconcile %s: %v", name, err)
		}
	}
}

// renew moves the clock to the fleet's next renewal, lets the reconciler
// hear it as the Lease informer's handler does, and runs what the time that
// passed set off. It appends to queued the nodes sent to the work queue.
func (f *fleet) renew(ctx context.Context, queued []string) []string {
	f.beat++
	f.clock.Step(f.every)
	now := f.clock.Now()
	lease := f.leases[f.beat%len(f.leases)]
	lease.Spec.RenewTime.Time = now
	if f.r.hearLease(lease) {
		queued = append(queued, lease.Name)
	}
	return f.passed(ctx, now, queued)
}

// passed does what the controller's own goroutines do once the clock has
// reached now: the resync when its period is up, then the wakes come due,
// as the wakes find and take them. It appends to queued the nodes they
// send to the work queue.
func (f *fleet) passed(ctx context.Context, now time.Time, queued []string) []string {
	if !now.Before(f.nextResync) {
		f.r.exec.Resync(ctx, port{f.r})
		f.nextResync = f.nextResync.Add(f.resyncPeriod)
	}
	if next, ok := f.r.world.wakes.next(); ok && !next.After(now) {
		expired, rest := f.r.world.wakes.due(now)
		queued = append(append(queued, expired...), rest...)
	}
	return queued
}
