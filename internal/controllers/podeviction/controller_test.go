package podeviction

import (
	"context"
	"errors"
	"testing"
	"time"

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
	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety/act"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

var (
	t0  = time.Date(2026, 7, 8, 9, 10, 11, 0, time.UTC)
	req = ctrl.Request{NamespacedName: client.ObjectKey{Name: "n1"}}
)

const timeout = 5 * time.Minute

func taintedNode(taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{Taints: taints}}
}

func unreachable(added *time.Time) corev1.Taint {
	t := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	if added != nil {
		t.TimeAdded = &metav1.Time{Time: *added}
	}
	return t
}

// newExecutor returns an executor whose model holds nothing back once
// seeded; before, it holds every eviction for a node's failure.
func newExecutor() (*act.Executor, func()) {
	m := safety.New(health.NewTracker(), disruption.NewGuard(disruption.Config{Rates: disruption.Rates{Normal: 0.1}}), time.Minute)
	seed := func() {
		m.Seed(nil, func(*corev1.Node) policy.Settings { return policy.Settings{} }, safety.Kept{}, t0, t0)
		m.Tick(t0, false)
	}
	return act.New(m, 1, nil), seed
}

func newReconciler(objs ...client.Object) (*Reconciler, client.Client, *clocktesting.FakeClock) {
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).
		WithStatusSubresource(&corev1.Pod{}).
		WithIndex(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameFunc()).Build()
	clk := clocktesting.NewFakeClock(t0)
	x, seed := newExecutor()
	seed()
	return &Reconciler{Client: c, Clock: clk, Recorder: events.NewFakeRecorder(100), Executor: x,
		PodEvictionTimeout: timeout, BlockedRetry: 5 * time.Second}, c, clk
}

func exists(t *testing.T, c client.Client, name string) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &corev1.Pod{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func run(t *testing.T, r *Reconciler) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), req)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res
}

func TestEvictsEachPodAtItsDeadline(t *testing.T) {
	r, c, clk := newReconciler(taintedNode(unreachable(&t0)),
		testobj.Pod("short", "n1", testobj.Toleration(corev1.TaintNodeUnreachable, ptr.To[int64](30))),
		testobj.Pod("plain", "n1"), testobj.Pod("forever", "n1"))
	forever := &corev1.Pod{}
	_ = c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "forever"}, forever)
	forever.Spec.Tolerations = []corev1.Toleration{testobj.Toleration(corev1.TaintNodeUnreachable, nil)}
	if err := c.Update(context.Background(), forever); err != nil {
		t.Fatal(err)
	}

	if res := run(t, r); res.RequeueAfter != 30*time.Second {
		t.Fatalf("RequeueAfter = %v, want 30s", res.RequeueAfter)
	}
	clk.Step(30 * time.Second)
	if res := run(t, r); res.RequeueAfter != timeout-30*time.Second {
		t.Fatalf("RequeueAfter = %v, want the rest of the default timeout", res.RequeueAfter)
	}
	if exists(t, c, "short") || !exists(t, c, "plain") {
		t.Fatal("only the short toleration should have run out")
	}
	clk.Step(timeout)
	if res := run(t, r); res.RequeueAfter != 0 {
		t.Fatalf("RequeueAfter = %v, want none: the last pod tolerates forever", res.RequeueAfter)
	}
	if exists(t, c, "plain") || !exists(t, c, "forever") {
		t.Fatal("plain should be gone and forever kept")
	}
}

func TestAHoldKeepsEvictionsBack(t *testing.T) {
	r, c, _ := newReconciler(taintedNode(unreachable(&t0)), testobj.Pod("p", "n1", testobj.Toleration(corev1.TaintNodeUnreachable, ptr.To[int64](0))))
	x, seed := newExecutor()
	r.Executor = x
	if res := run(t, r); res.RequeueAfter != r.BlockedRetry || !exists(t, c, "p") {
		t.Fatalf("held: RequeueAfter %v, pod exists %v", res.RequeueAfter, exists(t, c, "p"))
	}
	seed()
	run(t, r)
	if exists(t, c, "p") {
		t.Fatal("no longer held: pod kept")
	}
}

