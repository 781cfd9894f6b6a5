package reporter

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// t0 is when every test starts, on the fake clock.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const testNode = "node-a"

var (
	nodesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	leasesGVR = coordinationv1.SchemeGroupVersion.WithResource("leases")
)

// harness runs one Reporter against a fake clientset and a fake clock.
type harness struct {
	t        *testing.T
	clk      *clocktesting.FakeClock
	cs       *fake.Clientset
	r        *Reporter
	failures atomic.Int32
	uids     atomic.Int32
	cancel   context.CancelFunc
	done     chan error

	logMu sync.Mutex
	logs  []string
}

// newHarness builds a reporter of testNode with cfg, over a clientset
// holding objs. The reporter has no jitter, so that its schedule is exact.
func newHarness(t *testing.T, cfg Config, objs ...k8sruntime.Object) *harness {
	t.Helper()
	h := &harness{t: t, clk: clocktesting.NewFakeClock(t0), cs: fake.NewClientset(objs...)}
	// The fake clientset assigns no UIDs; the owner reference of the Lease
	// needs one.
	h.cs.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		if node, ok := a.(k8stesting.CreateAction).GetObject().(*corev1.Node); ok && node.UID == "" {
			node.UID = types.UID(fmt.Sprintf("uid-%d", h.uids.Add(1)))
		}
		return false, nil, nil
	})
	if cfg.NodeName == "" {
		cfg.NodeName = testNode
	}
	cfg.OnRepeatedFailure = func() { h.failures.Add(1) }
	r, err := New(h.cs, h.clk, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.random = func() float64 { return 0 }
	h.r = r
	return h
}

// start runs the reporter until the test ends, keeping what it logs.
func (h *harness) start() {
	log := funcr.New(func(_, args string) {
		h.logMu.Lock()
		defer h.logMu.Unlock()
		h.logs = append(h.logs, args)
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), log))
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.r.Run(ctx) }()
	h.t.Cleanup(h.stop)
}

// stop ends Run and checks that it returns nil promptly.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Errorf("Run did not return after its context ended")
	}
}

// settle waits until exactly n goroutines wait on the fake clock: the
// reporter's loops are then idle until the clock moves.
func (h *harness) settle(n int) {
	h.t.Helper()
	settle(h.t, h.clk, n)
}

// settle waits until exactly n goroutines wait on clk.
func settle(t *testing.T, clk *clocktesting.FakeClock, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for clk.Waiters() != n {
		select {
		case <-timeout:
			t.Fatalf("clock has %d waiters, want %d", clk.Waiters(), n)
		default:
			runtime.Gosched()
		}
	}
}

// step moves the clock by d and waits until n goroutines wait on it again.
func (h *harness) step(d time.Duration, n int) {
	h.t.Helper()
	h.clk.Step(d)
	h.settle(n)
}

// logged counts the lines logged so far that contain every one of parts.
func (h *harness) logged(parts ...string) int {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	n := 0
	for _, line := range h.logs {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			n++
		}
	}
	return n
}

// call is an API call the reporter made, in short form.
type call struct {
	verb, resource, subresource string
	// rv is the resourceVersion of a GET.
	rv string
}

// calls returns the calls made since the last reset, and resets.
func (h *harness) calls() []call {
	var out []call
	for _, a := range h.cs.Actions() {
		c := call{verb: a.GetVerb(), resource: a.GetResource().Resource, subresource: a.GetSubresource()}
		if g, ok := a.(k8stesting.GetActionImpl); ok {
			c.rv = g.GetOptions.ResourceVersion
		}
		out = append(out, c)
	}
	h.cs.ClearActions()
	return out
}

// count counts the calls with verb on resource, subresource included.
func count(calls []call, verb, resource string) int {
	n := 0
	for _, c := range calls {
		if c.verb == verb && c.resource == resource {
			n++
		}
	}
	return n
}

// writes keeps the calls that write.
func writes(calls []call) []call {
	return slices.DeleteFunc(slices.Clone(calls), func(c call) bool {
		return c.verb == "get" || c.verb == "list" || c.verb == "watch"
	})
}

func (h *harness) node() *corev1.Node {
	h.t.Helper()
	obj, err := h.cs.Tracker().Get(nodesGVR, "", testNode)
	if err != nil {
		h.t.Fatalf("get node: %v", err)
	}
	return obj.(*corev1.Node)
}

func (h *harness) lease() *coordinationv1.Lease {
	h.t.Helper()
	obj, err := h.cs.Tracker().Get(leasesGVR, corev1.NamespaceNodeLease, testNode)
	if err != nil {
		h.t.Fatalf("get lease: %v", err)
	}
	return obj.(*coordinationv1.Lease)
}

// failN makes the next n calls of verb on resource fail with err.
func (h *harness) failN(verb, resource string, n int, err error) {
	var left atomic.Int32
	left.Store(int32(n))
	h.cs.PrependReactor(verb, resource, func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		if left.Add(-1) >= 0 {
			return true, nil, err
		}
		return false, nil, nil
	})
}

// existingNode is a Node registered earlier, whose status the controller
// has since marked Unknown.
func existingNode() *corev1.Node {
	old := metav1.NewTime(t0.Add(-time.Hour))
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "uid-existing"},
		Status: corev1.NodeStatus{
			Capacity: DefaultCapacity(),
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
				LastHeartbeatTime: old, LastTransitionTime: old,
			}},
		},
	}
}

func condition(node *corev1.Node, t corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// ownedLease is the Lease of existingNode, renewed long ago.
func ownedLease() *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: testNode, Namespace: corev1.NamespaceNodeLease,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: testNode, UID: "uid-existing"}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(testNode),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            &metav1.MicroTime{Time: t0.Add(-time.Hour)},
		},
	}
}
