package nodehealth

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
)

func TestUnreachableNodeGetsNoExecuteAndItsPodsGoNotReady(t *testing.T) {
	f := newFixture(t, []client.Object{readyNode(), readyPod("p1", "n1"), readyPod("other", "n2")}, nil, nil)
	f.reconcile(t)
	f.clock.Step(grace.Monitor)
	f.reconcile(t)
	for name, want := range map[string]corev1.ConditionStatus{"p1": corev1.ConditionFalse, "other": corev1.ConditionTrue} {
		p := &corev1.Pod{}
		if err := f.cached.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if got := p.Status.Conditions[0].Status; got != want {
			t.Errorf("pod %s Ready = %s, want %s", name, got, want)
		}
	}
	// The kubelet comes back: the NoExecute taint goes at once.
	n := f.node(t)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.NewTime(f.clock.Now())}}
	if err := f.cached.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	if n := f.node(t); len(n.Spec.Taints) != 0 {
		t.Fatalf("taints after recovery: %v", n.Spec.Taints)
	}
}

func TestKubeletNotReadySwapsTheNoExecuteTaintAtOnce(t *testing.T) {
	n := readyNode()
	added := metav1.NewTime(t0.Add(-time.Minute))
	n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}}
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	f := newFixture(t, []client.Object{n}, nil, nil)
	// Use up the zone's token: a swap must not need one.
	f.guard.Update("x", disruption.NodeStatus{Ready: true}, t0)
	f.guard.TakeTaint("x", t0)
	f.reconcile(t)
	got := f.node(t)
	if !hasTaint(got, corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute) || hasTaint(got, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) {
		t.Fatalf("taints: %v", got.Spec.Taints)
	}
	// One failure, one countdown: the swap keeps the first taint's time.
	for _, taint := range got.Spec.Taints {
		if taint.Key == corev1.TaintNodeNotReady && taint.Effect == corev1.TaintEffectNoExecute &&
			(taint.TimeAdded == nil || !taint.TimeAdded.Equal(&added)) {
			t.Fatalf("swapped taint added %v, want %v", taint.TimeAdded, added)
		}
	}
}

func TestNoExecuteTaintsWaitForTheZoneRate(t *testing.T) {
	n2 := readyNode()
	n2.Name, n2.UID = "n2", "uid-2"
	f := newFixture(t, []client.Object{readyNode(), n2, healthyNode("n3")}, nil, nil)
	r2 := ctrl.Request{NamespacedName: client.ObjectKey{Name: "n2"}}
	r3 := ctrl.Request{NamespacedName: client.ObjectKey{Name: "n3"}}
	for _, rq := range []ctrl.Request{req, r2, r3} {
		if _, err := f.r.Reconcile(context.Background(), rq); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Step(grace.Monitor)
	f.reconcile(t)
	f.reconcileNode(t, r2)
	if at, ok := f.r.world.wakes.when("n2"); !ok || at.Sub(f.clock.Now()) != 10*time.Second {
		t.Fatalf("second node: next look at %v, %v; want in 10s at 0.1 nodes/s", at, ok)
	}
	if hasTaint(nodeNamed(t, f, "n2"), corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) {
		t.Fatal("second node tainted without a token")
	}
	f.clock.Step(10 * time.Second)
	if _, err := f.r.Reconcile(context.Background(), r2); err != nil {
		t.Fatal(err)
	}
	if !hasTaint(nodeNamed(t, f, "n2"), corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) {
		t.Fatal("second node not tainted after 10s")
	}
}

// healthyNode is a node whose heartbeat the test keeps fresh by hand.
func healthyNode(name string) *corev1.Node {
	n := readyNode()
	n.Name, n.UID = name, types.UID("uid-"+name)
	return n
}

func nodeNamed(t *testing.T, f *fixture, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := f.cached.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// unlistedPods answers for no node until listed is set, and records the
// nodes expected.
type unlistedPods struct {
	podscope.Cluster
	listed   bool
	expected []string
}

func (p *unlistedPods) On(ctx context.Context, node string) ([]corev1.Pod, error) {
	if !p.listed {
		return nil, podscope.ErrNotListed
	}
	return p.Cluster.On(ctx, node)
}

func (p *unlistedPods) Expect(node string) { p.expected = append(p.expected, node) }

func TestPodsNotListedYetWaitAndTheRestOfTheLookGoesOn(t *testing.T) {
	f := newFixture(t, []client.Object{readyNode(), readyPod("p1", "n1")}, nil, nil)
	pods := &unlistedPods{Cluster: podscope.Cluster{Reader: f.cached}}
	f.r.d.Pods = pods
	f.reconcile(t)
	if len(pods.expected) != 0 {
		t.Fatalf("pods expected before the deadline: %v", pods.expected)
	}
	f.clock.Step(grace.Monitor)
	// The look does not fail: the node is marked and tainted, and its pods
	// wait for their list.
	f.reconcile(t)
	if want := []string{"n1"}; !slices.Equal(pods.expected, want) {
		t.Fatalf("expected %v, want %v: the pods are asked for as the node is marked", pods.expected, want)
	}
	if n := f.node(t); !hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) {
		t.Fatalf("taints: %v", n.Spec.Taints)
	}
	podReadyIs := func(want corev1.ConditionStatus) {
		t.Helper()
		p := &corev1.Pod{}
		if err := f.cached.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "p1"}, p); err != nil {
			t.Fatal(err)
		}
		if got := p.Status.Conditions[0].Status; got != want {
			t.Fatalf("pod Ready = %s, want %s", got, want)
		}
	}
	podReadyIs(corev1.ConditionTrue)
	// Listed: the look the listing queues marks them.
	pods.listed = true
	f.reconcile(t)
	podReadyIs(corev1.ConditionFalse)
}