// A hold keeps the controller's own evictions back, not those of a taint
// an administrator set: out-of-service evicts the pods that do not tolerate
// it at once, and leaves the ones that do to the held countdown.
func TestAHoldLetsAnotherWritersTaintEvict(t *testing.T) {
	outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0}}
	tolerant := testobj.Pod("tolerant", "n1", testobj.Toleration(corev1.TaintNodeOutOfService, nil))
	r, c, clk := newReconciler(taintedNode(unreachable(&t0), outOfService), testobj.Pod("plain", "n1"), tolerant)
	r.Executor, _ = newExecutor()
	clk.Step(timeout)
	if res := run(t, r); res.RequeueAfter != r.BlockedRetry {
		t.Fatalf("RequeueAfter %v, want the blocked retry for the held pod", res.RequeueAfter)
	}
	if exists(t, c, "plain") {
		t.Fatal("the hold kept back an eviction by out-of-service")
	}
	if !exists(t, c, "tolerant") {
		t.Fatal("the hold let an eviction by the unreachable taint through")
	}
}

func TestATaintWithoutTimeCountsFromWhenItWasFirstSeen(t *testing.T) {
	r, c, clk := newReconciler(taintedNode(unreachable(nil)), testobj.Pod("p", "n1", testobj.Toleration(corev1.TaintNodeUnreachable, ptr.To[int64](60))))
	if res := run(t, r); res.RequeueAfter != time.Minute {
		t.Fatalf("RequeueAfter = %v", res.RequeueAfter)
	}
	clk.Step(59 * time.Second)
	if res := run(t, r); res.RequeueAfter != time.Second {
		t.Fatalf("deadline moved: RequeueAfter = %v, want 1s", res.RequeueAfter)
	}
	clk.Step(time.Second)
	run(t, r)
	if exists(t, c, "p") {
		t.Fatal("pod kept past its deadline")
	}
}

func TestNoNoExecuteTaintNoEviction(t *testing.T) {
	r, c, clk := newReconciler(taintedNode(corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}), testobj.Pod("p", "n1"))
	clk.Step(time.Hour)
	if res := run(t, r); res.RequeueAfter != 0 || !exists(t, c, "p") {
		t.Fatal("a NoSchedule taint evicted a pod")
	}
}

// A pod whose deletion keeps failing goes on a backoff of its own: its
// node's other pods still go at their deadlines, and it is tried again
// ever less often.
func TestAFailingPodDelaysNoOtherPod(t *testing.T) {
	r, _, clk := newReconciler(taintedNode(unreachable(&t0)),
		testobj.Pod("stuck", "n1", testobj.Toleration(corev1.TaintNodeUnreachable, ptr.To[int64](0))),
		testobj.Pod("later", "n1", testobj.Toleration(corev1.TaintNodeUnreachable, ptr.To[int64](20))))
	deletes := map[string]int{}
	r.Client = interceptor.NewClient(r.Client.(client.WithWatch), interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			deletes[obj.GetName()]++
			if obj.GetName() == "stuck" {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "stuck", errors.New("denied by a webhook"))
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
	var waits []time.Duration
	for clk.Now().Before(t0.Add(25 * time.Second)) {
		res := run(t, r)
		if res.RequeueAfter <= 0 || res.RequeueAfter > 20*time.Second {
			t.Fatalf("at %v: RequeueAfter = %v, want the stuck pod's retry or the next deadline", clk.Since(t0), res.RequeueAfter)
		}
		waits = append(waits, res.RequeueAfter)
		clk.Step(res.RequeueAfter)
	}
	if deletes["later"] != 1 {
		t.Errorf("the pod due at 20s was deleted %d times, want once", deletes["later"])
	}
	if n := deletes["stuck"]; n < 5 || n > 12 {
		t.Errorf("the stuck pod was tried %d times in 25s, want a backoff (waits %v)", n, waits)
	}
}

// Due is told each deadline still ahead, and nothing of a pod evicted now
// or tolerating forever.
func TestDueIsToldTheDeadlinesAhead(t *testing.T) {
	r, _, _ := newReconciler(taintedNode(unreachable(&t0)),
		testobj.Pod("short", "n1", testobj.Toleration(corev1.TaintNodeUnreachable, ptr.To[int64](30))),
		testobj.Pod("plain", "n1"), testobj.Pod("now", "n1", testobj.Toleration(corev1.TaintNodeUnreachable, ptr.To[int64](0))))
	got := map[string]time.Time{}
	r.Due = func(p *corev1.Pod, at time.Time) { got[p.Name] = at }
	run(t, r)
	want := map[string]time.Time{"short": t0.Add(30 * time.Second), "plain": t0.Add(timeout)}
	if len(got) != len(want) || !got["short"].Equal(want["short"]) || !got["plain"].Equal(want["plain"]) {
		t.Fatalf("Due told %v, want %v", got, want)
	}
}

// unlistedPods answers for no node until listed is set.
type unlistedPods struct {
	podscope.Cluster
	listed bool
}

func (p *unlistedPods) On(ctx context.Context, node string) ([]corev1.Pod, error) {
	if !p.listed {
		return nil, podscope.ErrNotListed
	}
	return p.Cluster.On(ctx, node)
}

func TestPodsNotListedYetAreEvictedOnceTheyAre(t *testing.T) {
	added := t0.Add(-time.Hour)
	r, c, _ := newReconciler(taintedNode(unreachable(&added)), testobj.Pod("p", "n1"))
	pods := &unlistedPods{Cluster: podscope.Cluster{Reader: c}}
	r.Pods = pods
	// Not an error: the listing queues the node.
	if res := run(t, r); res.RequeueAfter != 0 {
		t.Fatalf("RequeueAfter = %v before the pods are listed", res.RequeueAfter)
	}
	if !exists(t, c, "p") {
		t.Fatal("evicted a pod its controller had not listed")
	}
	pods.listed = true
	run(t, r)
	if exists(t, c, "p") {
		t.Fatal("pod past its deadline kept once listed")
	}
}

// TestOnlyTaintedNodesAreLookedAtWhenFirstSeen: a starting controller sees
// every Node as created; it queues those with a NoExecute taint, whose pods
// may be due, and none of the rest. A dry run, whose taints are on no Node,
// queues them all.
func TestOnlyTaintedNodesAreLookedAtWhenFirstSeen(t *testing.T) {
	dry := &Reconciler{Nudges: make(chan event.TypedGenericEvent[*corev1.Node])}
	for _, tc := range []struct {
		node *corev1.Node
		want bool
	}{
		{testobj.Node("healthy"), false},
		{testobj.Node("cordoned", testobj.Taints(corev1.TaintEffectNoSchedule, corev1.TaintNodeUnschedulable)), false},
		{testobj.Node("unreachable", testobj.Taints(corev1.TaintEffectNoExecute, corev1.TaintNodeUnreachable)), true},
		{testobj.Node("other", testobj.Taints(corev1.TaintEffectNoSchedule, "a"), testobj.Taints(corev1.TaintEffectNoExecute, "b")), true},
	} {
		e := event.CreateEvent{Object: tc.node}
		if got := (&Reconciler{}).firstSeen(e); got != tc.want {
			t.Errorf("node %s first seen with taints %v: queued %v, want %v", tc.node.Name, tc.node.Spec.Taints, got, tc.want)
		}
		if !dry.firstSeen(e) {
			t.Errorf("node %s first seen by a dry run: not queued", tc.node.Name)
		}
	}
}
